"""A score nobody can fake (items 1 and 2): a cache sees requests only, a user's cache decides in a
worker process (bubblewrap where it works) that cannot reach the scorer, the labels, outputs/ or the
caches, a hang is a timeout in the error tier, and cache entries are signed with a key the cache
never sees."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.app.cli import main
from pipeline.harness import Pair, Request, Verdict, evaluate, load_bench
from pipeline.harness.interface import REQUEST_FIELDS, ROW_FIELDS

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "data" / "bench.jsonl"
BWRAP = __import__("pipeline.harness.jail", fromlist=["probe"]).probe(__import__("sys").executable) is None

CHEAT = "from pipeline.harness import Verdict\ncache = lambda row: Verdict(is_hit=row.binary_label == 'HIT')\n"


def module(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "user" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def score(tmp_path: Path, capsys, mod: Path, *argv: str) -> tuple[int, dict | None, str]:
    out = tmp_path / "r.json"
    code = main(["eval", "--bench", str(BENCH), "--cache-module", str(mod), "--json", str(out),
                 "--out", str(tmp_path / "r.md"), "--no-cache", *argv])
    err = capsys.readouterr().err
    return code, (json.loads(out.read_text()) if out.exists() else None), err


# ---- item 1: requests only

def test_a_pair_holds_the_requests_and_nothing_else():
    row = load_bench(BENCH)[0]
    pair = Pair.of(row, "k-1")
    assert pair.a == Request(row.query_a, row.system_prompt_a, row.context_a, row.tools_a)
    assert (pair.query_b, pair["tools_a"], pair.key) == (row.query_b, row.tools_a, "k-1")
    for name in set(ROW_FIELDS) - set(REQUEST_FIELDS):
        with pytest.raises(AttributeError, match="a cache sees requests only"):
            getattr(pair, name)
        with pytest.raises(KeyError, match="a cache sees requests only"):
            pair[name]
    assert not hasattr(pair, "extra") and set(pair.keys()) == set(REQUEST_FIELDS)


def test_the_binary_label_cheat_scores_as_errors_in_process():
    # before: F1 1.000 and FHR 0.000 (the Row carried binary_label)
    rows = load_bench(BENCH)
    d = evaluate(lambda row: Verdict(is_hit=row.binary_label == "HIT"), rows).to_dict()
    assert d["errors"]["count"] == len(rows) and d["confusion"]["tp"] == 0 and d["metrics"]["f1"]["value"] == 0.0


def test_the_binary_label_cheat_fails_the_gate_through_the_cli(tmp_path, capsys):
    code, data, err = score(tmp_path, capsys, module(tmp_path, "cheat", CHEAT), "--max-fhr", "0.01")
    assert data["errors"]["count"] == 10 and data["metrics"]["f1"]["value"] == 0.0
    assert "Pair has no attribute 'binary_label'" in data["errors"]["messages"][0]
    # every row an error, scored MISS: FHR 0, which must not pass a CI gate
    assert code == 1 and data["isolation"] in ("bubblewrap", "process")
    assert "10 of 10 decisions were errors (scored MISS), so its FHR 0.000" in err


# ---- item 2: apart from the scorer

PATCHER = """from pipeline.harness import metrics, Verdict
import pipeline.harness.evaluation as ev
real = metrics.build_report
def fake(*a, **k):
    d = real(*a, **k)
    d["metrics"]["f1"]["value"] = 1.0
    return d
metrics.build_report = ev.build_report = fake
def cache(pair):
    return Verdict(is_hit=False)
"""


def test_a_cache_that_monkeypatches_the_harness_cannot_change_the_report(tmp_path, capsys):
    code, data, _ = score(tmp_path, capsys, module(tmp_path, "patcher", PATCHER))
    assert code == 0 and data["metrics"]["f1"]["value"] == 0.0   # always MISS: F1 0, whatever it patched
    import pipeline.harness.metrics as metrics

    assert metrics.build_report.__module__ == "pipeline.harness.metrics"


@pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")
def test_a_cache_cannot_write_outputs_or_the_eval_cache_nor_read_the_labels(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.delenv("CACHEEVAL_EVAL_CACHE_DIR", raising=False)   # <cache root>/eval
    (tmp_path / "root" / "eval").mkdir(parents=True)
    targets = [ROOT / "outputs" / "planted.txt", tmp_path / "root" / "eval" / "planted.json",
               tmp_path / "root" / "secret.key"]
    probe = f"""import os
