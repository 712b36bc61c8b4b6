"""`build_dataset`: the one way to build the whole dataset from the Dagster UI, one click.

Jobs -> build_dataset -> **Materialize all**: one in-process run over the sources, every domain, the
outputs, with every blocking check, started at once (no partition to choose, no dialog). It is one
click because the UI's definitions hold no partitioned asset of the build: `candidate_rows` and
`verified_rows`, partitioned by domain for `cacheeval build` (one domain per run, `domain_job`),
appear in the UI in their unpartitioned form (`ui_assets`, pipeline.orchestration.partitions.
unpartitioned), one step running every domain in turn. Same code per domain, same values, same files.

The run uses the `build` resource's defaults: profile v1.1, written into build/ui-outputs/ of the
project (git-ignored), so a UI run never rewrites the committed outputs/ unless told
`out_dir: outputs`. $CACHEEVAL_UI_PROFILE and $CACHEEVAL_UI_OUT_DIR, set for `cacheeval ui`, change
those defaults (read when the definitions load, in the code server that `dagster dev` starts).
Another profile or folder for one run: the arrow beside "Materialize all" -> "Open launchpad", the
launch config's resources.build.config.
"""
from __future__ import annotations

from typing import Sequence

from dagster import AssetsDefinition

from pipeline.core import settings

UI_JOB_NAME = "build_dataset"
DEFAULT_OUT_DIR = "build/ui-outputs"  # BuildSettings resolves a relative out_dir from the project root
DEFAULT_PROFILE = "v1.1"
DESCRIPTION = (
    "The whole dataset in ONE run, at one click: Materialize all. Sources, every domain (candidate_rows and "
    "verified_rows run each domain in turn), selection, difficulty, assembly, evaluation, publication and the "
    "manifest, with every blocking check. Profile {profile}, written into {out_dir}/{where}. Another profile "
    "or folder: the arrow beside Materialize all -> Open launchpad -> resources.build.config (profile: v1.1, "
    "lifted40 or smoke; out_dir: outputs only to rebuild the committed outputs/).")


def ui_build_defaults() -> dict[str, str]:
    """The `build` resource's profile and out_dir for runs launched from the UI: $CACHEEVAL_UI_PROFILE
    and $CACHEEVAL_UI_OUT_DIR, else v1.1 into build/ui-outputs/."""
    return {"profile": settings.env(settings.UI_PROFILE) or DEFAULT_PROFILE,
            "out_dir": settings.env(settings.UI_OUT_DIR) or DEFAULT_OUT_DIR}


def ui_job_kwargs(defaults: dict[str, str] | None = None) -> dict:
    """define_asset_job's arguments for build_dataset besides name, selection and executor: its
    description, naming the profile and folder a click builds."""
    d = defaults or ui_build_defaults()
    out_dir = d["out_dir"].rstrip("/")
    where = "" if out_dir.startswith("/") else " of the project" + (
        " (git-ignored)" if out_dir == DEFAULT_OUT_DIR else "")
    return {"description": DESCRIPTION.format(profile=d["profile"], out_dir=out_dir, where=where)}


def ui_assets(build_assets: Sequence[AssetsDefinition]) -> list[AssetsDefinition]:
    """The build's assets as the UI holds them: the per-domain ones (partitioned by domain for the
    CLI) in their unpartitioned form, so no job of the build asks for a partition."""
    from pipeline.orchestration.partitions import unpartitioned

    return [unpartitioned(a) if a.partitions_def is not None else a for a in build_assets]
