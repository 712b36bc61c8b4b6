"""conversational: rubric-verified advice and recommendations; live-information requests never hit."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import conversational as cv
from domains.base import LABELS
from domains.verify import verify

from domain_helpers import assert_family_rule, assert_input_error, assert_quota, assert_rebuild_same

SEEDS = cv.seeds()


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_meets_quota(profile):
    rep = assert_quota("conversational", profile)
    assert all(c.construction_method == "adversarial_perturbation" for c in rep.kept["ADVERSARIAL"])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 30))
def test_swaps_change_request_and_rubric(seed, n):
    for sw in seed["swaps"]:
        old, new = cv.OPERATORS[sw["operator"]].apply(seed)
        assert old == seed["value"] and new != old
        assert cv.wording(seed, n, sw["to"]) != cv.wording(seed, n)
        assert cv.criteria(seed, sw["to"]) != cv.criteria(seed)


def test_related_question_has_other_rubric():
    for s in SEEDS:
        assert set(s["related"]["criteria"]) != set(cv.criteria(s)), s["id"]


def test_time_sensitive_rows_never_hit():
    cands = cv.candidates()
    live = [c for c in cands if "time_sensitive" in c.subcategory]
    assert {c.label for c in live} == set(LABELS)
    for c in live:
        assert cv.policy(c) == "time_sensitive"
        assert c.verification_method == "policy_no_cache" and c.binary_label == "MISS"
    assert all(cv.policy(c) is None and c.verification_method == "rubric" for c in cands if c not in live)
    plain = next(c for c in cands if c.label == "EQUIV" and c.verification_method == "rubric")
    claim = plain.with_(verification_method="policy_no_cache", verification_payload={"policy": "time_sensitive"})
    assert not verify(claim).passed


def test_verifier_accepts_hits_and_rejects_flipped_labels():
    cands = [c for c in cv.candidates() if c.verification_method == "rubric"]
    for lab, wrong in (("EQUIV", "UNRELATED"), ("PARA_SAFE", "ADVERSARIAL"), ("RELATED_UNSAFE", "PARA_SAFE"),
                       ("ADVERSARIAL", "EQUIV"), ("UNRELATED", "PARA_SAFE")):
        rows = [c for c in cands if c.label == lab][:10]
        for c in rows:
            assert verify(c).passed and not verify(c.with_(label=wrong)).passed, (lab, c.query_a)


def test_split_rule_and_distinct_pairs():
    assert_family_rule(cv.candidates())


def test_deterministic():
    assert_rebuild_same(cv.candidates)


def test_seed_without_slot_is_one_line_input_error(tmp_path, monkeypatch):
    text = cv.SOURCE_FILE.read_text(encoding="utf-8").replace(
        '"Which houseplant would do well in a room with {light}?"', '"Which houseplant would do well in a dark room?"')
    bad = tmp_path / "conversational.yaml"
    bad.write_text(text, encoding="utf-8")
    assert_input_error(monkeypatch, cv, "SOURCE_FILE", bad, cv._seed, r"seeds\[0\] \(houseplant\): wording .* lacks the slot")
