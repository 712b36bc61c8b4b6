"""The reference verified cache: its features on hand-written pairs, that no row field beyond the
request ever reaches a feature, and (with the real embedders, through the embedding cache) that it
is deterministic and keeps FHR <= 5% on dev at the threshold it chose there."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline.harness import Row, Verdict
from pipeline.harness.interface import ROW_FIELDS
from pipeline.references import verified as V
from pipeline.references import verified_features as vf
from pipeline.references import verified_text as vt

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "outputs" / "cachebench.jsonl"
NOT_REQUEST = [f for f in ROW_FIELDS if f not in vt.REQUEST_FIELDS + vt.SCOPE_FIELDS]


def lex(a: str, b: str) -> dict[str, float]:
    return vf.lexical_features(a, b)


def row(query_a: str, query_b: str, **kw) -> dict:
    base = {f: None for f in ROW_FIELDS}
    base.update(id="cb-math-0001", domain="math", subcategory="linear", label="ADVERSARIAL", binary_label="MISS",
                difficulty="hard", expected_answer_a="x = 6", expected_answer_b="a = 6", rationale="renamed",
                verification_method="sympy_equivalence", verification_payload={"tol": 1e-9},
                construction_method="adversarial_perturbation", source="curated", real_world_grounding="g",
                query_a=query_a, query_b=query_b)
    base.update(kw)
    return base


def fake_vector(text: str):
    """A deterministic unit vector per text (no model): enough to test what features read."""
    import numpy as np

    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
    return v / np.linalg.norm(v)


# ---- features on hand-written pairs (no model)

def test_variable_rename_is_seen_and_numbers_are_not():
    f = lex("Solve x + 2 = 8", "Solve a + 2 = 8")
    assert f["variables_differ"] == 1.0 and f["numbers_differ"] == 0.0 and f["operators_differ"] == 0.0
    assert vt.variables("Solve x + 2 = 8") == {"x"} and vt.variables("Solve a + 2 = 8") == {"a"}
    assert lex("Solve x + 2 = 8", "solve x+2 = 8")["variables_differ"] == 0.0


def test_programming_language_swap():
    f = lex("sort a list in Python", "sort a list in JavaScript")
    assert f["languages_differ"] == 1.0 and f["rule_language_swap"] == 1.0
    assert lex("sort a list in Python", "Sort a list in python.")["languages_differ"] == 0.0
    assert vt.language_names("write it in C") == {"c"} and vt.language_names("a c b") == frozenset()


def test_numbers_directions_negation_units_operators_names():
    assert lex("Find x such that 5^x=15625.", "Find x such that 5^x=15627.")["numbers_differ"] == 1.0
    assert lex("What is seven times 3?", "What is 7 times 3?")["numbers_differ"] == 0.0   # number words count
    f = lex("Sort the scores in ascending order", "Sort the scores in descending order")
    assert f["direction_swap"] == 1.0 and f["rule_direction_swap"] == 1.0
    assert lex("Is it safe to swim after eating?", "Is it not safe to swim after eating?")["negation_differ"] == 1.0
    assert lex("How heavy is 5 kg of feathers?", "How heavy is 5 lb of feathers?")["units_differ"] == 1.0
    assert vt.units("Convert 0.5km to meters.") == {"km", "meter"}
    assert lex("What is 3 + 4?", "What is 3 - 4?")["operators_differ"] == 1.0
    assert lex("Book a table for Anna at noon.", "Book a table for Maria at noon.")["names_differ"] == 1.0
    assert lex("Rename the file \"Q3 budget\".", "Rename the file \"Q4 budget\".")["quoted_differ"] == 1.0
    assert lex("Write gcd(a, b) in Python", "Write lcm(a, b) in Python")["identifiers_differ"] == 1.0


def test_math_written_two_ways_agrees():
    assert vt.math_signature("Solve n**2 - 3*n - 54 = 0.") == vt.math_signature("Solve n^2-3n-54=0")
    assert lex("Find y if 4y + 10 = 6y + 24.", "Find y if 4y + 10 = -6y + 24.")["math_equal"] == 0.0


def test_natural_language_and_script():
    assert lex("¿Qué lengua hablan en Alemania?", "Which language is spoken in Germany?")["natural_language_differ"] == 1.0
    assert lex("Welcher Tag kommt nach Montag?", "Welcher Tag kommt vor Montag?")["natural_language_differ"] == 0.0
    assert lex("What is the capital of Japan?", "日本の首都はどこですか？")["script_differ"] == 1.0
    assert vt.natural_language("Solve x + 2 = 8") == "und"   # no stopword: undetermined, never "different"


def test_policy_signals():
    assert vt.side_signals("Write me a haiku about autumn rain.")["creative"] == 1.0
    assert vt.side_signals("Hey there! I'd love a sonnet about first love.")["creative_noun"] == 1.0
    assert vt.side_signals("What's the weather in Manchester right now?")["time"] == 1.0
    assert vt.side_signals("Delete the file named report.")["no_hit"] >= 1.0
    assert vt.side_signals("What is the capital of France?") == {"creative": 0.0, "creative_noun": 0.0, "time": 0.0,
                                                                 "no_hit": 0.0, "first_person": 0.0, "question": 1.0}


def test_system_prompts_turns_and_tools():
    v = vt.request_view(row("Suggest a lunch.", "Suggest a lunch.", system_prompt_a="You help Kwame in Accra.",
                            system_prompt_b="You help Marcus in Chicago."))
    p = vf.part_features(v)
    assert p["system_equal"] == 0.0 and p["system_names_differ"] == 1.0 and p["context_equal"] == 1.0
    turns = [{"role": "user", "content": "List three paintings."}, {"role": "assistant", "content": "1. Guernica"}]
    other = [{"role": "user", "content": "List three novels."}, {"role": "assistant", "content": "1. Emma"}]
    p = vf.part_features(vt.request_view(row("Who made the first one?", "Who made the first one?",
                                             context_a=turns, context_b=other)))
    assert p["context_equal"] == 0.0 and p["context_names_differ"] == 1.0 and p["context_any"] == 1.0
    tools = [{"name": "send_email", "description": "Send an email to a contact.", "parameters": {}}]
    p = vf.part_features(vt.request_view(row("Email Bob", "Email Bob", tools_a=tools, tools_b=tools[:0])))
    assert p["tools_equal"] == 0.0 and p["tools_any"] == 1.0


def test_called_tool_signals_with_fake_vectors():
    tools = [{"name": "send_email", "description": "Send an email to a contact.", "parameters": {}},
             {"name": "get_timezone", "description": "The IANA time zone a city lies in.", "parameters": {}}]
    r = row("Email Maria the report", "Send Maria the report by email", tools_a=tools, tools_b=tools)
    names = vf.feature_names()
    x = dict(zip(names, vf.pair_features(vt.request_view(r), fake_vector, fake_vector)))
    assert len(names) == len(set(names)) and set(vf.POLICY_FEATURES) <= set(names)
    assert x["tools_equal"] == 1.0 and 0.0 <= x["tool_no_hit_max"] <= 1.0


# ---- no forbidden field reaches a feature

def test_request_view_holds_only_request_fields():
    r = row("Solve x + 2 = 8", "Solve a + 2 = 8", user_a="u1", status_a="error")
    assert set(vt.request_view(r)) == set(vt.REQUEST_FIELDS + vt.SCOPE_FIELDS)
    assert set(vt.request_view(Row.from_dict(r))) == set(vt.REQUEST_FIELDS + vt.SCOPE_FIELDS)
    assert vt.request_view(Row.from_dict(r))["user_a"] == "u1" and vt.request_view(r)["status_a"] == "error"


class _Sure:
    """A stand-in classifier that is sure of a HIT on every row."""

    def predict_proba(self, X):
        import numpy as np

        return np.tile([0.01, 0.99], (len(X), 1))


def test_a_negation_added_or_removed_is_the_only_change_it_sees_as_one():
    def toggled(a: str, b: str) -> bool:
        (wa, ka), (wb, kb) = vt.without_negation(a), vt.without_negation(b)
        return wa == wb and ka != kb

    assert toggled("Why wasn't my top-up accepted?", "Why was my top-up accepted?")
    assert toggled("I can't log in", "I can log in") and toggled("I won't pay", "I will pay")
    assert toggled("Is it NOT safe?", "Is it safe?") and toggled("It doesn\u2019t work", "It does work")
    assert not toggled("I can't log in", "I cannot log in")          # the same negation, written two ways
    assert not toggled("Is there no fee?", "Is there a fee?")         # another word changed too
    assert not toggled("Differentiate f(t) = 3*t^3", "Differentiate f(t) = 3t^3")   # no negation at all


def test_vetoed_pairs_are_never_served_whatever_the_classifier_says():
    # The same query on both sides, and a classifier sure of a HIT: only the VETOES can say MISS.
    from pipeline.harness.interface import Pair

    q = "Summarise the plot of Hamlet in three sentences."
    tools = [{"name": "web_search", "description": "Search the web.", "parameters": {}}]
    other = [{"name": "send_email", "description": "Send an email.", "parameters": {}}]
    write = [{"name": "delete_file", "description": "Delete a file from the user's drive.", "parameters": {}}]
    poem = "Write me a short poem about the sea."
    same = {"query_a": q, "query_b": q, "system_prompt_a": "You are terse.", "system_prompt_b": "You are terse.",
            "tools_a": tools, "tools_b": tools}
    vetoed = [dict(same, system_prompt_b="Answer in French only."), dict(same, tools_b=other),
              dict(same, user_a="user-1", user_b="user-2"), dict(same, tenant_a="t-1", tenant_b="t-2"),
              dict(same, tool_choice_a="auto", tool_choice_b="none"), dict(same, status_a="refusal"),
              dict(same, query_a=poem, query_b=poem), dict(same, tools_a=write, tools_b=write),
              dict(same, query_a="My refund has not shown up. Where is it?", query_b="My refund has shown up. Where is it?")]
    X = [vf.pair_features(vt.request_view(Pair("k", **p)), fake_vector, fake_vector) for p in [same, *vetoed]]
    assert V.scores(_Sure(), X) == [0.99] + [0.0] * len(vetoed)
    assert V.vetoed(X).tolist() == [False] + [True] * len(vetoed)


@pytest.mark.parametrize("field", NOT_REQUEST)
def test_features_ignore_every_non_request_field(field):
    tools = [{"name": "convert_units", "description": "Convert a quantity.", "parameters": {}}]
    r = row("Convert 5 km to miles, please.", "How many miles is 5 km?", tools_a=tools, tools_b=tools,
            system_prompt_a="You help Ana.", system_prompt_b="You help Ana.",
            context_a=[{"role": "user", "content": "Hi"}], context_b=[{"role": "user", "content": "Hi"}])
    before = vf.pair_features(vt.request_view(Row.from_dict(r)), fake_vector, fake_vector)
    changed = dict(r)
    changed[field] = {"id": "cb-tool-9999", "domain": "tool", "label": "EQUIV", "binary_label": "HIT",
                      "construction_method": "real_traffic_mined", "source": "sharegpt"}.get(field, "something else")
    changed["extra_provenance"] = {"operator": "rename"}
    after = vf.pair_features(vt.request_view(Row.from_dict(changed)), fake_vector, fake_vector)
    assert after == before


def test_threshold_is_the_lowest_within_the_fhr_budget():
    conf = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    gold = [1, 1, 0, 1, 0, 0]
    # one false hit in 3 MISS rows is 33%: a 40% budget allows it (t = 0.6), a 20% budget does not (t = 0.8)
    assert V.choose_threshold(conf, gold, max_fhr=0.40) == 0.6
    assert V.choose_threshold(conf, gold, max_fhr=0.20) == 0.8
    assert V.choose_threshold([0.5, 0.5], [0, 0], max_fhr=0.0) > 0.5       # nothing feasible: never hit


def test_training_splits_are_found_beside_the_bench_or_a_split(tmp_path):
    from pipeline.core.errors import InputError

    splits = tmp_path / "splits"
    splits.mkdir()
    for name in ("train.jsonl", "dev.jsonl", "test.jsonl"):
        (splits / name).write_text("")
    assert V.splits_dir(tmp_path / "cachebench.jsonl") == splits      # the whole benchmark
    assert V.splits_dir(splits / "test.jsonl") == splits              # the test split, labels apart
    assert V.splits_dir(tmp_path / "evolving" / "2026-Q4.jsonl") == splits  # a quarterly slice: the main splits
    # a pair file from elsewhere: the project's published splits it was trained on (#item 7)
    from pipeline.core.paths import OUTPUTS

    published = OUTPUTS / "splits"
    if (published / "train.jsonl").is_file():
        assert V.splits_dir(tmp_path / "other" / "deeper" / "elsewhere.jsonl") == published
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("pipeline.core.paths.OUTPUTS", tmp_path / "no-outputs")
        with pytest.raises(InputError, match=r"no train.jsonl and dev.jsonl beside .*elsewhere.jsonl.*--train"):
            V.splits_dir(tmp_path / "other" / "deeper" / "elsewhere.jsonl")


# ---- the trained cache (real embedders through the embedding cache)

@pytest.fixture(scope="module")
def built():
    if not (BENCH.parent / "splits" / "train.jsonl").is_file():
        pytest.skip("the committed benchmark is not built")
    return V.build(BENCH)


@pytest.mark.models
@pytest.mark.slow
def test_dev_fhr_within_budget_at_the_chosen_threshold(built):
    dev = V.read_jsonl(BENCH.parent / "splits" / "dev.jsonl")
    rows = [Row.from_dict(r) for r in dev]
    verdicts = [built(r) for r in rows[:40]]       # the per-row path agrees with the batch path
    conf = built.confidence_many(dev)
    assert all(isinstance(v, Verdict) for v in verdicts)
    assert [v.confidence for v in verdicts] == conf[:40]
    assert [v.is_hit for v in verdicts] == [c >= built.threshold for c in conf[:40]]
    neg = [c for c, r in zip(conf, dev) if r["binary_label"] == "MISS"]
    pos = [c for c, r in zip(conf, dev) if r["binary_label"] == "HIT"]
    fhr = sum(c >= built.threshold for c in neg) / len(neg)
    recall = sum(c >= built.threshold for c in pos) / len(pos)
    assert fhr <= 0.05 and recall >= 0.80, (fhr, recall)
    assert built.settings["threshold"] == built.threshold and "mpnet_base" in built.model_snapshot
    assert len(built.model_snapshot.split("sha256:")) == 3   # one weights hash per embedder
    json.dumps(built.settings)                                 # the evaluation-result cache keys on it


@pytest.mark.models
@pytest.mark.slow
def test_deterministic_same_model_same_predictions(built):
    again = V.build(BENCH)
    test = V.read_jsonl(BENCH.parent / "splits" / "test.jsonl")
    assert again.threshold == built.threshold and again.settings == built.settings
    assert again.confidence_many(test) == built.confidence_many(test)


@pytest.mark.models
def test_real_features_ignore_the_row_label_and_domain(built):
    r = V.read_jsonl(BENCH.parent / "splits" / "train.jsonl")[0]
    flipped = {**r, "label": "UNRELATED", "binary_label": "MISS", "domain": "creative", "subcategory": "x",
               "construction_method": "lm_generated", "id": "cb-creative-9999", "source": "other"}
    assert V.featurize([r], built.vectors) == V.featurize([flipped], built.vectors)


@pytest.mark.models
def test_prefetching_pairs_embeds_every_text_the_decisions_read_in_one_pass(built, monkeypatch):
    # The scorer calls prefetch_pairs before a reference decides pair by pair: afterwards deciding
    # embeds nothing more, and the verdicts are those of a cache that embedded one text at a time.
    from pipeline.harness.interface import REQUEST_FIELDS, Pair
    from pipeline.services import embed_cache

    test = V.read_jsonl(BENCH.parent / "splits" / "test.jsonl")[:30]   # requests only: no labels
    pairs = [Pair(f"k{i}", **{f: r.get(f) for f in REQUEST_FIELDS}) for i, r in enumerate(test)]
    one_by_one = [built(p) for p in pairs]
    fresh = V.VerifiedCache(built.clf, built.threshold, V.Vectors(), {})
    fresh.prefetch_pairs(pairs)
    calls = []
    real = embed_cache.embed_texts
    monkeypatch.setattr(embed_cache, "embed_texts", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    assert [fresh(p) for p in pairs] == one_by_one
    assert calls == []


@pytest.mark.models
@pytest.mark.slow
def test_no_veto_fires_on_a_hit_row_of_the_benchmark(built):
    # The vetoes are rules a cache may apply on any traffic because a pair they catch is never the
    # same request; the README says none fires on a HIT row of the benchmark, and this holds it.
    rows = V.read_jsonl(BENCH)
    hits = [r for r in rows if r["binary_label"] == "HIT"]
    vetoed = V.vetoed(V.featurize(hits, built.vectors))
    assert not vetoed.any(), [r["id"] for r, v in zip(hits, vetoed) if v][:10]
    misses = [r for r in rows if r["binary_label"] == "MISS"]
    assert V.vetoed(V.featurize(misses, built.vectors)).any()   # and it is not vacuous: MISS rows it catches
