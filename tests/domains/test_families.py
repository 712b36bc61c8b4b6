"""The shared candidate-building path (domains/families.py) and the one time-word table
(domains/text.py): caps from the profile's need, labels taking turns at one family guard, spread
sampling, and the time-sensitive rule every word-based policy uses."""
from __future__ import annotations

import random

import pytest

from domains import conversational, creative, multi_turn, multilingual, personalized, qa_factual, qa_open
from domains.base import LABELS, Candidate, GenContext, Provenance
from domains.families import (caps_for, capped_builder, far_rotation, method_generators, round_robin, select, spread,
                              template_words)
from domains.text import TIME_SCOPES, time_scopes, time_sensitive
from pipeline.core.config import load_profile

BUILT_ONCE = (qa_factual, qa_open, conversational, creative, personalized, multi_turn, multilingual)


def _cand(label: str, qa: str, qb: str, method: str = "curated") -> Candidate:
    return Candidate(domain="t", subcategory="s", label=label, query_a=qa, query_b=qb, expected_answer_a="x",
                     expected_answer_b="y", rationale="r", verification_method="rubric", verification_payload={},
                     construction_method=method, source="curated", real_world_grounding="g",
                     provenance=Provenance(generator="t", generator_version="1"))


def test_caps_follow_the_need_with_floor_margin_and_spare():
    assert caps_for({"EQUIV": 60, "PARA_SAFE": 10}, ("EQUIV", "PARA_SAFE")) == {"EQUIV": 72, "PARA_SAFE": 48}
    assert caps_for({"EQUIV": 60}, ("EQUIV", "UNRELATED"), margin=0.0, spare=10) == {"EQUIV": 70, "UNRELATED": 50}
    assert caps_for({"RELATED_UNSAFE": 50}, ("RELATED_UNSAFE",), spare=8) == {"RELATED_UNSAFE": 68}
    # a larger need never gets fewer candidates
    for need in range(0, 200, 7):
        assert caps_for({"EQUIV": need + 1})["EQUIV"] >= caps_for({"EQUIV": need})["EQUIV"] >= max(need, 40)


def test_every_curated_domain_builds_once_for_the_caps_of_the_profiles_need():
    for module in BUILT_ONCE:
        for profile in ("v1.1", "lifted40"):
            need = dict(load_profile(profile).matrix[module.DOMAIN])
            ctx = GenContext(domain=module.DOMAIN, profile=profile, need=need)
            cands = module._build.for_ctx(ctx)
            per_label = {lab: sum(c.label == lab for c in cands) for lab in LABELS}
            assert all(per_label[lab] >= need[lab] for lab in LABELS), (module.DOMAIN, profile, per_label)
            # no label goes beyond max(need, 40) plus a margin (20%, or 10 more for conversational)
            assert all(per_label[lab] <= max(need[lab], 40) * 1.2 + 10 for lab in LABELS), (module.DOMAIN, per_label)
            assert not hasattr(module, "CAP") and not hasattr(module, "candidates")


def test_a_larger_need_offers_more_candidates():
    small = {lab: 40 for lab in LABELS}
    big = {**small, "EQUIV": 80}
    cands = {n: conversational._build.for_ctx(GenContext(domain="conversational", profile="t", need=need))
             for n, need in (("small", small), ("big", big))}
    count = {n: sum(c.label == "EQUIV" for c in cs) for n, cs in cands.items()}
    assert count["big"] > count["small"] == 50


def test_select_strict_rounds_and_retries():
    # EQUIV's first candidate repeats PARA_SAFE's first pair, so the guard refuses it.
    pools = {"PARA_SAFE": [_cand("PARA_SAFE", "q", f"p{i}") for i in range(3)],
             "EQUIV": [_cand("EQUIV", "q", "p0"), _cand("EQUIV", "r", "R"), _cand("EQUIV", "s", "S")]}
    caps = {"PARA_SAFE": 3, "EQUIV": 3}
    order = ("PARA_SAFE", "EQUIV")
    retry = select(pools, caps, order)
    strict = select(pools, caps, order, tries=1)
    assert [c.query_a for c in retry if c.label == "EQUIV"] == ["r", "s"]
    assert [c.query_a for c in strict if c.label == "EQUIV"] == ["r", "s"]
    # The order differs: retrying takes "r" in the first turn, strict rounds only in the second.
    assert [c.query_b for c in retry][:2] == ["p0", "R"] and [c.query_b for c in strict][:3] == ["p0", "p1", "R"]
    # caps stop a label; a refused candidate is never kept
    assert len(select(pools, {"PARA_SAFE": 1, "EQUIV": 1}, order)) == 2
    assert all(c.query_a != "q" or c.label == "PARA_SAFE" for c in retry)


