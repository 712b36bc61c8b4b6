"""Corpus generators (domains/corpora): each mapping on the fixtures, the embedded default
unchanged, every generator's rows verified on the real corpora, and --commercial-only."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from domains import get_domain
from domains.base import GenContext
from domains.corpora import benchmarks, bfcl, intents, licences, xquad
from domains.verify import verify

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parents[1] / "sources" / "fixtures"
REAL = Path("/work/shared/datasets")
BUILDS = [("qa_factual", benchmarks.ambignq_build), ("qa_open", benchmarks.qa_open_build),
          ("conversational", benchmarks.conversational_build), ("conversational", intents.conversational_build),
          ("multilingual", intents.multilingual_build), ("multilingual", xquad.multilingual_build),
          ("tool", bfcl.tool_build)]


@pytest.fixture(scope="module")
def fixtures():
    from sources.datasets_dir import DatasetsDir

    return DatasetsDir(FIXTURES)


def ctx(domain, datasets, need=None):
    return GenContext(domain=domain, profile="v1.1", need=need or {}, datasets=datasets)


def by_record(cands):
    return {c.provenance.source_record: c for c in cands}


def test_embedded_default_unchanged():
    for domain, build in BUILDS:
        assert build(ctx(domain, None)) == ([], Counter())
    for domain in ("qa_factual", "qa_open", "conversational", "multilingual", "tool"):
        gens = get_domain(domain).generators
        corpus = [m for m in gens if m in ("existing_benchmark",) or (m == "intent_bottom_up" and domain != "tool")]
        assert corpus and all(list(gens[m](ctx(domain, None))) == [] for m in corpus)


def test_every_fixture_row_verifies_and_is_documented(fixtures):
    for domain, build in BUILDS:
        cands, _ = build(ctx(domain, fixtures))
        assert cands, (domain, build.__name__)
        for c in cands:
            assert verify(c).passed, (c.query_a, c.query_b, verify(c))
            assert c.source in licences.LICENCES and c.licence
            assert c.provenance.source_file and c.provenance.source_record and c.provenance.original_label is not None


def test_qqp_mapping(fixtures):
    cands, _ = benchmarks.qa_open_build(ctx("qa_open", fixtures))
    labels = {(c.query_a, c.query_b): (c.label, c.provenance.original_label) for c in cands}
    assert labels[("Is coffee bad for your heart?", "Does drinking coffee harm the heart?")] == ("PARA_SAFE", 1)
    assert labels[("What is the capital of Peru?", "What is the population of Peru?")] == ("ADVERSARIAL", 0)
    for c in cands:
        assert c.verification_method == "rubric" and c.verification_payload["benchmark_label"] == c.provenance.original_label
        assert (c.label in ("PARA_SAFE", "EQUIV")) == (c.provenance.original_label == 1)


def test_decide_rules():
    assert benchmarks.decide("qqp", 1, "How do I learn Python?", "What is the best way to learn Python?") == ("PARA_SAFE", "")
    assert benchmarks.decide("qqp", 0, "How do I learn Python?", "How do I learn Java?")[0] == "ADVERSARIAL"
    assert benchmarks.decide("qqp", 0, "How do I learn Python?", "Why is the sky blue at noon?")[0] == "RELATED_UNSAFE"
    assert benchmarks.decide("paws", 0, "Cats chase dogs in parks.", "Why is the sky blue at noon?") == (None, "label0_low_overlap_undecided")
    assert benchmarks.decide("mrpc", 0, "Tom sold the farm to Mara.", "Mara sold the farm to Tom.")[0] == "ADVERSARIAL"
    assert benchmarks.decide("qqp", 1, "how do i learn python", "How do I learn Python?")[0] == "EQUIV"


def test_paws_mrpc_and_paws_x_mapping(fixtures):
    conv, _ = benchmarks.conversational_build(ctx("conversational", fixtures))
    assert {c.source for c in conv} == {"paws", "mrpc"}
    adv = [c for c in conv if c.label == "ADVERSARIAL"]
    assert adv and all(c.provenance.original_label == 0 and c.verification_payload["word_overlap"] >= benchmarks.HIGH for c in adv)
    ml, _ = benchmarks.paws_x_build(ctx("multilingual", fixtures))
    assert ml and {c.label for c in ml} <= {"PARA_SAFE", "ADVERSARIAL", "EQUIV"} and {c.source for c in ml} == {"paws_x"}


def test_ambignq_mapping(fixtures):
    cands, _ = benchmarks.ambignq_build(ctx("qa_factual", fixtures))
    rows = {(c.query_a, c.query_b): c for c in cands}
    c = rows[("Who won the 1998 village chess cup, men's title?", "Who won the 1998 village chess cup, women's title?")]
    assert c.label == "RELATED_UNSAFE" and c.verification_method == "alias_exact_match"
    assert c.verification_payload == {"aliases_a": ["Tom Reyes"], "aliases_b": ["Ada Lin", "A. Lin"]}
    # a pair claimed HIT with these answers must fail the verifier
    assert not verify(c.with_(label="PARA_SAFE")).passed


def test_intent_mapping_from_canonical_frames(fixtures):
    cands, _ = intents.conversational_build(ctx("conversational", fixtures))
    assert cands
    for c in cands:
        fa, fb = json.loads(c.expected_answer_a), json.loads(c.expected_answer_b)
        if c.label in ("PARA_SAFE", "EQUIV"):
            assert fa == fb
        elif c.label == "UNRELATED":
            assert fa["intent"] != fb["intent"]
        elif c.label == "ADVERSARIAL":
            assert fa["intent"] == fb["intent"] and fa["slots"].keys() == fb["slots"].keys()
            assert sum(fa["slots"][k] != fb["slots"][k] for k in fa["slots"]) == 1


def test_slot_values_and_massive_cross_language(fixtures):
    assert not intents.clearly_different("seven am", "7 am")
    assert not intents.clearly_different("paris", "paris france")
    assert intents.clearly_different("seven am", "eight am")
    ml, _ = intents.multilingual_build(ctx("multilingual", fixtures))
    cross = [c for c in ml if c.verification_payload.get("lang_a", c.verification_payload.get("underlying_payload", {}).get("lang_a")) == "en"]
    assert cross and all(c.label == "ADVERSARIAL" for c in cross)


def test_bfcl_schema_mapping_and_calls(fixtures):
    schema = bfcl.to_json_schema({"type": "dict", "properties": {"x": {"type": "float"}, "t": {"type": "tuple",
                                  "items": {"type": "any"}}}, "required": ["x"]})
    assert schema == {"type": "object", "properties": {"x": {"type": "number"}, "t": {"type": "array", "items": {}}},
                      "required": ["x"]}
    with pytest.raises(bfcl.UnsupportedType):
        bfcl.to_json_schema({"type": "HashMap"})
    # optional ("" accepted) is left out, unless the schema requires it; coupled alternatives are refused
    assert bfcl.ground_call([{"f": {"a": [1], "u": ["km", ""]}}])[:2] == ("f", {"a": 1})
    assert bfcl.ground_call([{"f": {"a": [1], "u": ["km", ""]}}], frozenset({"u"}))[:2] == ("f", {"a": 1, "u": "km"})
    assert bfcl.ground_call([{"f": {"w": [12, 2], "h": [2, 12]}}]) is None
    cands, drops = bfcl.tool_build(ctx("tool", fixtures))
    assert cands and drops["category_not_single_call"] > 0
    for c in cands:
        assert c.verification_method in ("json_schema_call", "policy_no_cache") and c.tools_a and c.tools_b
        assert verify(c).passed
        assert not verify(c.with_(label="PARA_SAFE" if c.label != "PARA_SAFE" else "UNRELATED")).passed


def test_xquad_cross_language(fixtures):
    cands, _ = xquad.xquad_build(ctx("multilingual", fixtures))
    adv = [c for c in cands if c.label == "ADVERSARIAL"]
    assert adv
    for c in adv:
        p = c.verification_payload
        assert p["lang_a"] == "en" and p["lang_b"] != "en" and c.source == "xquad"
        assert not verify(c.with_(label="PARA_SAFE")).passed


def test_caps_follow_need(fixtures):
    small, _ = benchmarks.conversational_build(ctx("conversational", fixtures, {"PARA_SAFE": 4, "ADVERSARIAL": 4}))
    assert Counter(c.label for c in small)["PARA_SAFE"] <= 2  # 0.25 * 4 per corpus share, rounded up


def test_generation_is_deterministic(fixtures):
    from sources.datasets_dir import DatasetsDir

    for domain, build in BUILDS:
        a = [c.key for c in build(ctx(domain, fixtures))[0]]
        b = [c.key for c in build(ctx(domain, DatasetsDir(FIXTURES)))[0]]
        assert a == b


def test_commercial_only_drops_qqp_and_mrpc(fixtures):
    qqp, _ = benchmarks.qa_open_build(ctx("qa_open", fixtures))
    conv, _ = benchmarks.conversational_build(ctx("conversational", fixtures))
    assert qqp and not any(licences.commercial_ok(c) for c in qqp)
    assert not any(licences.commercial_ok(c) for c in conv if c.source == "mrpc")
    assert all(licences.commercial_ok(c) for c in conv if c.source == "paws")
    assert not licences.commercial_ok(qqp[0].with_(source="somewhere_unknown"))
    assert not licences.commercial_ok(qqp[0].with_(source="paws+sharegpt"))


def test_commercial_only_keeps_lm_rows_of_an_open_model_on_open_seeds(fixtures):
    # An LM row's source is "lm:<model>": the model's licence and the seeds' licence both decide.
    qqp, _ = benchmarks.qa_open_build(ctx("qa_open", fixtures))
    curated = licences.LICENCES["curated"][0]
    smol = qqp[0].with_(source="lm:HuggingFaceTB/SmolLM2-135M-Instruct", licence=curated)
    assert licences.commercial_ok(smol)
    assert not licences.commercial_ok(smol.with_(source="lm:some/unknown-model"))
    assert not licences.commercial_ok(smol.with_(licence=licences.LICENCES["qqp"][0]))


def test_commercial_only_in_generation_asset():
    from dagster import build_asset_context

    from assets.generation import candidate_rows
    from pipeline.resources import BuildSettings

    def run(flag):
        extra = {"llm_mode": "none"} if "llm_mode" in BuildSettings.model_fields else {}
        settings = BuildSettings(profile="v1.1", datasets_dir=str(FIXTURES), commercial_only=flag, **extra)
        out = candidate_rows(build_asset_context(partition_key="qa_open"), settings)
        return out.value

    plain, only = run(False), run(True)
    assert any(c.source == "qqp" for c in plain["candidates"])
    assert not any(c.source == "qqp" for c in only["candidates"])
    assert only["drops"]["non_commercial_licence:qqp"] > 0


@pytest.mark.skipif(not REAL.is_dir(), reason="real corpora not present at /work/shared/datasets")
def test_real_corpora_yield_verified_rows():
    from pipeline.config import load_profile
    from sources.datasets_dir import DatasetsDir

    ds, prof = DatasetsDir(REAL), load_profile("v1.1")
    for domain, build in BUILDS:
        cands, drops = build(ctx(domain, ds, dict(prof.matrix[domain])))
        assert len(cands) >= 20, (domain, build.__name__, drops)
        assert all(verify(c).passed for c in cands)
