"""multi_turn: answers follow the earlier turns; operators change them; quota; split rule."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import multi_turn as mt
from domains.base import LABELS, normalize_text
from domains.check import generate_verified
from domains.verify import verify
from pipeline.config import load_profile
from pipeline.errors import InputError

INSTANCES, PERTURBED = mt.scenarios()


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_meets_quota(profile):
    need = dict(load_profile(profile).matrix["multi_turn"])
    rep = generate_verified("multi_turn", need, profile=profile)
    for lab in LABELS:
        assert len(rep.kept[lab]) >= need[lab], (lab, len(rep.kept[lab]))
    assert not rep.drops, rep.drops
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
    cands = mt.candidates()
    uses = Counter(t for c in cands for t in {normalize_text(c.query_a), normalize_text(c.query_b)})
    assert max(uses.values()) <= 3
    parent: dict[str, str] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for c in cands:
        a, b = find(normalize_text(c.query_a)), find(normalize_text(c.query_b))
        if a != b:
            parent[a] = b
    groups = Counter(find(normalize_text(c.query_a)) for c in cands)
    assert max(groups.values()) <= 6
    assert len({c.pair_signature() for c in cands}) == len(cands)
    assert all(c.query_a != c.query_b or c.context_a != c.context_b for c in cands)


def test_deterministic():
    first = [c.key for c in mt.candidates()]
    mt.candidates.cache_clear()
    mt.scenarios.cache_clear()
    assert [c.key for c in mt.candidates()] == first


def test_bad_source_is_one_line_input_error(tmp_path, monkeypatch):
    bad = tmp_path / "multi_turn.yaml"
    bad.write_text("conversions: []\n", encoding="utf-8")
    monkeypatch.setattr(mt, "SOURCE_FILE", bad)
    mt._seed.cache_clear()
    try:
        with pytest.raises(InputError, match="multi_turn.yaml: top level must hold"):
            mt._seed()
    finally:
        mt._seed.cache_clear()
