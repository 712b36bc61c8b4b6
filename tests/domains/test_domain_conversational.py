"""conversational: rubric-verified advice and recommendations; live-information requests never hit."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import conversational as cv
from domains.base import LABELS
from domains.text import time_scopes
from domains.verify import verify

from domain_helpers import assert_family_rule, assert_input_error, assert_quota, assert_rebuild_same, built

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
    cands = built(cv)
    live = [c for c in cands if "time_sensitive" in c.subcategory]
    assert {c.label for c in live} == set(LABELS)
    for c in live:
        assert cv.policy(c) == "time_sensitive"
        assert c.verification_method == "policy_no_cache" and c.binary_label == "MISS"
    assert all(cv.policy(c) is None and c.verification_method == "rubric" for c in cands if c not in live)
    plain = next(c for c in cands if c.label == "EQUIV" and c.verification_method == "rubric")
    claim = plain.with_(verification_method="policy_no_cache", verification_payload={"policy": "time_sensitive"})
    assert not verify(claim).passed


def test_policy_reason_comes_from_the_subcategory_marker():
    # Corpus rows (domains/corpora/intents.py) mark live-information and state-changing intents.
    plain = next(c for c in built(cv) if c.label == "RELATED_UNSAFE" and c.verification_method == "rubric")
    for sub, reason in (("massive_alarm+mutation", "mutation"), ("massive_weather+time_sensitive", "time_sensitive"),
                        ("time_sensitive", "time_sensitive"), ("massive_cooking", None), ("mutation_advice", None)):
        c = plain.with_(subcategory=sub)
        assert cv.policy(c) == reason, sub
        wrapped = c.under_policy(cv.policy(c))
        assert verify(wrapped).passed and (wrapped.verification_method == "policy_no_cache") == (reason is not None)


def test_verifier_accepts_hits_and_rejects_flipped_labels():
    cands = [c for c in built(cv) if c.verification_method == "rubric"]
    for lab, wrong in (("EQUIV", "UNRELATED"), ("PARA_SAFE", "ADVERSARIAL"), ("RELATED_UNSAFE", "PARA_SAFE"),
                       ("ADVERSARIAL", "EQUIV"), ("UNRELATED", "PARA_SAFE")):
        rows = [c for c in cands if c.label == lab][:10]
        for c in rows:
            assert verify(c).passed and not verify(c.with_(label=wrong)).passed, (lab, c.query_a)


def test_split_rule_and_distinct_pairs():
    assert_family_rule(built(cv))


def test_deterministic():
    assert_rebuild_same(lambda: built(cv), cv._build, cv._seed)


def _edited(tmp_path, old: str, new: str) -> tuple:
    """A copy of the curated file with `old` replaced by `new` (once): (its path, its text)."""
    text = cv.SOURCE_FILE.read_text(encoding="utf-8").replace(old, new)
    bad = tmp_path / "conversational.yaml"
    bad.write_text(text, encoding="utf-8")
    return bad, text


def test_seed_without_slot_is_one_line_input_error(tmp_path, monkeypatch):
    bad, _ = _edited(tmp_path, '"Which houseplant would do well in a room with {light}?"',
                     '"Which houseplant would do well in a dark room?"')
    assert_input_error(monkeypatch, cv, "SOURCE_FILE", bad, cv._seed, r"seeds\[0\] \(houseplant\): wording .* lacks the slot")


def _seed_of_text() -> dict[str, str]:
    """Every rendered wording (all greetings, all slot values) -> its seed id."""
    out = {}
    for s in SEEDS:
        for v in [s["value"]] + [sw["to"] for sw in s["swaps"]]:
            for n in range(len(s["wordings"]) * len(cv._seed()["greetings"])):
                out[cv.wording(s, n, v)] = s["id"]
    return out


def test_live_paraphrases_share_one_time_scope_and_the_answer_matches_it():
    # cb-conversational-0071/0108/0102 paired "open today" with "open right now" / "at the moment",
    # and "weather right now" with "raining today", under one answer that said "today".
    live = [c for c in built(cv) if c.subcategory == "time_sensitive" and c.label in ("EQUIV", "PARA_SAFE")]
    assert len(live) >= 8
    for c in live:
        sa, sb = time_scopes(c.query_a), time_scopes(c.query_b)
        assert sa == sb and len(sa) == 1, (c.query_a, c.query_b)
        assert time_scopes(c.expected_answer_a) <= sa, (c.query_a, c.expected_answer_a)
    assert time_scopes("Is the Louvre open right now?") != time_scopes("Is the Louvre open today?")


def test_mixed_time_scopes_in_a_live_seed_are_one_line_input_errors(tmp_path, monkeypatch):
    src = cv.SOURCE_FILE.read_text(encoding="utf-8")
    bad = tmp_path / "conversational.yaml"
    bad.write_text(src.replace('"Will {place} be open today?"', '"Is {place} open right now?"'), encoding="utf-8")
    assert_input_error(monkeypatch, cv, "SOURCE_FILE", bad, cv._seed,
                       r"\(opening_hours\): wordings of a time-sensitive request must share one time scope")
    bad.write_text(src.replace('answer: "Current weather in {city}', 'answer: "Today\'s weather in {city}'), encoding="utf-8")
    assert_input_error(monkeypatch, cv, "SOURCE_FILE", bad, cv._seed,
                       r"\(weather_now\): .* speaks of today but the wordings ask about now")


def test_unrelated_pairs_share_no_theme():
    # cb-conversational-0214 paired "nervous about my job interview" with "rough day because of work".
    themes = {s["id"]: set(s["themes"]) for s in SEEDS}
    owner = _seed_of_text()
    rows = [c for c in built(cv) if c.label == "UNRELATED"]
    assert rows
    for c in rows:
        a, b = owner[c.query_a], owner[c.query_b]
        assert a != b and not themes[a] & themes[b], (a, b, themes[a] & themes[b])
        assert {a, b} != {"interview_nerves", "bad_day"}
    assert themes["interview_nerves"] & themes["bad_day"]


def test_hard_wordings_take_the_b_side_of_the_first_paraphrase_pairs():
    # issue 17 item 5: paraphrases that share few words ("Where is my order?" / "Can you tell me
    # where my parcel is?"), with the same slot value, so the same rubric and answer
    with_hard = [s for s in SEEDS if s.get("hard_wordings")]
    assert len(with_hard) >= 30
    hard_texts = {cv.hard_wording(s, n): s for s in with_hard for n in range(len(s["hard_wordings"]))}
    assert all(s["value"] in t for t, s in hard_texts.items())
    para = [c for c in built(cv) if c.label == "PARA_SAFE"]
    hard = [c for c in para if c.provenance.template_id == "hard_rewording"]
    assert hard and all(c.query_b in hard_texts for c in hard)
    for c in hard:
        s = hard_texts[c.query_b]
        assert c.provenance.source_record == s["id"] and c.verification_payload["criteria_b"] == cv.criteria(s)
        assert c.expected_answer_a == c.expected_answer_b == cv.answer(s) and verify(c).passed
    assert any(c.provenance.template_id == "rewording" for c in para)
    plain = next(s for s in SEEDS if not s.get("hard_wordings"))
    assert cv.hard_wording(plain, 0) is None and cv.hard_wording(with_hard[0], 5) is None


def test_a_hard_wording_without_the_slot_is_one_line_input_error(tmp_path, monkeypatch):
    bad, text = _edited(tmp_path, '"My flat has {light} all day.', '"My flat is dark all day.')
    assert_input_error(monkeypatch, cv, "SOURCE_FILE", bad, cv._seed, r"seeds\[0\] \(houseplant\): wording .* lacks the slot")
    bad.write_text(text.replace("    hard_wordings:\n", "    hard_wording:\n", 1), encoding="utf-8")
    assert_input_error(monkeypatch, cv, "SOURCE_FILE", bad, cv._seed, r"seeds\[0\] \(houseplant\): keys must be")
