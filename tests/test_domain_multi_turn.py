"""multi_turn: answers follow the earlier turns; operators change them; quota; split rule."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import multi_turn as mt
from domains.verify import verify

from domain_helpers import assert_family_rule, assert_input_error, assert_quota, assert_rebuild_same

INSTANCES, PERTURBED = mt.scenarios()


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_meets_quota(profile):
    rep = assert_quota("multi_turn", profile)
    assert all(c.construction_method == "adversarial_perturbation" for c in rep.kept["ADVERSARIAL"])


def test_known_answers():
    temp30 = next(i for i in INSTANCES if i.name == "temperature=30")
    assert temp30.answers["convert"]["Fahrenheit"] == "86 °F"
    assert temp30.answers["convert"]["Kelvin"] == "303.15 K"
    austria = next(i for i in INSTANCES if i.name == "countries=Austria")
    assert austria.answers["capital"][""] == "Vienna"


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PERTURBED))
def test_context_swap_changes_the_answer(p):
    assert p.seed.facts != p.variant.facts
    changed = [(q, t) for q in p.seed.answers for t in p.seed.answers[q]
               if p.variant.answers.get(q, {}).get(t) not in (None, p.seed.answers[q][t])]
    assert changed, p.operator


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(INSTANCES))
def test_target_swap_changes_the_answer(inst):
    for q in inst.answers:
        for t in inst.answers[q]:
            out = mt.OPERATORS["target_swap"].apply((inst, q, t))
            if out is not None:
                assert out[0] != t and out[1] != inst.answers[q][t]


def test_same_final_message_after_different_turns_is_a_miss():
    cands = mt.candidates()
    same_final = [c for c in cands if c.query_a == c.query_b]
    assert same_final and all(c.label in ("RELATED_UNSAFE", "ADVERSARIAL") for c in same_final)
    assert all(c.context_a != c.context_b for c in same_final)


def test_verifier_accepts_hits_and_rejects_flipped_labels():
    cands = mt.candidates()
    for c in cands[:80]:
        assert verify(c).passed, c
    hit = next(c for c in cands if c.label == "EQUIV")
    assert not verify(hit.with_(label="RELATED_UNSAFE")).passed
    for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
        miss = next(c for c in cands if c.label == lab)
        assert not verify(miss.with_(label="PARA_SAFE")).passed, lab
    # A HIT whose context facts differ is rejected even when the answers agree.
    bad = hit.with_(verification_payload={"context_facts_a": ["x = 1"], "context_facts_b": ["x = 2"]})
    assert not verify(bad).passed


def test_split_rule_and_distinct_pairs():
    assert_family_rule(mt.candidates(),
                       sides_differ=lambda c: c.query_a != c.query_b or c.context_a != c.context_b)


def test_deterministic():
    assert_rebuild_same(mt.candidates, mt.scenarios)


def test_bad_source_is_one_line_input_error(tmp_path, monkeypatch):
    bad = tmp_path / "multi_turn.yaml"
    bad.write_text("conversions: []\n", encoding="utf-8")
    assert_input_error(monkeypatch, mt, "SOURCE_FILE", bad, mt._seed, "multi_turn.yaml: top level must hold")
