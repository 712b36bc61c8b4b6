"""The loader registry is the one place a corpus's licence, commercial use and real-traffic nature
are written: every loader declares them, and the licence table and the mining corpus list are
derived from it."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from domains.corpora import licences, mining
from sources.base import Loader, PromptRecord
from sources.registry import LOADERS

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parents[2] / "sources" / "fixtures"


@pytest.mark.parametrize("name", LOADERS.names())
def test_each_loader_declares_licence_commercial_and_real_traffic(name):
    loader = LOADERS[name]
    assert loader.name == name and loader.licence.strip()
    assert type(loader.commercial) is bool and type(loader.real_traffic) is bool


def test_the_flags_have_no_default():
    # A new loader that forgets either flag fails at import instead of silently counting as one kind.
    with pytest.raises(TypeError, match="commercial"):
        Loader("x", "X", "CC0", "x.json", lambda root: [], lambda reader: [], real_traffic=False)
    with pytest.raises(TypeError, match="real_traffic"):
        Loader("x", "X", "CC0", "x.json", lambda root: [], lambda reader: [], commercial=True)


def test_licences_are_the_loaders():
    assert set(licences.LICENCES) == {"curated", *LOADERS.names()}
    for name in LOADERS:
        assert licences.LICENCES[name] == (LOADERS[name].licence, LOADERS[name].commercial), name
    assert licences.LICENCES["curated"] == (licences.CURATED_LICENCE, True)


def test_corpora_that_forbid_commercial_use():
    # Flipping a flag is a licensing decision: this list changes only with a reviewed reason.
    assert {n for n in LOADERS if not LOADERS[n].commercial} == {"mrpc", "qqp", "sharegpt", "triviaqa"}


def test_mining_mines_the_real_traffic_loaders():
    assert mining.CORPORA == tuple(n for n in LOADERS if LOADERS[n].real_traffic)
    assert set(mining.CORPORA) == {"sharegpt", "lmsys_arena", "wildchat"}


def test_real_traffic_loaders_are_the_ones_yielding_user_prompts():
    from sources.datasets_dir import DatasetsDir

    ddir = DatasetsDir(FIXTURES)
    for name in LOADERS:
        first = next(iter(ddir.load(name)))
        assert isinstance(first, PromptRecord) == LOADERS[name].real_traffic, name


def test_lm_row_on_corpus_seeds_follows_the_loaders_licence():
    # An LM row's seeds licence is the text the loader stamped on its records; it must be found in the
    # table as is (a retyped, drifted string made every such row non-commercial).
    from domains.base import Candidate, Provenance

    row = Candidate(domain="conversational", subcategory="x", label="EQUIV", query_a="a", query_b="b",
                    expected_answer_a="x", expected_answer_b="x", rationale="r", verification_method="rubric",
                    verification_payload={}, construction_method="lm_generated",
                    source="lm:HuggingFaceTB/SmolLM2-135M-Instruct", real_world_grounding="synthetic",
                    provenance=Provenance("lm", "1"), licence=LOADERS["wildchat"].licence)
    assert licences.commercial_ok(row)
    assert not licences.commercial_ok(replace(row, licence=LOADERS["sharegpt"].licence))
