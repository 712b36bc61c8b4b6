"""qa_open: rubric questions, aspect-swap operators, rubric verifier, policy and quota."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from domains.families import caps_for
from domains import get_domain
from domains import qa_open as qo
from domains.base import LABELS, stable_rng
from domains.verify import verify
from pipeline.core.config import load_profile
from pipeline.core.errors import InputError

from domain_helpers import assert_family_rule, assert_quota, kept

DOMAIN = "qa_open"


def _kept(profile: str):
    return kept(DOMAIN, profile)


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_quota_with_margin_and_no_drops(profile):
    assert_quota(DOMAIN, profile, margin=1.1)


def test_family_rule_and_rows():
    _, rep = _kept("lifted40")
    cands = [c for lab in LABELS for c in rep.kept[lab]]
    assert_family_rule(cands)
    for c in cands:
        assert c.query_a != c.query_b and c.real_world_grounding and c.source == "curated"
        p = c.verification_payload
        assert len(p["criteria_a"]) == 3 and len(p["criteria_b"]) == 3
        if c.label in ("EQUIV", "PARA_SAFE"):
            assert p["criteria_a"] == p["criteria_b"] and c.expected_answer_a == c.expected_answer_b
        else:
            assert set(p["criteria_a"]).isdisjoint(p["criteria_b"])
    for lab in LABELS:
        assert len({c.subcategory for c in rep.kept[lab]}) == 4
    assert {c.provenance.operator for c in rep.kept["ADVERSARIAL"]} == set(qo.OPERATORS)


def test_deterministic():
    caps = tuple(sorted(caps_for(dict(load_profile("v1.1").matrix[DOMAIN])).items()))
    a = [c.key for c in qo._build(caps)]
    qo._build.cache_clear()
    qo.load_questions.cache_clear()
    qo._index.cache_clear()
    assert a == [c.key for c in qo._build(caps)]


SEEDS = [qo.Seed(q, i) for q in qo.load_questions() for i in range(len(q.phrasings))]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 2**32))
def test_every_operator_changes_the_rubric(seed, n):
    for name, op in sorted(qo.OPERATORS.items()):
        v = op.apply(seed, stable_rng("test", n))
        if v is None:
            assert name != seed.question.operator or seed.index >= seed.question.n_aligned
            continue
        assert name == seed.question.operator
        assert v.question.subject == seed.question.subject and v.question.aspect != seed.question.aspect
        assert set(v.question.criteria).isdisjoint(seed.question.criteria)
        assert v.text in v.question.phrasings
        back = re.sub(rf"(?<!\w){re.escape(v.params['to'])}(?!\w)", v.params["from"], v.text, count=1)
        assert back == seed.text != v.text


def test_operator_examples():
    idx = qo._index()
    v = qo.OPERATORS["polarity_swap"].apply(qo.Seed(idx["solar_power.advantages"], 0), stable_rng("t"))
    assert v.text == "What are the disadvantages of solar power?"
    v = qo.OPERATORS["audience_swap"].apply(qo.Seed(idx["chess.beginners"], 1), stable_rng("t"))
    assert v.text == "How should an expert approach chess?"
    # free phrasings have no near-identical counterpart
    assert qo.OPERATORS["cause_effect_swap"].apply(qo.Seed(idx["inflation.causes"], 4), stable_rng("t")) is None


def test_verifier_accepts_hits_and_rejects_each_miss_kind():
    _, rep = _kept("v1.1")
    for lab in ("EQUIV", "PARA_SAFE"):
        hit = rep.kept[lab][0]
        assert verify(hit).passed and hit.binary_label == "HIT"
        assert verify(hit.with_(label="RELATED_UNSAFE")).reason == "rubric_equal_for_miss"
    for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
        miss = rep.kept[lab][0]
        assert verify(miss).passed and miss.binary_label == "MISS"
        assert verify(miss.with_(label="PARA_SAFE")).reason == "rubric_differs_for_hit"


def test_policy_forces_miss():
    _, rep = _kept("v1.1")
    spec = get_domain(DOMAIN)
    assert all(spec.policy(c) is None for lab in LABELS for c in rep.kept[lab])
    q = qo._index()["electric_cars.advantages"]
    live = qo._candidate("EQUIV", q, "What are the latest advantages of electric cars?", q,
                         "what are the latest advantages of electric cars", "curated", "test", "t")
    assert spec.policy(live) == "time_sensitive"
    assert live.verification_method == "policy_no_cache" and live.binary_label == "MISS"
    assert verify(live).passed


def test_bad_input_is_one_line_error(tmp_path, monkeypatch):
    bad = tmp_path / "qa_open.yaml"
    src = qo.SOURCE_FILE.read_text(encoding="utf-8")
    bad.write_text(src.replace("low running and maintenance costs once installed,", ""), encoding="utf-8")
    monkeypatch.setattr(qo, "SOURCE_FILE", bad)
    qo.load_questions.cache_clear()
    try:
        with pytest.raises(InputError, match=r"^sources/curated/qa_open.yaml:solar_power.advantages: has 2 distinct points\. "):
            qo.load_questions()
    finally:
        qo.load_questions.cache_clear()
