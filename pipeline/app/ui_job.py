"""`build_dataset`: the one way to build the whole dataset from the Dagster UI.

Jobs -> build_dataset -> the arrow beside "Materialize all" -> "Open launchpad": the launch config
names the profile and the output folder (the `build` resource, pipeline.orchestration.resources.BuildSettings);
"Materialize" (and "Confirm": no partition is chosen, the job's tags cover them all) starts ONE
in-process run over the sources, every domain partition of generation and verification (the
per-domain assets take BackfillPolicy.single_run, see pipeline.orchestration.partitions) and the outputs, with
every blocking check. It writes into build/ui-outputs/ (git-ignored) unless the launch config names
another folder: a UI run never rewrites the committed outputs/ unless told `out_dir: outputs`.
`cacheeval build` builds the same assets from the CLI, one domain per run.
"""
from __future__ import annotations

UI_JOB_NAME = "build_dataset"
DEFAULT_OUT_DIR = "build/ui-outputs"  # BuildSettings resolves a relative out_dir from the project root

DESCRIPTION = (
    "The whole dataset in ONE run: sources, every domain (all partitions of candidate_rows and "
    "verified_rows), selection, difficulty, assembly, evaluation, publication and the manifest, with "
    "every blocking check. Materialize all (arrow) -> Open launchpad -> Materialize -> Confirm. It "
    f"writes into the launch config's resources.build.config.out_dir: {DEFAULT_OUT_DIR}/ of the project "
    "by default (git-ignored); set out_dir: outputs only to rebuild the committed outputs/. "
    "profile: v1.1, lifted40 or smoke.")


def ui_job_kwargs() -> dict:
    """define_asset_job's arguments for build_dataset: its description, and tags that make every run
    of it cover all domain partitions. They are the job's `tags`, not `run_tags`: the webserver adds
    a job's `tags` to the runs it launches, and `run_tags` only elsewhere."""
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from domains import domain_names

    domains = domain_names()
    return {
        "description": DESCRIPTION,
        "tags": {ASSET_PARTITION_RANGE_START_TAG: domains[0], ASSET_PARTITION_RANGE_END_TAG: domains[-1]},
    }
