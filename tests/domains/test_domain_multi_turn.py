"""multi_turn: answers follow the earlier turns; operators change them; quota; split rule."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import multi_turn as mt
from domains.verify import verify
from pipeline.core.errors import InputError

from domain_helpers import assert_family_rule, assert_input_error, assert_quota, assert_rebuild_same, built

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
    cands = built(mt)
    same_final = [c for c in cands if c.query_a == c.query_b]
    assert same_final and all(c.label in ("RELATED_UNSAFE", "ADVERSARIAL") for c in same_final)
    assert all(c.context_a != c.context_b for c in same_final)


def test_verifier_accepts_hits_and_rejects_flipped_labels():
    cands = built(mt)
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
    assert_family_rule(built(mt),
                       sides_differ=lambda c: c.query_a != c.query_b or c.context_a != c.context_b)


def test_deterministic():
    assert_rebuild_same(lambda: built(mt), mt._build, mt.scenarios, mt._seed)


def test_bad_source_is_one_line_input_error(tmp_path, monkeypatch):
    bad = tmp_path / "multi_turn.yaml"
    bad.write_text("conversions: []\n", encoding="utf-8")
    assert_input_error(monkeypatch, mt, "SOURCE_FILE", bad, mt._seed, "multi_turn.yaml: top level must hold")


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


def test_same_final_message_pairs_differ_only_by_context():
    """Every pair that claims the same final message (every proposal, not only the kept ones) has
    the very same final message, different earlier turns, and answers that differ; where the answer
    is a number, the number itself differs (recipes with one ratio used to give '100 g' twice)."""
    props = mt._pools(None)
    claimed = [c for lab in props for c in props[lab]
               if c.provenance.template_id in ("same_final_other_conversation", "context_fact_swap")]
    assert {c.subcategory for c in claimed} >= {"arithmetic_followup", "unit_conversion", "entity_followup"}
    for c in claimed:
        assert "same final message" in c.rationale.lower()
        assert c.query_a == c.query_b and c.context_a != c.context_b, (c.query_a, c.query_b)
        assert c.expected_answer_a != c.expected_answer_b
        if _numbers(c.expected_answer_a):
            assert _numbers(c.expected_answer_a) != _numbers(c.expected_answer_b), c.expected_answer_a
    recipes = [c for c in claimed if c.subcategory == "arithmetic_followup" and "g of" in c.expected_answer_a]
    assert len({c.provenance.source_record for c in recipes}) >= 4


def test_every_recipe_has_its_own_ratio_and_a_same_ingredient_peer():
    recipes = [i for i in INSTANCES if i.name.startswith("recipe=")]
    ratios = [float(i.name.split("/")[1]) / float(i.name.split("/")[2]) for i in recipes]
    assert len(set(ratios)) == len(ratios) >= 8
    ingredients = [i.name.split("=")[1].split("/")[0] for i in recipes]
    assert all(ingredients.count(x) >= 2 for x in ingredients)


def test_same_ratio_recipe_is_an_input_error(tmp_path, monkeypatch):
    src = mt.SOURCE_FILE.read_text(encoding="utf-8")
    bad = tmp_path / "multi_turn.yaml"
    bad.write_text(src.replace("- [flour, 180, 3]", "- [flour, 150, 3]"), encoding="utf-8")
    monkeypatch.setattr(mt, "SOURCE_FILE", bad)
    for f in (mt._seed, mt.scenarios):
        f.cache_clear()
    try:
        with pytest.raises(InputError, match=r"recipe_scalings.recipes\[1\]: 150 g for 3 servings has the same ratio"):
            mt.scenarios()
    finally:
        for f in (mt._seed, mt.scenarios):
            f.cache_clear()


def test_answers_with_several_standard_forms_name_them_all():
    australia = next(i for i in INSTANCES if i.name == "countries=Australia")
    assert australia.answers["continent"][""] == "Oceania (also: Australia)"
    night = next(i for i in INSTANCES if i.name == "greetings=good night")
    assert night.answers["translate"]["Italian"] == "Buonanotte (also: Buona notte)"
    # the earlier turns quote the reference form only
    assert all("[" not in t["content"] for i in INSTANCES for ctx in i.contexts for t in ctx)


def test_paraphrase_pairs_take_the_final_that_shares_fewest_words():
    # issue 17 item 5: a final is paired with its least-overlapping rewording (the hard paraphrases)
    inst = next(i for i in mt.scenarios()[0] if "convert" in i.finals)
    finals = inst.finals["convert"]
    para = [c for c in built(mt) if c.label == "PARA_SAFE"]
    assert para and all(c.query_a != c.query_b and verify(c).passed for c in para)
    far = {f.replace("{t}", "Kelvin") for f in finals} & {c.query_b.split(" ", 1)[-1] for c in para}
    assert "Celsius means nothing to me. What would a Kelvin thermometer show?" in far
