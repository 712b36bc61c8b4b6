"""real_traffic_mined: the deterministic labelling rules, mining on fixtures (plus planted
near-duplicates), determinism across hash seeds, and mining on the real corpora."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from domains.base import GenContext, canonical_json
from domains.corpora import mining as M
from domains.verify import verify
from pipeline.core.paths import FIXTURES, PROJECT_ROOT
from sources.datasets_dir import DatasetsDir


@pytest.mark.parametrize("a, b, label, rule", [
    ("How do I reverse a list in Python?", "how do i reverse a list in python", "EQUIV", "surface_variant"),
    ("Explain  recursion,  please!", "explain recursion please", "EQUIV", "surface_variant"),
    ("What is 17 times 23?", "What is 17 times 24?", "ADVERSARIAL", "number_change"),
    ("Sort the list in ascending order.", "Sort the list in descending order.", "ADVERSARIAL", "direction_swap"),
    ("Convert 30 degrees Celsius to Fahrenheit", "Convert 30 degrees Fahrenheit to Celsius", None, "word_order_change"),
    ("Write a quicksort in Python.", "Write a quicksort in Rust.", "ADVERSARIAL", "language_swap"),
    ("Draft a thank-you note to Maria for the gift.", "Draft a thank-you note to Sofia for the gift.", "ADVERSARIAL", "entity_change"),
    ("Case: Emily hit Jamal. Is Emily guilty?", "Case: Jamal hit Emily. Is Jamal guilty?", "ADVERSARIAL", "role_swap"),
    ("Review the HIA NSW contract clause", "Review the NSW HIA contract clause", None, "word_order_change"),
    ("Hello there", "Hi there", None, "one_token_undecided"),
    ("Write a python script", "Write me an amazing python script", None, "multi_token_change"),
    ("List the planets", "List the planets briefly", None, "insertion_or_deletion"),
    ("Explain contract clause 23 of the HIA contract", "Explain contract clause of the HIA contract",
     "ADVERSARIAL", "number_dropped"),
    ("Explain contract clause of the HIA contract", "Explain contract clause 23 of the HIA contract",
     "ADVERSARIAL", "number_dropped"),
    ("Explain clause 23 of the contract", "Explain clause of the contract briefly", None, "insertion_or_deletion"),
    ("Same text", "Same text", None, "identical_text"),
])
def test_rules(a, b, label, rule):
    d = M.classify(a, b)
    assert (d.label, d.rule) == (label, rule)


def test_sentence_initial_capitals_are_not_names():
    # "Write" vs "Create" at a sentence start is a paraphrase, never an entity change.
    assert M.classify("Note. Write a plan.", "Note. Create a plan.").label is None


def test_operators_and_decimals_are_not_surface():
    assert M.classify("Solve x + 2 = 8", "Solve x - 2 = 8").label != "EQUIV"
    assert M.classify("Round 3.5 up", "Round 35 up").label != "EQUIV"


@pytest.mark.parametrize("text, route", [
    ("Write me a short poem about autumn leaves", ("creative", "creative")),
    ("Can you compose a song for my sister's birthday?", ("creative", "creative")),
    ("What's the weather in Lisbon today?", ("conversational", "time_sensitive")),
    ("What is the current price of bitcoin?", ("conversational", "time_sensitive")),
    ("Explain how a hash map works", ("conversational", None)),
])
def test_route(text, route):
    assert M.route(text) == route


def _candidate(a, b):
    from domains.corpora.mining import single, turns

    p = [turns.Turn("sharegpt", "x.json", "lic", f"r{i}", 0, f"r{i}", t, "first", False, ()) for i, t in enumerate((a, b))]
    return single.candidate(p[0], p[1], M.decide(a, b))


@pytest.mark.parametrize("a, b, domain, vm", [
    ("Give me 3 tips for sleeping better.", "give me 3 tips for sleeping better", "conversational", "rubric"),
    ("Give me 3 tips for sleeping better.", "Give me 5 tips for sleeping better.", "conversational", "rubric"),
    ("Write a poem about 2 cats.", "Write a poem about 3 cats.", "creative", "policy_no_cache"),
    ("Summarise clause 23 of the HIA contract.", "Summarise clause of the HIA contract.", "conversational", "rubric"),
    ("What is the weather in Oslo today?", "what is the weather in oslo today", "conversational", "policy_no_cache"),
    ("Write a sort that does not use recursion.", "Write a sort that does use recursion.", "conversational", "rubric"),
])
def test_candidates_verify(a, b, domain, vm):
    c = _candidate(a, b)
    assert (c.domain, c.verification_method, c.construction_method) == (domain, vm, "real_traffic_mined")
    assert verify(c).passed, verify(c)
    # The same candidate with the opposite HIT/MISS label must fail its verifier: the rubric decides.
    flipped = c.with_(label="ADVERSARIAL" if c.label == "EQUIV" else "EQUIV")
    assert not verify(flipped).passed


def test_no_datasets_yields_nothing():
    ctx = GenContext(domain="conversational", profile="v1.1", need={}, datasets=None)
    assert list(M.real_traffic_rows(ctx)) == [] and list(M.real_traffic_rows(replace(ctx, domain="creative"))) == []
    assert M.shards(None) == []


def test_fixture_shards_mine_without_pairs(tmp_path):
    ds = DatasetsDir(FIXTURES)
    assert M.shards(ds) == [
        "lmsys_arena/arena-hard-v0.1_question.jsonl", "lmsys_arena/arena-hard-v2.0_question.jsonl",
        "sharegpt/ShareGPT_V3_filtered_500.json", "sharegpt/sg_90k_part1_html_cleaned_lang_first_sampled_sorted.json",
        "wildchat/data/train-00000-of-00001.parquet"]
    results = [M.mine(ds, [s], cache_dir=tmp_path) for s in M.shards(ds)]
    assert sum(r.n_prompts for r in results) == 30  # 31 records, one ShareGPT record without a human turn
    drops = sum((Counter(r.drops) for r in results), Counter())
    assert Counter({k: n for k, n in drops.items() if not k.startswith(("unrelated:", "related:"))}) == \
        Counter({"empty_prompt": 1})
    # the fixtures hold no duplicate or near prompts: only pairs of unrelated (or same-subject) openings
    assert {c.provenance.template_id for r in results for c in r.candidates} <= {"unrelated", "related_topic"}
    assert {c.provenance.template_id for c in M.mine(ds, cache_dir=tmp_path).candidates} <= {"unrelated", "related_topic"}


def test_unrelated_openings_share_no_content_word_and_each_prompt_is_used_once(tmp_path):
    from domains.corpora.mining import unrelated
    from domains.text import content_stems

    mined = M.mine(DatasetsDir(FIXTURES), cache_dir=tmp_path)
    pairs = [c for c in mined.candidates if c.provenance.template_id == "unrelated"]
    assert pairs, "the fixtures' opening messages give unrelated pairs"
    texts = [t for c in pairs for t in (c.query_a, c.query_b)]
    assert len(texts) == len(set(texts))
    for c in pairs:
        assert c.label == "UNRELATED" and c.construction_method == "real_traffic_mined"
        assert not content_stems(c.query_a) & content_stems(c.query_b)
        assert c.source == c.provenance.source_file.split("/")[0]
    vecs = M.embed([c.query_a for c in pairs] + [c.query_b for c in pairs], tmp_path)
    n = len(pairs)
    assert all(float(vecs[i] @ vecs[n + i]) < unrelated.MAX_COSINE + 0.05 for i in range(n))


def test_the_related_rule_needs_a_shared_subject_and_own_asks_on_each_side():
    from domains.corpora.mining.unrelated import _why_not

    shared, a_own, b_own = frozenset({"python"}), frozenset({"sort", "list"}), frozenset({"read", "file"})
    assert _why_not(shared | a_own, shared | b_own, 0.55, "RELATED_UNSAFE") is None
    assert _why_not(a_own, b_own, 0.55, "RELATED_UNSAFE") == "no_shared_content_word"
    assert _why_not(shared | a_own, shared | {"read"}, 0.55, "RELATED_UNSAFE") == "too_few_own_content_words"
    assert _why_not(shared | a_own, shared | b_own, 0.8, "RELATED_UNSAFE") == "cosine_outside_band"
    assert _why_not(a_own, b_own, 0.1, "UNRELATED") is None
    assert _why_not(shared | a_own, shared | b_own, 0.1, "UNRELATED") == "shares_a_content_word"
    assert _why_not(a_own, b_own, 0.3, "UNRELATED") == "cosine_too_high"


PLANTED = [  # (a, b): found only through the ANN index (they are not duplicates after normalisation)
    ("Write a haiku about rain on a tin roof in 3 lines.", "Write a haiku about rain on a tin roof in 4 lines."),
    ("How many days are there between March 3 and April 9?", "How many days are there between March 3 and April 19?"),
    ("Translate the sentence 'the cat sleeps' into French.", "Translate the sentence 'the cat sleeps' into German."),
    ("What are the latest news about the Mars rover today?", "What are the latest news about the Mars rover today"),
]


def _fixtures_plus_planted(root: Path) -> DatasetsDir:
    shutil.copytree(FIXTURES / "sharegpt", root / "sharegpt")
    rows = json.loads((root / "sharegpt" / "ShareGPT_V3_filtered_500.json").read_text(encoding="utf-8"))
    for k, (a, b) in enumerate(PLANTED):
        rows += [{"id": f"pp{k}a", "conversations": [{"from": "human", "value": a}]},
                 {"id": f"pp{k}b", "conversations": [{"from": "human", "value": b}]}]
    (root / "sharegpt" / "ShareGPT_V3_filtered_500.json").write_text(json.dumps(rows), encoding="utf-8")
    return DatasetsDir(root)


def test_planted_pairs_are_found_routed_and_verified(tmp_path):
    ds = _fixtures_plus_planted(tmp_path / "ds")
    res = M.mine(ds, ["sharegpt/ShareGPT_V3_filtered_500.json"], cache_dir=tmp_path / "cache")
    got = {(c.domain, c.label, c.subcategory, c.provenance.source_record) for c in res.candidates
           if c.provenance.template_id not in ("unrelated", "related_topic")}   # pairs of distinct openings: their own test
    assert got == {
        ("creative", "ADVERSARIAL", "number_change", "pp0a#0|pp0b#0"),
        ("conversational", "ADVERSARIAL", "number_change", "pp1a#0|pp1b#0"),
        ("conversational", "ADVERSARIAL", "language_swap", "pp2a#0|pp2b#0"),
        ("conversational", "EQUIV", "time_sensitive+surface_variant", "pp3a#0|pp3b#0"),
    }
    assert res.sources["lsh"] > 0 and res.sources.get("ann", 0) >= 0
    for c in res.candidates:
        assert c.source == "sharegpt" and c.licence.startswith("none stated") and not c.provenance.scrubbed
        assert c.binary_label == "MISS" or c.label == "EQUIV"
    # The generators take mined rows only from ctx.mined: a datasets dir alone mines nothing.
    ctx = GenContext(domain="creative", profile="v1.1", need={}, datasets=ds)
    assert list(M.real_traffic_rows(ctx)) == []
    rows = list(M.real_traffic_rows(replace(ctx, mined=res)))
    assert [c.provenance.source_record for c in rows] == ["pp0a#0|pp0b#0"]


_DUMP = """
import sys, hashlib
from domains.base import canonical_json
from domains.corpora import mining as M
from sources.datasets_dir import DatasetsDir
ds = DatasetsDir(sys.argv[1])
out = [M.mine(ds, [s], cache_dir=sys.argv[2]) for s in M.shards(ds)]
blob = canonical_json([[c.key, c.provenance.to_dict(), c.verification_payload] for r in out for c in r.candidates]
                      + [sorted(r.drops.items()) for r in out])
