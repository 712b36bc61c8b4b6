"""`mining_dask_job`: real-traffic mining (the `mined_pairs` asset) on a Dask cluster, for a corpus
that outgrows one machine.

The same asset as every build (assets/sources.py): one listing step, SHARD_SLOTS slot steps that
each prepare their share of the shards, one merge step. The fan-out is static (no dynamic outputs:
dagster-dask plans every step before the run and would never run a dynamically mapped one), so the
plan, and the value, are the same under the in-process, multiprocess and Dask executors.

Run config (Dagster UI launchpad, or `dagster job execute -m pipeline.app.definitions -j mining_dask_job
-c run.yaml`):

    execution:
      config:
        cluster:
          existing: {address: "tcp://scheduler-host:8786"}   # an existing Dask scheduler
          # or local: {n_workers: 2}                          # a LocalCluster started for the run
    resources:
      build:
        config: {datasets_dir: /data/corpora, cache_dir: /shared/cacheeval-cache}

Dagster's Dask executor needs a persistent Dagster instance (DAGSTER_HOME), and every worker must
import this project (same code and pinned packages) and reach the same DAGSTER_HOME storage (where
steps pass their values), the datasets dir and the cache dir, at the same paths: one machine, or a
shared filesystem.
"""
from __future__ import annotations

from dagster import AssetSelection, define_asset_job
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository
from dagster_dask import dask_executor

MINING_DASK_JOB = "mining_dask_job"

mining_dask_job = define_asset_job(
    MINING_DASK_JOB, AssetSelection.assets("mined_pairs"), executor_def=dask_executor,
    description="Real-traffic mining (mined_pairs) on a Dask cluster: execution.config.cluster is "
                "existing: {address: tcp://host:8786} or local: {n_workers: N}. Needs a persistent "
                "DAGSTER_HOME that every worker reaches.")


def reconstructable_mining_job() -> ReconstructableJob:
    """The job as Dask workers load it: from the project's one Definitions (pipeline.app.definitions),
    as `dagster job execute -m pipeline.app.definitions -j mining_dask_job` does."""
    return ReconstructableRepository.for_module("pipeline.app.definitions", "defs").get_reconstructable_job(
        MINING_DASK_JOB)
