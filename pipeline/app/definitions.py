"""The one Dagster `Definitions` of CacheEval, loaded by workspace.yaml: the build's assets, checks and
jobs (pipeline/app/jobs.py, where the CLI takes them from), the quarterly slice's schedule, and the
mining job on Dask (pipeline/app/dask_job.py, which only the UI and Dagster's own commands load).
The UI lists `build_dataset`, `evolving_job`, `extract_corpora` and `mining_dask_job`; **Materialize
all** on `build_dataset` is one in-process run, no partition to choose.
"""
from __future__ import annotations

from dagster import multiprocess_executor

from assets import evolving
from pipeline.app.dask_job import mining_dask_job
from pipeline.app.jobs import (ASSET_MODULES, BUILD_JOBS, OTHER_JOBS, UI_DEFAULTS, all_assets, all_checks,  # noqa: F401
                               asset_graph, build_dataset, domain_job, evolving_assets, evolving_checks, extract_job,
                               outputs_job, sources_job, ui_build_assets, ui_definitions, unbuilt)

# The executor of every run that names none (the asset graph's Materialize of a selection, `dagster asset
# materialize`, extract_corpora): each step in its own process, forked from a server that imported this
# module once, rather than a new interpreter that imports Dagster, dagster-dask and the project again
# (~4 s of CPU a step). The 18 steps of mined_pairs on the fixtures: 38.7 s instead of 109 s.
FORKSERVER_EXECUTOR = multiprocess_executor.configured(
    {"start_method": {"forkserver": {"preload_modules": ["pipeline.app.definitions"]}}}, name="multiprocess_forkserver")

defs = ui_definitions(
    jobs=[build_dataset, *OTHER_JOBS, extract_job, mining_dask_job],  # mining on Dask: pipeline/app/dask_job.py
    schedules=[evolving.quarterly_slice],
    executor=FORKSERVER_EXECUTOR,
)
