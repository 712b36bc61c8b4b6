"""The build's assets, checks and jobs: what `cacheeval build`, `check`, `extract` and `evolve` run.

Assets come from one module per stage, each module its own group (assets/groups.py). `cacheeval
build` runs BUILD_JOBS in order: the sources (mined real traffic, the input manifest), then each
domain partition of generation and verification, then selection, difficulty, assembly, evaluation
(the reference caches scored on the result), publication (the Hugging Face dataset) and the
manifest. The jobs select whole groups, so a new asset is built with its group; `unbuilt` names any
asset no job selects (a new group), and the build refuses to start then.

The quarterly adversarial slice (group `evolving`, partitioned by quarter, assets/evolving.py) is no
part of the build: `evolving_job` runs it, on its schedule `quarterly_adversarial_slice` or by hand
(`cacheeval evolve --quarter 2026-Q4`).

Two sets of the same assets. `all_assets`, the build's as `cacheeval build` runs them: `candidate_rows`
and `verified_rows` partitioned by domain, `domain_job` running one domain per run. `ui_build_assets`,
what the Dagster UI loads: the same assets with those two unpartitioned (pipeline/app/ui_job.py, one
step over every domain), so that the dataset is built by one job, `build_dataset`, in one click.

The UI's `Definitions` (pipeline/app/definitions.py, loaded by workspace.yaml) hold these and the
mining job on Dask; the CLI imports this module, not that one, so no build imports dagster-dask and
dask.dataframe (2.2 of the 4.3 s that importing the definitions took) for a run that never uses them.
"""
from __future__ import annotations

import functools

from dagster import (AssetKey, AssetSelection, Definitions, define_asset_job, in_process_executor,
                     load_asset_checks_from_modules, load_assets_from_modules)

from assets import (assembly, difficulty, evaluation, evolving, generation, manifest, publication, selection, sources,
                    verification)
from assets.groups import (ASSEMBLY, DIFFICULTY, EVALUATION, EVOLVING, GENERATION, MANIFEST, PUBLICATION, SELECTION,
                           SOURCES, VERIFICATION)
from pipeline.app.ui_job import UI_JOB_NAME, ui_assets, ui_build_defaults, ui_job_kwargs
from pipeline.orchestration.partitions import PartitionedFilesystemIOManager
from pipeline.orchestration.resources import BuildSettings, EvolveSettings

ASSET_MODULES = [sources, generation, verification, selection, difficulty, assembly, evaluation, publication, manifest]

all_assets = load_assets_from_modules(ASSET_MODULES)  # the CLI's build: per-domain assets partitioned by domain
ui_build_assets = ui_assets(all_assets)  # the UI's: the same, the per-domain ones over every domain in one step
all_checks = load_asset_checks_from_modules(ASSET_MODULES)
evolving_assets = load_assets_from_modules([evolving])
evolving_checks = load_asset_checks_from_modules([evolving])

sources_job = define_asset_job(
    "sources_job", AssetSelection.groups(SOURCES),
    description="What the datasets dir holds, and the pairs mined from its real traffic (one step per shard).")
domain_job = define_asset_job(  # partitioned by domain: the partitions definition is inferred
    "domain_job", AssetSelection.groups(GENERATION, VERIFICATION),
    description="One domain: its candidates generated and verified.")
outputs_job = define_asset_job(
    "outputs_job", AssetSelection.groups(SELECTION, DIFFICULTY, ASSEMBLY, EVALUATION, PUBLICATION, MANIFEST),
    description="Every domain's verified rows selected, scored for difficulty, written to outputs/ and the "
                "reference caches scored on them.")
BUILD_JOBS = (sources_job, domain_job, outputs_job)
# `cacheeval extract` and the UI: the corpora's verified pairs made from a datasets dir (the command writes
# them to sources/extract/pairs.jsonl; domains.corpora.extract).
extract_job = define_asset_job(
    "extract_corpora", AssetSelection.assets("mined_pairs", "corpus_extract"),
    description="The corpora's verified candidate pairs (sources/extract/pairs.jsonl) made from the datasets dir: "
                "mined real traffic, existing benchmarks, intents and the trap operators on real requests.")

# The UI's one way to build the dataset: every asset and check in one in-process run over all domains
# (not partitioned: in the UI's definitions no asset of the build is).
UI_DEFAULTS = ui_build_defaults()
build_dataset = define_asset_job(UI_JOB_NAME, AssetSelection.all() - AssetSelection.groups(EVOLVING),
                                 executor_def=in_process_executor, **ui_job_kwargs(UI_DEFAULTS))
OTHER_JOBS = (evolving.evolving_job,)  # not the build: the quarterly slice


def ui_definitions(**extra) -> Definitions:
    """The UI's `Definitions` (pipeline/app/definitions.py adds its jobs, schedule and executor as
    `extra`): the build's assets over every domain, the slice's, their checks, and the resources. Runs
    launched from the UI write into build/ui-outputs/ (v1.1) unless their launch config, or
    $CACHEEVAL_UI_PROFILE / $CACHEEVAL_UI_OUT_DIR, say otherwise; `cacheeval build` passes its own
    settings (outputs/ by default)."""
    return Definitions(assets=[*ui_build_assets, *evolving_assets], asset_checks=[*all_checks, *evolving_checks],
                       resources={"build": BuildSettings(**UI_DEFAULTS), "evolve": EvolveSettings(),
                                  "io_manager": PartitionedFilesystemIOManager()}, **extra)


@functools.lru_cache(maxsize=None)
def asset_graph():
    """The asset graph of the UI's definitions (jobs, schedules and executors add no asset)."""
    return ui_definitions().resolve_asset_graph()


def unbuilt(definitions: Definitions | None = None) -> list[AssetKey]:
    """Assets of `definitions` (default: the UI's, `asset_graph`) that no job of BUILD_JOBS (or
    OTHER_JOBS, which run them apart from the build) selects: a build would silently skip them."""
    graph = definitions.resolve_asset_graph() if definitions is not None else asset_graph()
    selected = set().union(*(job.selection.resolve(graph) for job in (*BUILD_JOBS, *OTHER_JOBS)))
    return sorted(graph.get_all_asset_keys() - selected)