print(len([c for r in out for c in r.candidates if c.provenance.template_id not in ("unrelated", "related_topic")]),
      hashlib.sha256(blob.encode()).hexdigest())
"""


def test_same_output_under_different_hash_seeds(tmp_path):
    _fixtures_plus_planted(tmp_path / "ds")
    M.mine(DatasetsDir(tmp_path / "ds"), ["sharegpt/ShareGPT_V3_filtered_500.json"], cache_dir=tmp_path / "cache")
    outs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "PYTHONPATH": str(PROJECT_ROOT)}   # the code under test, whatever the venv's install points at
        proc = subprocess.run([sys.executable, "-c", _DUMP, str(tmp_path / "ds"), str(tmp_path / "cache")],
                              capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
        outs.append(proc.stdout.split()[-2:])
    assert outs[0] == outs[1] and int(outs[0][0]) == len(PLANTED)


def test_bad_shard_name_is_one_line_error():
    from pipeline.core.errors import InputError

    with pytest.raises(InputError, match=r"^qqp/x\.json:file: not a real-traffic shard\. Use one of"):
        M.shard_records(DatasetsDir(FIXTURES), "qqp/x.json")
    with pytest.raises(InputError, match=r"^sharegpt/missing\.json@0-5:file: not a real-traffic shard"):
        M.shard_records(DatasetsDir(FIXTURES), "sharegpt/missing.json@0-5")


@pytest.mark.slow
@pytest.mark.corpora
def test_real_corpora_yield_pairs(shared_datasets):
    # One mining run over every turn of the shared corpora, through the build's steps and the
    # project's cache root (cold, it embeds ~31,000 distinct single-turn prompts with MiniLM, minutes
    # on two cores; in CI the extract test has just mined them: its prepared shards and their pairing
    # are served from the step cache).
    from pipeline.core import settings
    from pipeline.orchestration.cached_steps import paired_shards, prepared_shard

    ds, root = DatasetsDir(shared_datasets), settings.cache_root()
    names = M.shards(ds)
    assert sum("ShareGPT_V3_unfiltered_cleaned_split.json@" in s for s in names) >= 5  # the 125 MB file is several steps
    res = paired_shards(root, [prepared_shard(root, ds, s) for s in names])
    cands = res.candidates
    assert res.n_prompts > 61000  # every human turn is read, not only the first
    assert len(cands) >= 150 and sum(c.domain == "multi_turn" for c in cands) >= 40
    assert {c.source for c in cands} <= {"sharegpt", "lmsys_arena"}
    assert all(c.construction_method == "real_traffic_mined" for c in cands)
    # Mining does not verify: the build verifies every candidate once, in verified_rows, which drops the
    # few that fail (2 of 385 on the shared corpora: follow-ups whose previous answers begin alike).
    assert sum(not verify(c).passed for c in cands) <= len(cands) // 50
    assert all(c.licence.startswith("none stated") for c in cands if c.source == "sharegpt")
    assert res.sources["lsh"] > 0 and res.sources["ann"] > 0 and res.sources["follow_up"] > 0
    assert res.drops["query_too_long"] > 0 and res.drops["multi_turn:cap_per_final"] > 0


def test_mined_pairs_asset_fans_out_over_fixed_slots(tmp_path):
    # The build mines through Dagster: SHARD_SLOTS static slot steps (shard k in slot k mod 16),
    # merged in shard order, equal to mining each shard in process; the generators then take their
    # rows from the asset's value.
    from dagster import AssetKey, DagsterEventType, DagsterInstance, materialize

    from pipeline.app.definitions import all_assets
    from pipeline.orchestration.resources import BuildSettings

    ds = _fixtures_plus_planted(tmp_path / "ds")
    shutil.copytree(FIXTURES / "lmsys_arena", tmp_path / "ds" / "lmsys_arena")
    settings = BuildSettings(datasets_dir=str(tmp_path / "ds"), cache_dir=str(tmp_path / "cache"),
                             out_dir=str(tmp_path / "out"))
    instance = DagsterInstance.ephemeral()
    res = materialize(all_assets, selection=[AssetKey("mined_pairs")], resources={"build": settings},
                      instance=instance)
    value = res.asset_value("mined_pairs")
    shards = M.shards(ds)
    assert list(value.shards) == shards and len(shards) == 4
    steps = {rec.dagster_event.step_key for rec in instance.all_logs(res.run_id)
             if rec.dagster_event and rec.dagster_event.event_type == DagsterEventType.STEP_SUCCESS}
    assert {f"mined_pairs.mine_shard_slot_{k:02d}" for k in range(M.SHARD_SLOTS)} <= steps
    direct = M.mine(ds, shards, cache_dir=tmp_path / "cache")
    assert isinstance(value, M.MinedPairs) and [c.key for c in value.candidates] == [c.key for c in direct.candidates]
    assert value.drops == direct.drops and value.sources == direct.sources and value.n_prompts == direct.n_prompts
    ctx = GenContext(domain="creative", profile="v1.1", need={}, datasets=None, mined=value)
    assert [c.provenance.source_record for c in M.real_traffic_rows(ctx)] == ["pp0a#0|pp0b#0"]


def test_mined_pairs_asset_is_empty_without_a_datasets_dir(tmp_path):
    from dagster import AssetKey, materialize

    from pipeline.app.definitions import all_assets
    from pipeline.orchestration.resources import BuildSettings
    from pipeline.stages.values import MinedPairs

    res = materialize(all_assets, selection=[AssetKey("mined_pairs")],
                      resources={"build": BuildSettings(out_dir=str(tmp_path / "out"))})
    value = res.asset_value("mined_pairs")
    assert isinstance(value, MinedPairs) and (value.shards, value.candidates, value.drops) == ((), (), {})


def test_slots_share_the_sorted_shards_round_robin():
    names = [f"sharegpt/big.json@{k * 10}-{k * 10 + 10}" for k in range(M.SHARD_SLOTS + 3)]
    slots = [M.slot_shards(names, k) for k in range(M.SHARD_SLOTS)]
    assert sorted(n for s in slots for n in s) == sorted(names)  # every shard in exactly one slot
    assert slots[0] == [names[0], names[M.SHARD_SLOTS]] and slots[3] == [names[3]]
    assert M.slot_shards(names[:2], 5) == []
    with pytest.raises(ValueError, match="slot 16: not in 0..15"):
        M.slot_shards(names, M.SHARD_SLOTS)


def test_merge_refuses_a_run_that_lost_a_shard(tmp_path):
    # An executor that skipped a slot step (or a slot that dropped a shard) must fail the run, never
    # publish a mined_pairs value without that shard's pairs.
    from dagster import build_op_context

    from assets.sources import merge_mined_shards, slot_input
    from pipeline.core.errors import BuildError
    from pipeline.orchestration.resources import BuildSettings

    build = BuildSettings(cache_dir=str(tmp_path / "cache"))
    part = M.PreparedShard("sharegpt/a.json", (), {}, 0)
    slots = {slot_input(k): [] for k in range(M.SHARD_SLOTS)} | {slot_input(0): [part]}
    with pytest.raises(BuildError, match=r"missing: \['sharegpt/b.json'\]"):
        merge_mined_shards(build_op_context(), build=build, names=["sharegpt/a.json", "sharegpt/b.json"], **slots)
    with pytest.raises(BuildError, match="15 of 16 slots"):
        merge_mined_shards(build_op_context(), build=build, names=["sharegpt/a.json"], **{k: v for k, v in slots.items()
                                                                             if k != slot_input(15)})
    assert merge_mined_shards(build_op_context(), build=build, names=["sharegpt/a.json"], **slots).shards == ("sharegpt/a.json",)


@pytest.mark.slow
def test_mining_fans_out_over_the_multiprocess_executor(tmp_path):
    # A real `dagster asset materialize` run (the definitions' default executor, as the UI's
    # Materialize of a selection: multiprocess, steps forked from a preloaded server): every slot
    # step (5 with a shard, 11 empty) runs in its own subprocess.
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dh"), "CACHEEVAL_DATASETS_DIR": str(FIXTURES),
           "CACHEEVAL_CACHE_DIR": str(tmp_path / "cache")}
    (tmp_path / "dh").mkdir()
    # No compute-log capture: Dagster's local capture starts `tail -F` children per step and stops them
    # with SIGTERM, which a run started with SIGINT ignored (a background job of a non-interactive
    # shell, as CI and nohup run it) ignores, so each of the 17 steps waited 2 x 30 s for its tails
    # (507 s instead of ~60 s; tests/e2e/test_mining_dask.py had the same). The test reads events, not logs.
    (tmp_path / "dh" / "dagster.yaml").write_text(
        "compute_logs:\n  module: dagster._core.storage.noop_compute_log_manager\n  class: NoOpComputeLogManager\n"
        "telemetry:\n  enabled: false\n", encoding="utf-8")
    proc = subprocess.run([str(Path(sys.executable).parent / "dagster"), "asset", "materialize", "--select",
                           "mined_pairs", "-m", "pipeline.app.definitions"], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "RUN_SUCCESS" in log, log[-3000:]
    assert "multiprocess executor" in log
    # Read the run's events from the instance (subprocess log lines can interleave on the console).
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        (record,) = instance.get_run_records()
        events = [e.dagster_event for e in instance.all_logs(record.dagster_run.run_id) if e.dagster_event]
    done = {e.step_key: e.pid for e in events if e.event_type == DagsterEventType.STEP_SUCCESS
            and e.step_key.startswith("mined_pairs.mine_shard_slot_")}
    assert len(done) == M.SHARD_SLOTS and len(M.shards(DatasetsDir(FIXTURES))) == 5
    assert len(set(done.values())) == M.SHARD_SLOTS  # each slot in its own process
    # The stored value is the same bytes as an in-process run's.
    from dagster import AssetKey, materialize

    from pipeline.app.definitions import all_assets
    from pipeline.orchestration.resources import BuildSettings

    (tmp_path / "dh2").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "dh2")) as instance:
        settings = BuildSettings(datasets_dir=str(FIXTURES), cache_dir=str(tmp_path / "cache"))
        assert materialize(all_assets, selection=[AssetKey("mined_pairs")], resources={"build": settings},
                           instance=instance).success
        in_process = (Path(instance.storage_directory()) / "mined_pairs").read_bytes()
    assert (tmp_path / "dh" / "storage" / "mined_pairs").read_bytes() == in_process


def test_a_prepared_shard_comes_from_the_step_cache_until_a_file_of_its_corpus_changes(tmp_path):
    # The build's slot steps prepare each shard through the step cache, keyed on the sha256 of every
    # file of the shard's corpus: a rebuild over the same bytes is served; one changed byte runs again.
    from pipeline.orchestration import step_cache
    from pipeline.orchestration.cached_steps import prepared_shard

    ds = _fixtures_plus_planted(tmp_path / "ds")
    shard, cache = "sharegpt/ShareGPT_V3_filtered_500.json", tmp_path / "cache"
    stats = step_cache.STATS.setdefault("prepare_shard", {"hit": 0, "miss": 0})
    first = dict(stats)
    made = prepared_shard(cache, ds, shard)
    again = prepared_shard(cache, DatasetsDir(tmp_path / "ds"), shard)
    assert (stats["miss"], stats["hit"]) == (first["miss"] + 1, first["hit"] + 1)
    assert again.texts == made.texts and again.turns == made.turns and (again.vectors == made.vectors).all()
    assert made.texts == M.prepare_shard(DatasetsDir(tmp_path / "ds"), shard, cache).texts
    path = tmp_path / "ds" / shard
    rows = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(rows + [{"id": "new", "conversations": [{"from": "human", "value": "Name three moons of Jupiter."}]}]),
                    encoding="utf-8")
    changed = prepared_shard(cache, DatasetsDir(tmp_path / "ds"), shard)
    assert stats["miss"] == first["miss"] + 2 and "name three moons of jupiter" in {t.lower() for t in changed.texts}
    assert "name three moons of jupiter" not in {t.lower() for t in made.texts}


def test_the_pairing_of_prepared_shards_comes_from_the_step_cache_until_a_shard_changes(tmp_path):
    # merge_mined_shards pairs the prepared shards through the step cache, keyed on the shards
    # themselves (every turn, signature and vector, in order): the same shards are served the same
    # value; a changed shard, or another order, runs pair again.
    from pipeline.orchestration import step_cache
    from pipeline.orchestration.cached_steps import paired_shards

    ds, cache = _fixtures_plus_planted(tmp_path / "ds"), tmp_path / "cache"
    parts = [M.prepare_shard(ds, s, cache) for s in M.shards(ds)]
    stats = step_cache.STATS.setdefault("pair_shards", {"hit": 0, "miss": 0})
    first = dict(stats)
    made = paired_shards(cache, parts)
    again = paired_shards(cache, [M.prepare_shard(ds, s, cache) for s in M.shards(ds)])
    assert (stats["miss"], stats["hit"]) == (first["miss"] + 1, first["hit"] + 1)
    assert made.candidates and again == made == M.pair(parts)
    fewer = paired_shards(cache, [replace(parts[0], turns=parts[0].turns[1:])] + parts[1:])
    paired_shards(cache, parts[::-1])
    assert stats["miss"] == first["miss"] + 3 and fewer.n_prompts == made.n_prompts


def test_the_manifest_of_a_corpora_build_lists_every_corpus_file_with_its_sha256(tmp_path):
    from pipeline.core.hashing import file_sha256
    from pipeline.stages.assembly import input_manifest

    ds = _fixtures_plus_planted(tmp_path / "ds")
    shutil.copytree(FIXTURES / "lmsys_arena", tmp_path / "ds" / "lmsys_arena")
    files = {f["path"]: f for f in input_manifest(ds)["files"]}
    on_disk = sorted(p.relative_to(tmp_path / "ds").as_posix() for p in (tmp_path / "ds").rglob("*") if p.is_file())
    assert sorted(k.removeprefix("datasets/") for k in files if k.startswith("datasets/")) == on_disk
    assert all(files[f"datasets/{rel}"]["sha256"] == file_sha256(tmp_path / "ds" / rel) for rel in on_disk)