def test_capped_builder_serves_each_method_from_one_build():
    calls = []

    def pools(rng_for):
        calls.append(1)
        return {"EQUIV": [_cand("EQUIV", f"e{i}", f"E{i}") for i in range(60)],
                "ADVERSARIAL": [_cand("ADVERSARIAL", f"a{i}", f"b{i}", "adversarial_perturbation") for i in range(60)]}

    build = capped_builder("t", pools, ("EQUIV", "ADVERSARIAL"))
    gens = method_generators("t", build.for_ctx)
    ctx = GenContext(domain="t", profile="t", need={"EQUIV": 50, "ADVERSARIAL": 10})
    assert len(gens["curated"](ctx)) == 60 and len(gens["adversarial_perturbation"](ctx)) == 48
    assert len(calls) == 1


def test_round_robin_and_spread():
    assert round_robin([[1, 2, 3], [], ["a"]]) == [1, "a", 2, 3]
    items = [(k, i) for k in "abc" for i in range(4)]
    out = spread(list(items), lambda it: it[0], random.Random(1))
    assert sorted(out) == sorted(items)
    assert [it[0] for it in out[:3]] == ["a", "b", "c"]        # every key early
    assert spread(list(items), lambda it: it[0], random.Random(1)) == out


@pytest.mark.parametrize("text,scopes", [
    ("Is the Louvre open right now?", {"now"}), ("Will it be open today?", {"today"}),
    ("What is the latest iPhone?", {"latest"}), ("Any plans this weekend?", {"this_weekend"}),
    ("Who is the president now?", {"now"}), ("Welcher Tag ist heute?", {"today"}),
    ("Quel jour sommes-nous aujourd'hui ?", {"today"}), ("Wie is momenteel premier?", {"now"}),
    ("What was the weather like last night?", {"last_night"}), ("Is it busy tonight?", {"tonight"}),
])
def test_time_scopes(text, scopes):
    assert time_scopes(text) == scopes and time_sensitive("x", text)


def test_time_sensitive_leaves_stable_questions_alone():
    for text in ("What is the capital of France?", "Known as the nowhere man", "Which day comes after Monday?",
                 "Wer schrieb Faust?", "Currency of Japan?", "Which city hosted the 1966 World Cup?"):
        assert not time_sensitive(text), text
    assert [name for name, _ in TIME_SCOPES] == sorted(name for name, _ in TIME_SCOPES)


def test_one_time_word_rule_in_every_word_based_policy():
    for module in (qa_factual, qa_open, multilingual):
        assert not hasattr(module, "_TIME_SENSITIVE")
    c = _cand("PARA_SAFE", "How do solar panels work nowadays?", "How do solar panels work?")
    for module in (qa_factual, qa_open, multilingual):
        assert module.policy(c.with_(domain=module.DOMAIN)) == "time_sensitive", module.DOMAIN


def test_far_rotation_picks_the_least_overlapping_template():
    ts = ["What's that in {t}?", "How much is that in {t}?", "Celsius means nothing to me. Show {t}.", "Convert it to {t}."]
    assert template_words(ts[0]) == {"what's", "that", "in"}
    # from 0: overlaps 2/5, 0/7 (index 2) and 0/6 (index 3) -> the first of the ties in rotation order
    assert far_rotation(ts, 0) == 2
    assert far_rotation(ts, 5) == 6            # rotation indices past the end wrap, and stay raw
    assert far_rotation(ts, 3) in range(4, 7)
    assert far_rotation(["only one {t}"], 4) == 4
