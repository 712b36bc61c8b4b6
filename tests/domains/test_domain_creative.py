"""creative: every row is policy_no_cache ("creative"); the 5-class label still verifies by rubric."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from domains import creative as cr
from domains.base import LABELS
from domains.verify import verify

from domain_helpers import assert_family_rule, assert_input_error, assert_quota, assert_rebuild_same, built

BRIEFS = cr.briefs()


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_meets_quota(profile):
    rep = assert_quota("creative", profile)
    assert all(c.construction_method == "adversarial_perturbation" for c in rep.kept["ADVERSARIAL"])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(BRIEFS), st.sampled_from(sorted(cr.OPERATORS)), st.integers(0, 30))
def test_operators_change_request_and_rubric(brief, op, phrasing):
    out = cr.OPERATORS[op].apply(brief)
    if out is None:  # the operator does not apply (no character, form-bound extra)
        assert op != "form_swap" or brief.get("form_bound")
    assume(out is not None)
    new, params = out
    assert params["from"] != params["to"]
    assert cr.query(new, phrasing) != cr.query(brief, phrasing)
    assert cr.criteria(new) != cr.criteria(brief)


def test_every_row_is_policy_miss_whatever_its_label():
    cands = built(cr)
    assert {c.label for c in cands} == set(LABELS)
    for c in cands:
        assert c.verification_method == "policy_no_cache" and c.binary_label == "MISS"
        assert c.verification_payload["policy"] == "creative" and cr.policy(c) == "creative"
    c = cands[0]
    assert not verify(c.with_(verification_payload={**c.verification_payload, "policy": "mutation"})).passed


def test_underlying_rubric_checks_the_label():
    cands = built(cr)
    for lab, wrong in (("EQUIV", "ADVERSARIAL"), ("PARA_SAFE", "RELATED_UNSAFE"), ("RELATED_UNSAFE", "PARA_SAFE"),
                       ("ADVERSARIAL", "EQUIV"), ("UNRELATED", "EQUIV")):
        c = next(c for c in cands if c.label == lab)
        assert verify(c).passed
        out = verify(c.with_(label=wrong))
        assert not out.passed and out.reason.startswith("underlying_"), (lab, out)


def test_split_rule_and_distinct_pairs():
    assert_family_rule(built(cr))


def test_deterministic():
    assert_rebuild_same(lambda: built(cr), cr._build, cr._seed)


def test_bad_brief_is_one_line_input_error(tmp_path, monkeypatch):
    text = cr.SOURCE_FILE.read_text(encoding="utf-8").replace("form: haiku, subject: autumn leaves", "form: epic, subject: autumn leaves")
    bad = tmp_path / "creative.yaml"
    bad.write_text(text, encoding="utf-8")
    assert_input_error(monkeypatch, cr, "SOURCE_FILE", bad, cr._seed, r"briefs\[0\]")


# Near-synonym forms named independently of the YAML's form_groups, so that emptying that section
# cannot hide the problem the audit found (cb-creative-0124/0128/0129/0149: motto -> slogan,
# slogan -> tagline were labelled ADVERSARIAL though the briefs ask for the same thing).
KNOWN_SYNONYMS = ({"slogan", "tagline", "motto"},)


def _same_group(a: str, b: str) -> bool:
    return b in cr.form_group(a) or any({a, b} <= s for s in KNOWN_SYNONYMS)


@pytest.mark.parametrize("brief", BRIEFS, ids=lambda b: f"{b['form']}:{b['subject']}")
def test_form_swap_never_pairs_synonym_forms(brief):
    out = cr.OPERATORS["form_swap"].apply(brief)
    if out is None:
        assert brief.get("form_bound")
        return
    _, params = out
    assert not _same_group(params["from"], params["to"]), params


def test_no_adversarial_row_swaps_synonym_forms():
    rows = [c for c in built(cr) if c.provenance.operator == "form_swap"]
    assert rows
    bad = [(c.provenance.operator_params, c.query_a) for c in rows
           if _same_group(c.provenance.operator_params["from"], c.provenance.operator_params["to"])]
    assert not bad, bad[:3]
    # Every slogan-family brief still gets a swap: to the one form outside the synonym group.
    slogans = [c for c in rows if c.subcategory == "slogan"]
    assert slogans and {c.provenance.operator_params["from"] for c in slogans} == {"slogan", "tagline", "motto", "jingle"}


def test_form_groups_list_the_slogan_synonyms():
    assert set(cr.form_group("slogan")) == {"slogan", "tagline", "motto"}
    assert cr.form_group("jingle") == ("jingle",)


def test_bad_form_group_is_one_line_input_error(tmp_path, monkeypatch):
    text = cr.SOURCE_FILE.read_text(encoding="utf-8").replace("  - [slogan, tagline, motto]", "  - [slogan, catchphrase]")
    bad = tmp_path / "creative.yaml"
    bad.write_text(text, encoding="utf-8")
    assert_input_error(monkeypatch, cr, "SOURCE_FILE", bad, cr._seed, r"form_groups\[0\]: form 'catchphrase'")