from pipeline.harness import Verdict
seen = []
for path in {[str(p) for p in targets]!r}:
    try:
        with open(path, "a") as fh:
            fh.write("x")
        seen.append("wrote " + path)
    except OSError as exc:
        seen.append(type(exc).__name__)
for path in ({str(BENCH)!r}, {str(ROOT / 'outputs' / 'splits' / 'test_labels.jsonl')!r}):
    try:
        seen.append("read %d bytes" % len(open(path).read()))
    except OSError as exc:
        seen.append(type(exc).__name__)
def cache(pair):
    raise RuntimeError(" | ".join(seen))
"""
    code, data, _ = score(tmp_path, capsys, module(tmp_path, "writer", probe))
    assert code == 0 and data["isolation"] == "bubblewrap"
    text = data["errors"]["messages"][0]
    assert "wrote" not in text and "read " not in text, text
    assert not any(p.exists() and p.name != "secret.key" for p in targets)
    assert len((tmp_path / "root" / "secret.key").read_bytes()) == 32   # the scorer's key, untouched


def test_a_hanging_cache_times_out_in_the_error_tier(tmp_path, capsys):
    hang = module(tmp_path, "hang", "import time\ndef cache(pair):\n"
                                    "    if pair.query_a.startswith('Solve'):\n        time.sleep(60)\n"
                                    "    return pair.query_a == pair.query_b\n")
    code, data, _ = score(tmp_path, capsys, hang, "--timeout", "1")
    assert code == 0 and data["errors"]["count"] == 2 and data["tiers"]["error"] == 2
    assert "timed out after 1 s" in data["errors"]["messages"][0]
    assert data["bench"]["n"] == 10 and data["confusion"]["tn"] >= 1    # the other rows were decided


def test_a_crashing_worker_is_an_error_and_the_rest_go_on(tmp_path, capsys):
    crash = module(tmp_path, "crash", "import os\ndef cache(pair):\n    if 'Python' in pair.query_a:\n"
                                      "        os._exit(3)\n    return False\n")
    code, data, _ = score(tmp_path, capsys, crash)
    assert code == 0 and data["errors"]["count"] == 1 and "exited (code 3)" in data["errors"]["messages"][0]


def test_in_process_keeps_the_old_way_for_debugging(tmp_path, capsys):
    code, data, _ = score(tmp_path, capsys, module(tmp_path, "fine", "def cache(pair):\n    return False\n"),
                          "--in-process")
    assert code == 0 and data["isolation"] == "in-process"


# ---- signed cache entries

def test_a_re_signed_eval_cache_entry_is_not_served(tmp_path, capsys, monkeypatch):
    import hashlib

    from pipeline.core.hashing import canonical_json

    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.delenv("CACHEEVAL_EVAL_CACHE_DIR", raising=False)   # <cache root>/eval
    args = ["eval", "--bench", str(BENCH), "--baseline", "always_hit", "--json", str(tmp_path / "r.json"),
            "--out", str(tmp_path / "r.md")]
    assert main(args) == 0
    key = tmp_path / "root" / "secret.key"
    assert key.is_file() and oct(key.stat().st_mode & 0o777) == "0o600"
    entry = next((tmp_path / "root" / "eval").rglob("*.json"))
    data = json.loads(entry.read_text())
    data["report"]["metrics"]["f1"]["value"] = 0.999
    # re-signed as a forger would: a checksum recomputed without the key
    data["signature"] = hashlib.sha256(canonical_json({"identity": data["identity"], "report": data["report"]})
                                       .encode()).hexdigest()
    entry.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "0.999" not in out and "served from" not in err
    assert err.count("\n") == 1 and "is not signed with this installation's key" in err


def test_a_re_signed_embedding_entry_is_a_miss(tmp_path, capsys):
    np = pytest.importorskip("numpy")
    from pipeline.services.embed_cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    vec = np.ones(4, dtype=np.float32) / 2
    cache.put_many([("k1", vec)])
    assert list(cache.get_many(["k1"], unit=True)) == ["k1"]
    forged = (np.array([1, 0, 0, 0], dtype=np.float32)).tobytes()
    import hashlib

    resigned = hashlib.sha256(b"k1\0" + forged).hexdigest()   # the old checksum, recomputed without the key
    cache.db.execute("UPDATE embeddings SET vec = ?, checksum = ? WHERE key = 'k1'", (forged, resigned))
    cache.db.commit()
    capsys.readouterr()
    assert cache.get_many(["k1"], unit=True) == {}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "failed verification (signature" in err
    assert oct(os.stat(tmp_path / "secret.key").st_mode & 0o777) == "0o600"
