"""The GPTCache reference drives the real GPTCache 0.1.44: its data manager holds the entry, its
similarity evaluation and threshold decide, and its decisions on hand-made pairs equal its rule
computed by hand from the cosine (tests/harness_doubles.py). Loads all-MiniLM-L6-v2 (once per module)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness_doubles import gptcache_confidence, gptcache_hits, gptcache_rank, pair
from pipeline.app.cli import main
from pipeline.harness import evaluate
from pipeline.references.gptcache_store import GPTCacheStore
from pipeline.harness.scoring import Chosen, run_chosen
from pipeline.harness.stateful import Request

pytestmark = [pytest.mark.models, pytest.mark.slow]

PAIRS = [
    ("Solve x + 2 = 8", "Solve a + 2 = 8"),                                    # MODELS.md: cosine 0.856
    ("How do I sort a list in Python?", "How do I sort a list in JavaScript?"),  # about 0.66
    ("What is the capital of France?", "What's the capital city of France?"),
    ("Book a flight from NYC to Florida", "Book a flight from Florida to NYC"),
    ("What is 25% of 80?", "What is 20% of 80?"),
    ("What is the capital of France?", "Write a haiku about autumn rain"),
]
THRESHOLDS = (0.5, 0.8, 0.85, 0.95)


@pytest.fixture(scope="module")
def minilm() -> GPTCacheStore:
    """GPTCache at 0.80 with MiniLM (the real model, each text embedded once in this module)."""
    model = GPTCacheStore("minilm_l6", 0.80, embeddings="model")
    vectors: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        for t in texts:
            if t not in vectors:
                vectors[t] = model.embed(t)
        return np.stack([vectors[t] for t in texts])

    store = GPTCacheStore("minilm_l6", 0.80, embeddings="model", encoder=encode)
    store.encode = encode
    store.reset()
    return store


def at(threshold: float, base: GPTCacheStore) -> GPTCacheStore:
    """Another GPTCache at `threshold`, sharing the model (and the vectors) of `base`."""
    return GPTCacheStore("minilm_l6", threshold, embeddings="model", encoder=base.encode)


def cosine(store: GPTCacheStore, a: str, b: str) -> float:
    va, vb = store.embed(a), store.embed(b)
    return float(np.dot(va, vb) / (np.linalg.norm(va) * np.linalg.norm(vb)))


def test_the_adapter_drives_gptcache_and_its_data_manager_holds_the_entry(minilm):
    from gptcache.core import Cache
    from gptcache.manager.data_manager import SSDataManager
    from gptcache.processor.pre import last_content
    from gptcache.similarity_evaluation.distance import SearchDistanceEvaluation

    cache = minilm.cache
    assert isinstance(cache, Cache) and isinstance(cache.similarity_evaluation, SearchDistanceEvaluation)
    assert cache.pre_embedding_func is last_content                  # GPTCache's own default
    assert cache.config.similarity_threshold == 0.80
    minilm.reset()
    a = Request("Solve x + 2 = 8", "You tutor Alice.", [{"role": "user", "content": "Hi"}])
    minilm.store(a, "answer-for-A")
    dm = minilm.data_manager
    assert isinstance(dm, SSDataManager) and dm.s.count() == 1 and dm.v.count() == 1
    (hit,) = dm.search(minilm.embed("Solve x + 2 = 8"))
    entry = dm.get_scalar_data(hit)
    # GPTCache keeps the last message's content only: the system prompt and turns are gone.
    assert entry.question == "Solve x + 2 = 8" and entry.answers[0].answer == "answer-for-A"
    assert minilm.lookup(Request("Solve x + 2 = 8")) == "answer-for-A"
    minilm.reset()
    assert minilm.data_manager.s.count() == 0 and minilm.data_manager.v.count() == 0
    assert minilm.lookup(Request("Solve x + 2 = 8")) is None


def test_reset_by_gptcaches_eviction_decides_as_a_fresh_data_manager(minilm):
    """reset() empties the store through GPTCache's EvictionManager (fast); renew() builds a fresh
    data manager (slow). Over more resets than GPTCache's index-rebuild period, both serve the same
    responses with the same confidences, and the stores hold exactly the one live entry."""
    def run(forget) -> list:
        out = []
        for _ in range(2):                     # 12 resets: past REBUILD_CONDITION (5) twice
            for a, b in PAIRS:
                forget()
                minilm.store(Request(a), f"answer-for-{a}")
                dm = minilm.data_manager
                assert dm.s.count() == 1 and dm.v.count() == 1
                out.append((minilm.lookup(Request(b)), minilm.last_confidence))
        return out

    fast, fresh = run(minilm.reset), run(minilm.renew)
    assert fast == fresh
    assert sum(served is not None for served, _ in fast) >= 4   # the pairs do hit at 0.80 (two are known false hits)


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_decisions_match_gptcaches_rule_computed_by_hand(minilm, threshold):
    store = minilm if threshold == 0.80 else at(threshold, minilm)
    for a, b in PAIRS:
        cos = cosine(minilm, a, b)
        # keep clear of the boundary, where float32 rounding could go either way
        assert abs(gptcache_rank(cos) - 4 * threshold) > 1e-4, (a, b, cos)
        store.reset()
        store.store(Request(a), "answer-for-A")
        served = store.lookup(Request(b))
        assert served in (None, "answer-for-A")
        assert (served is not None) == gptcache_hits(cos, threshold), (a, b, cos, threshold)
        assert store.last_confidence == pytest.approx(gptcache_confidence(cos), abs=1e-5)


def test_the_known_false_hits_of_its_default(minilm):
    for a, b in PAIRS[:2]:   # a renamed variable and another programming language: both served at 0.80
        minilm.reset()
        minilm.store(Request(a), "answer-for-A")
        assert minilm.lookup(Request(b)) == "answer-for-A"


def test_gptcaches_evaluation_decides_not_the_adapter(minilm, monkeypatch):
    from gptcache.similarity_evaluation.distance import SearchDistanceEvaluation

    minilm.reset()
    minilm.store(Request("What is the capital of France?"), "answer-for-A")
    monkeypatch.setattr(SearchDistanceEvaluation, "evaluation", lambda self, src, cached, **kw: 0.0)
    assert minilm.lookup(Request("What is the capital of France?")) is None     # the same text, rank 0
    assert minilm.last_confidence == 0.0
    monkeypatch.setattr(SearchDistanceEvaluation, "evaluation", lambda self, src, cached, **kw: 4.0)
    assert minilm.lookup(Request("Write a haiku about autumn rain")) == "answer-for-A"


def test_it_serves_one_users_answer_to_another(minilm):
    # The leak of last-message keys: another system prompt and other earlier turns, the same answer.
    minilm.reset()
    minilm.store(Request("What is my account balance?", "You serve Alice (account 1111).",
                         [{"role": "user", "content": "I am Alice."}]), "answer-for-Alice")
    assert minilm.lookup(Request("What is my account balance?", "You serve Bob (account 2222).")) == "answer-for-Alice"
    assert minilm.last_confidence == pytest.approx(1.0, abs=1e-5)


def test_shared_protocol_with_real_gptcache_counts_a_wrong_entry_hit_as_false(minilm):
    rows = [pair(1, "HIT", "What is the capital of France?", "What's the capital city of France?"),
            # B is verbatim row 1's A: shared, GPTCache serves row 1's answer (distance 0), not row 2's
            pair(2, "HIT", "Name the capital city of France, please.", "What is the capital of France?"),
            pair(3, "MISS", "Solve x + 2 = 8", "Solve a + 2 = 8")]
    d = run_chosen(Chosen("gptcache", "shared", minilm), rows, on_error="raise")
    p = d["protocol"]
    assert p["entries_stored"] == 3 and minilm.data_manager.s.count() == 3
    assert p["wrong_entry_hits"]["ids"] == ["cb-math-0002"] and p["wrong_entry_hits"]["on_hit_rows"] == 1
    assert d["confusion"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 0}
    d = run_chosen(Chosen("gptcache", "isolated", minilm), rows, on_error="raise")
    row2 = gptcache_hits(cosine(minilm, rows[1].query_a, rows[1].query_b), 0.80)
    assert d["protocol"]["wrong_entry_hits"]["total"] == 0
    assert d["confusion"]["tp"] == 1 + row2 and d["confusion"]["fp"] == 1


def test_cli_reference_gate_sweep_and_cache_key(tmp_path, monkeypatch, capsys):
    # Hand-made rows (two known false hits) plus committed rows with turns, system prompts and tools.
    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(tmp_path / "cache"))
    from pipeline.core.paths import PROJECT_ROOT

    committed = [json.loads(line) for line in
                 (PROJECT_ROOT / "outputs" / "cachebench.jsonl").read_text(encoding="utf-8").splitlines()]
    picked = [next(r for r in committed if r[k]) for k in ("context_a", "system_prompt_a", "tools_a")]
    rows = [pair(i + 1, g, a, b).to_dict() for i, (g, (a, b)) in
            enumerate(zip(("MISS", "MISS", "HIT", "MISS"), PAIRS[:3] + PAIRS[5:]))] + picked
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    js = tmp_path / "r.json"
    args = ["eval", "--bench", str(bench), "--json", str(js), "--out", str(tmp_path / "r.md")]
    code = main([*args, "--reference", "gptcache-minilm@0.80", "--max-fhr", "0.1"])
    err = capsys.readouterr().err
    data = json.loads(js.read_text(encoding="utf-8"))
    fhr = data["metrics"]["fhr"]
    assert code == 1 and fhr["value"] > 0.1
    assert (f"error: gptcache-minilm@0.80: FHR {fhr['value']:.3f} ({fhr['k']}/{fhr['n']}) exceeds --max-fhr 0.1. "
            "Make the cache serve fewer false hits, or raise the limit\n") in err
    assert data["protocol"]["name"] == "isolated" and len(data["decisions"]) == len(rows)
    assert all(d["confidence"] is not None for d in data["decisions"])
    # The sweep reference: the same decisions at 0.80, and its 0.85 point is what GPTCache at 0.85 decides.
    assert main([*args, "--reference", "gptcache-minilm-sweep"]) == 0
    sweep = json.loads(js.read_text(encoding="utf-8"))
    assert [d["decision"] for d in sweep["decisions"]] == [d["decision"] for d in data["decisions"]]
    points = {p["threshold"]: p for p in sweep["threshold_sweep"]["points"]}
    assert sorted(points) == [round(0.5 + i / 100, 2) for i in range(50)]
    assert (points[0.8]["tp"], points[0.8]["fp"]) == (data["confusion"]["tp"], data["confusion"]["fp"])
    assert main([*args, "--reference", "gptcache-minilm@0.85"]) == 0
    at85 = json.loads(js.read_text(encoding="utf-8"))
    assert (points[0.85]["tp"], points[0.85]["fp"]) == (at85["confusion"]["tp"], at85["confusion"]["fp"])
    assert "## Threshold sweep" not in (tmp_path / "r.md").read_text(encoding="utf-8")
    # a repeat is served from the result cache; the shared protocol is another key
    capsys.readouterr()
    assert main([*args, "--reference", "gptcache-minilm@0.85"]) == 0
    assert "served from the evaluation-result cache" in capsys.readouterr().err
    assert main([*args, "--reference", "gptcache-minilm@0.85", "--protocol", "shared"]) == 0
    assert "served from the evaluation-result cache" not in capsys.readouterr().err


def test_prefetch_reads_every_vector_in_one_call_and_changes_none(monkeypatch):
    # What the reports and the scorer call before a run (pipeline/harness/scoring.py): the vectors
    # GPTCache's embedding_func then returns are read from memory, and they are the ones a store
    # that embeds each text when GPTCache asks for it returns.
    from pipeline.services import embed_cache

    texts = sorted({t for p in PAIRS for t in p})
    plain = GPTCacheStore("minilm_l6", 0.80)
    expected = {t: plain.embed(t) for t in texts}
    store = GPTCacheStore("minilm_l6", 0.80)
    calls = []
    real = embed_cache.embed_texts
    monkeypatch.setattr(embed_cache, "embed_texts", lambda *a, **k: calls.append(list(a[1])) or real(*a, **k))
    store.prefetch(texts + texts[:2])
    assert calls == [["dimension"], texts]   # GPTCache's set-up probe, then every text once
    for t in texts:
        assert np.array_equal(store.embed(t), expected[t])
    assert len(calls) == 2
