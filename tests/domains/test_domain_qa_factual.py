"""qa_factual: fact table, swap operators, alias verifier, policy and quota."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from domains import get_domain
from domains import qa_factual as qf
from domains.base import LABELS, binary_label, normalize_text, stable_rng
from domains.verify import verify
from pipeline.core.errors import InputError

from domain_helpers import assert_family_rule, assert_quota, kept

DOMAIN = "qa_factual"


def _kept(profile: str):
    return kept(DOMAIN, profile)


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_quota_with_margin_and_no_drops(profile):
    assert_quota(DOMAIN, profile, margin=1.1)


def test_family_rule_and_distinct_texts():
    _, rep = _kept("lifted40")
    cands = [c for lab in LABELS for c in rep.kept[lab]]
    assert_family_rule(cands)


def test_rows_are_well_formed():
    _, rep = _kept("lifted40")
    for lab in LABELS:
        subcats = {c.subcategory for c in rep.kept[lab]}
        assert len(subcats) >= 8, (lab, subcats)
        for c in rep.kept[lab]:
            assert c.source == "curated" and c.real_world_grounding and c.rationale
            assert c.verification_method == "alias_exact_match"
            assert c.provenance.generator == f"{DOMAIN}.{c.construction_method}"
            if lab == "ADVERSARIAL":
                assert c.construction_method == "adversarial_perturbation"
                assert c.provenance.operator in qf.OPERATORS and c.provenance.operator_params
            else:
                assert c.construction_method == "curated" and c.provenance.operator is None
            if lab == "EQUIV":
                assert normalize_text(c.query_a) == normalize_text(c.query_b)


def test_deterministic():
    a = [c.key for c in qf._build((("ADVERSARIAL", 48), ("EQUIV", 60), ("PARA_SAFE", 60),
                                   ("RELATED_UNSAFE", 60), ("UNRELATED", 48)))]
    qf._build.cache_clear()
    qf.load_facts.cache_clear()
    qf._fact_index.cache_clear()
    b = [c.key for c in qf._build((("ADVERSARIAL", 48), ("EQUIV", 60), ("PARA_SAFE", 60),
                                   ("RELATED_UNSAFE", 60), ("UNRELATED", 48)))]
    assert a == b


SEEDS = [qf.Seed(f, i) for f in qf.load_facts() for i in range(len(f.questions))]
SWAPPABLE = [s for s in SEEDS if s.fact.swap]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 2**32))
def test_every_operator_changes_the_answer(seed, n):
    for name, op in sorted(qf.OPERATORS.items()):
        v = op.apply(seed, stable_rng("test", n))
        if v is None:
            continue
        assert qf.SWAP_OPERATORS[seed.fact.swap] == name
        assert not (v.fact.forms & seed.fact.forms)             # the answer changes
        assert v.question in v.fact.questions                     # ... and is known
        assert v.fact.attribute == seed.fact.attribute
        # exactly one token swapped
        back = re.sub(rf"(?<!\w){re.escape(v.params['to'])}(?!\w)", v.params["from"], v.question, count=1)
        assert back.lower() == seed.question.lower() and v.question != seed.question


def test_operators_apply_widely_and_refuse_same_answers():
    applied = {name: 0 for name in qf.OPERATORS}
    for s in SWAPPABLE:
        name = qf.SWAP_OPERATORS[s.fact.swap]
        applied[name] += qf.OPERATORS[name].apply(s, stable_rng("t")) is not None
    assert all(n >= 10 for n in applied.values()), applied
    idx = qf._fact_index()
    # Jane Eyre and Wuthering Heights share their year: no pair for that attribute.
    assert qf.OPERATORS["entity_swap"].apply(qf.Seed(idx["jane_eyre.publication_year"], 0), stable_rng("t")) is None
    # "... stop with the armistice" has no World War II counterpart in the table: no pair.
    assert qf.OPERATORS["entity_swap"].apply(qf.Seed(idx["ww1.event_detail"], 2), stable_rng("t")) is None
    assert qf.OPERATORS["entity_swap"].apply(qf.Seed(idx["ww1.event_detail"], 0), stable_rng("t")).question == \
        "In what year did World War II end?"
    v = qf.OPERATORS["entity_swap"].apply(qf.Seed(idx["austria.capital"], 0), stable_rng("t"))
    assert v.question == "What is the capital of Australia?" and v.fact.answers[0] == "Canberra"
    # an operator of another kind does not apply
    assert qf.OPERATORS["unit_swap"].apply(qf.Seed(idx["austria.capital"], 0), stable_rng("t")) is None


def test_verifier_accepts_hits_and_rejects_each_miss_kind():
    _, rep = _kept("v1.1")
    hit = rep.kept["PARA_SAFE"][0]
    assert verify(hit).passed
    assert not verify(hit.with_(label="ADVERSARIAL")).passed
    for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
        miss = rep.kept[lab][0]
        assert verify(miss).passed and miss.binary_label == "MISS"
        out = verify(miss.with_(label="EQUIV"))
        assert not out.passed and out.reason == "answers_differ_for_hit"


def test_policy_forces_miss():
    _, rep = _kept("v1.1")
    base = rep.kept["PARA_SAFE"][0]
    spec = get_domain(DOMAIN)
    assert all(spec.policy(c) is None for lab in LABELS for c in rep.kept[lab])
    live = qf._candidate("PARA_SAFE", qf._fact_index()["austria.capital"], "What is the capital of Austria today?",
                         qf._fact_index()["austria.capital"], "What is Austria's capital right now?", "curated",
                         "test", "t")
    assert spec.policy(live) == "time_sensitive"
    assert live.verification_method == "policy_no_cache" and live.binary_label == "MISS"
    assert verify(live).passed
    assert binary_label(base.label, "policy_no_cache") == "MISS"


def test_bad_input_is_one_line_error(tmp_path, monkeypatch):
    bad = tmp_path / "qa_factual.yaml"
    bad.write_text("templates: {}\nsubcategories: {}\nentities:\n  - {id: x, name: X, facts: {capital: [A]}}\n")
    monkeypatch.setattr(qf, "SOURCE_FILE", bad)
    qf.load_facts.cache_clear()
    try:
        with pytest.raises(InputError, match=r"^sources/curated/qa_factual.yaml:x: attribute 'capital' has no subcategory\. "):
            qf.load_facts()
    finally:
        qf.load_facts.cache_clear()
