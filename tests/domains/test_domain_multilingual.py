"""multilingual: seven-language items, language/direction swap operators, translated exact match,
policy and quota."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from domains.families import caps_for
from domains import get_domain
from domains import multilingual as ml
from domains.base import LABELS, normalize_text, stable_rng
from domains.verify import verify
from pipeline.core.config import load_profile
from pipeline.core.errors import InputError

from domain_helpers import assert_family_rule, assert_quota, kept

DOMAIN = "multilingual"


def _kept(profile: str, domain: str = DOMAIN):
    return kept(domain, profile)


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_quota_with_margin_and_no_drops(profile):
    assert_quota(DOMAIN, profile, margin=1.1, floor=40)


def test_languages_family_rule_and_rows():
    _, rep = _kept("lifted40")
    cands = [c for lab in LABELS for c in rep.kept[lab]]
    assert_family_rule(cands)
    langs = {c.verification_payload[k] for c in cands for k in ("lang_a", "lang_b")}
    assert len(langs) >= 6
    for c in cands:
        p = c.verification_payload
        assert c.query_a != c.query_b and c.real_world_grounding
        if c.label in ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE"):
            assert p["lang_a"] == p["lang_b"]      # HIT pairs and RELATED stay within one language
    ops = {c.provenance.operator for c in rep.kept["ADVERSARIAL"]}
    assert ops == {"language_swap", "direction_swap"}
    for c in rep.kept["ADVERSARIAL"]:
        p = c.verification_payload
        if c.provenance.operator == "language_swap":
            assert p["lang_a"] != p["lang_b"] and c.provenance.operator_params["to"] == p["lang_b"]


def test_every_pair_has_a_non_english_side():
    # cb-multilingual-0007/0016/0036/0081...: 21 committed rows paired English with English ("Which
    # language is spoken in Russia?" and its lower-cased copy), which the qa domains already cover.
    pools = ml._pools(lambda *names: stable_rng(DOMAIN, *names))
    cands = [c for pool in pools.values() for c in pool]
    for profile in ("v1.1", "lifted40"):
        cands += [c for lab in LABELS for c in _kept(profile)[1].kept[lab]]
    langs = [(c.verification_payload["lang_a"], c.verification_payload["lang_b"]) for c in cands]
    assert ("en", "en") not in langs
    # English stays as one side of a translation and of cross-language UNRELATED pairs
    english = {c.label for c, pair in zip(cands, langs) if "en" in pair}
    assert english >= {"ADVERSARIAL", "UNRELATED"}
    assert ml.english_only(ml._index()[("capital.france", "en")]) and not ml.english_only(
        ml._index()[("capital.france", "en")], ml._index()[("capital.france", "de")])


def test_no_query_text_shared_with_the_other_qa_domains():
    _, rep = _kept("lifted40")
    mine = {normalize_text(q) for lab in LABELS for c in rep.kept[lab] for q in (c.query_a, c.query_b)}
    for other in ("qa_factual", "qa_open"):
        _, orep = _kept("lifted40", other)
        theirs = {normalize_text(q) for lab in LABELS for c in orep.kept[lab] for q in (c.query_a, c.query_b)}
        assert not mine & theirs, sorted(mine & theirs)[:5]


def test_deterministic():
    caps = tuple(sorted(caps_for(dict(load_profile("lifted40").matrix[DOMAIN])).items()))
    a = [c.key for c in ml._build(caps)]
    ml._build.cache_clear()
    ml.load_items.cache_clear()
    ml._index.cache_clear()
    ml._data.cache_clear()
    assert a == [c.key for c in ml._build(caps)]


def test_every_item_in_every_language():
    items = ml.load_items()
    by_key = {}
    for it in items:
        by_key.setdefault(it.key, set()).add(it.lang)
    assert all(v == set(ml._data()["languages"]) for v in by_key.values())
    assert len(by_key) >= 40


SEEDS = [ml.Seed(it, i) for it in ml.load_items() for i in range(2)]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 2**32))
def test_every_operator_changes_the_expected_answer(seed, n):
    for name, op in sorted(ml.OPERATORS.items()):
        v = op.apply(seed, stable_rng("test", n))
        if v is None:
            if name == "language_swap":   # only when every translation shares an answer form
                others = [it for it in ml.load_items() if it.key == seed.item.key and it.lang != seed.item.lang]
                assert others and all(o.forms & seed.item.forms for o in others)
            else:
                assert not seed.item.topic.startswith("day_")
            continue
        assert v.text in v.item.phrasings and v.text != seed.text
        assert not v.item.forms & seed.item.forms      # the answer really differs, in every form
        if name == "language_swap":
            assert v.item.key == seed.item.key and v.item.lang != seed.item.lang
        else:
            assert v.item.lang == seed.item.lang and not (v.item.forms & seed.item.forms)
            back = re.sub(rf"(?<!\w){re.escape(v.params['to'])}(?!\w)", v.params["from"], v.text, count=1)
            assert back == seed.text
        c = ml._candidate("ADVERSARIAL", seed.item, seed.text, v.item, v.text, "adversarial_perturbation",
                          "t", "t", operator=name, params=v.params)
        assert verify(c).passed


def test_operator_examples():
    idx = ml._index()
    v = ml.OPERATORS["direction_swap"].apply(ml.Seed(idx[("day_after.monday", "it")], 0), stable_rng("t"))
    assert v.text == "Che giorno viene prima di lunedì?" and v.item.answers[0] == "domenica"
    v = ml.OPERATORS["language_swap"].apply(ml.Seed(idx[("capital.germany", "en")], 0), stable_rng("t"))
    assert v.item.key == "capital.germany" and v.item.lang != "en"


def test_verifier_accepts_hits_and_rejects_each_miss_kind():
    _, rep = _kept("v1.1")
    for lab in ("EQUIV", "PARA_SAFE"):
        hit = rep.kept[lab][0]
        assert verify(hit).passed and hit.binary_label == "HIT"
        assert verify(hit.with_(label="UNRELATED")).reason == "answers_equal_for_miss"
    for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
        miss = rep.kept[lab][0]
        assert verify(miss).passed and miss.binary_label == "MISS"
        assert verify(miss.with_(label="EQUIV")).reason == "answers_differ_for_hit"
    # A translation whose answer is spelt differently misses; a HIT across languages never passes.
    idx = ml._index()
    en, pt = idx[("capital.portugal", "en")], idx[("capital.portugal", "pt")]
    c = ml._candidate("ADVERSARIAL", en, en.phrasings[0], pt, pt.phrasings[0], "adversarial_perturbation", "t", "t")
    assert verify(c).passed and not verify(c.with_(label="PARA_SAFE")).passed


@pytest.mark.parametrize("key,la,lb", [("capital.spain", "pt", "en"), ("counting.year_months", "de", "en"),
                                       ("counting.hour_minutes", "pt", "nl"), ("counting.week_days", "de", "nl"),
                                       ("language.italy", "es", "it")])
def test_translation_sharing_an_answer_form_is_not_a_miss(key, la, lb):
    """The audited rows (Madrid pt->en, '12' de->en, '60' pt->nl, '7' de->nl): one cached answer
    form serves both requests, so no MISS label verifies, and a HIT fails on the language."""
    idx = ml._index()
    a, b = idx[(key, la)], idx[(key, lb)]
    assert a.forms & b.forms
    c = ml._candidate("ADVERSARIAL", a, a.phrasings[0], b, b.phrasings[0], "adversarial_perturbation", "t", "t")
    for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
        out = verify(c.with_(label=lab))
        assert not out.passed and out.reason == "answers_equal_for_miss" and out.evidence["shared_forms"]
    assert verify(c.with_(label="PARA_SAFE")).reason == "answers_differ_for_hit"
    # The operator never offers such a translation (Madrid and the counts: none at all).
    sharing = {it.lang for it in ml.load_items() if it.key == key and it.forms & a.forms}
    for n in range(20):
        v = ml.OPERATORS["language_swap"].apply(ml.Seed(a, n % 2), stable_rng("t", n))
        assert v is None or v.item.lang not in sharing
    if key == "capital.spain" or key.startswith("counting."):
        assert v is None


def test_translated_exact_match_rules():
    idx = ml._index()
    de, de_lang, fr = idx[("capital.germany", "de")], idx[("language.germany", "de")], idx[("capital.germany", "fr")]
    same_lang_shared = ml._candidate("EQUIV", de, de.phrasings[0], de, de.phrasings[1], "curated", "t", "t")
    assert verify(same_lang_shared).passed                                  # HIT: shared form, same language
    assert not verify(same_lang_shared.with_(label="RELATED_UNSAFE")).passed
    cross_shared = ml._candidate("ADVERSARIAL", de, de.phrasings[0], fr, fr.phrasings[0], "curated", "t", "t")
    assert de.forms & fr.forms and not verify(cross_shared).passed         # 'Berlin' in both: no MISS
    assert not verify(cross_shared.with_(label="EQUIV")).passed            # nor a HIT: other language
    disjoint = ml._candidate("RELATED_UNSAFE", de, de.phrasings[0], de_lang, de_lang.phrasings[0], "curated", "t", "t")
    assert verify(disjoint).passed and not verify(disjoint.with_(label="PARA_SAFE")).passed
    no_lang = disjoint.with_(verification_payload={"aliases_a": ["x"], "aliases_b": ["y"]})
    assert verify(no_lang).reason == "payload_missing_lang"


def test_no_miss_row_has_overlapping_answer_forms():
    for profile in ("v1.1", "lifted40"):
        _, rep = _kept(profile)
        for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
            for c in rep.kept[lab]:
                p = c.verification_payload
                fa = {normalize_text(x) for x in [c.expected_answer_a, *p["aliases_a"]]}
                fb = {normalize_text(x) for x in [c.expected_answer_b, *p["aliases_b"]]}
                assert not fa & fb, (lab, c.query_a, c.query_b, sorted(fa & fb))


def test_policy_forces_miss():
    _, rep = _kept("v1.1")
    spec = get_domain(DOMAIN)
    assert all(spec.policy(c) is None for lab in LABELS for c in rep.kept[lab])
    it = ml._index()[("capital.france", "de")]
    live = ml._candidate("EQUIV", it, "Welcher Tag ist heute?", it, "welcher Tag ist heute", "curated", "t", "t")
    assert spec.policy(live) == "time_sensitive"
    assert live.verification_method == "policy_no_cache" and live.binary_label == "MISS"
    assert verify(live).passed


def test_bad_input_is_one_line_error(tmp_path, monkeypatch):
    src = ml.SOURCE_FILE.read_text(encoding="utf-8")
    bad = tmp_path / "multilingual.yaml"
    bad.write_text(src.replace("  nl: [maandag, dinsdag, woensdag, donderdag, vrijdag, zaterdag, zondag]\n", ""),
                   encoding="utf-8")
    monkeypatch.setattr(ml, "SOURCE_FILE", bad)
    for f in (ml._data, ml.load_items):
        f.cache_clear()
    try:
        with pytest.raises(InputError, match=r"^sources/curated/multilingual.yaml:days.nl: 0 day names\. "):
            ml.load_items()
    finally:
        for f in (ml._data, ml.load_items):
            f.cache_clear()
