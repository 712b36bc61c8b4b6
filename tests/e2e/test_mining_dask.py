"""Real-traffic mining on Dagster's Dask executor: `mining_dask_job`, loaded from the project's
Definitions as a Dask worker loads it, runs on a local Dask cluster started here (2 worker
processes) and stores the same mined_pairs value, byte for byte, as the in-process executor, with
every shard prepared in a worker (dagster-dask never runs dynamically mapped steps: a run could
succeed having mined nothing)."""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from domains.corpora import mining as M
from pipeline.core.hashing import canonical_json, sha256_text
from pipeline.core.paths import FIXTURES
from sources.datasets_dir import DatasetsDir

# Written for this test: two single-turn pairs (a number and a language changed) and one follow-up
# sent after two different conversations (a multi_turn pair).
SINGLE = [("Give me 3 ideas for a rainy Sunday afternoon at home.", "Give me 7 ideas for a rainy Sunday afternoon at home."),
          ("Write a function that checks whether a string is a palindrome in Go.",
           "Write a function that checks whether a string is a palindrome in Kotlin.")]
FOLLOW = [("Describe the water cycle for a ten year old.", "Water evaporates from lakes and seas, rises and cools."),
          ("Summarise the plot of Moby Dick.", "Captain Ahab hunts the white whale across the oceans.")]


def _datasets(root: Path) -> DatasetsDir:
    for corpus in ("sharegpt", "lmsys_arena", "wildchat"):
        shutil.copytree(FIXTURES / corpus, root / corpus)
    rows = []
    for k, (a, b) in enumerate(SINGLE):
        rows += [{"id": f"dk{k}a_0", "conversations": [{"from": "human", "value": a}, {"from": "gpt", "value": "…"}]},
                 {"id": f"dk{k}b_0", "conversations": [{"from": "human", "value": b}, {"from": "gpt", "value": "…"}]}]
    for k, (ask, answer) in enumerate(FOLLOW):
        rows.append({"id": f"df{k}_0", "conversations": [
            {"from": "human", "value": ask}, {"from": "gpt", "value": answer},
            {"from": "human", "value": "make it shorter"}, {"from": "gpt", "value": "…"}]})
    (root / "sharegpt" / "planted_dask.json").write_text(json.dumps(rows), encoding="utf-8")
    return DatasetsDir(root)


def _bytes(value) -> bytes:
    """The whole mined_pairs value (shards, every candidate field, drops) as canonical JSON."""
    return canonical_json(dataclasses.asdict(value)).encode("utf-8")


@pytest.mark.slow
@pytest.mark.models
def test_dask_executor_mines_the_same_bytes_as_in_process(tmp_path):
    from dagster import AssetKey, DagsterEventType, DagsterInstance, execute_job, materialize
    from distributed import Client, LocalCluster

    from pipeline.app.dask_job import reconstructable_mining_job
    from pipeline.app.definitions import all_assets
    from pipeline.orchestration.resources import BuildSettings

    ds = _datasets(tmp_path / "ds")
    names = M.shards(ds)
    assert len(names) == 6
    config = {"datasets_dir": str(tmp_path / "ds"), "cache_dir": str(tmp_path / "cache-inproc"),
              "out_dir": str(tmp_path / "out")}
    (tmp_path / "home_inproc").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home_inproc")) as instance:
        assert materialize(all_assets, selection=[AssetKey("mined_pairs")], resources={"build": BuildSettings(**config)},
                           instance=instance).success
        stored_inproc = Path(instance.storage_directory()) / "mined_pairs"
    expected = pickle.loads(stored_inproc.read_bytes())

    # The Dask run: its own cold embedding cache, a persistent instance (the Dask executor's need).
    # Compute logs are not captured: Dagster's local capture starts `tail -F` children per step and
    # stops them with SIGTERM, which a worker started with SIGINT ignored (a background job of a
    # non-interactive shell, as CI runs it) passes on as ignored (Dagster maps SIGTERM to SIGINT's
    # handler), so each step waited 2 x 30 s for its tails: 802 s instead of ~40 s in CI.
    config["cache_dir"] = str(tmp_path / "cache-dask")
    (tmp_path / "dagster_home").mkdir()
    no_capture = {"compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager",
                                   "class": "NoOpComputeLogManager"}}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client, \
            DagsterInstance.local_temp(str(tmp_path / "dagster_home"), overrides=no_capture) as instance:
        workers = set(client.run(os.getpid).values())
        run_config = {"execution": {"config": {"cluster": {"existing": {"address": cluster.scheduler_address}}}},
                      "resources": {"build": {"config": config}}}
        with execute_job(reconstructable_mining_job(), instance, run_config=run_config) as result:
            assert result.success
            stored_dask = Path(instance.storage_directory()) / "mined_pairs"  # where the build reads it
            got = pickle.loads(stored_dask.read_bytes())
            events = [e.dagster_event for e in instance.all_logs(result.run_id) if e.dagster_event]
    assert len(workers) == 2 and os.getpid() not in workers

    # Every shard was prepared, each slot step ran in a Dask worker, and something was mined.
    assert list(got.shards) == names
    done = {e.step_key: e.pid for e in events if e.event_type == DagsterEventType.STEP_SUCCESS}
    slots = {k: pid for k, pid in done.items() if ".mine_shard_slot_" in k}
    assert len(slots) == M.SHARD_SLOTS and set(slots.values()) <= workers
    assert "mined_pairs.merge_mined_shards" in done
    kinds = {(c.domain, c.label) for c in got.candidates}
    assert {("conversational", "ADVERSARIAL"), ("multi_turn", "ADVERSARIAL")} <= kinds, got.candidates

    # The same bytes as the in-process executor: the stored value (what the build reads) and its content.
    digest = sha256_text(_bytes(got).decode())
    assert _bytes(got) == _bytes(expected), (digest, sha256_text(_bytes(expected).decode()))
    assert stored_dask.read_bytes() == stored_inproc.read_bytes()
    print(f"\nmined_pairs: {len(got.candidates)} candidates from {len(names)} shards in {M.SHARD_SLOTS} slot steps; "
          f"stored pickle {len(stored_dask.read_bytes())} bytes, identical; canonical sha256 {digest}")
