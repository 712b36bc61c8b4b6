"""The one Dagster `Definitions` of CacheEval (loaded by workspace.yaml), and the build's jobs.

Assets come from one module per stage, each module its own group (assets/groups.py). A build runs
BUILD_JOBS in order, the same in the UI as in `cacheeval build`: the sources (mined real traffic,
the input manifest), then each domain partition of generation and verification, then selection,
difficulty, assembly, evaluation (the reference caches scored on the result),
publication (the Hugging Face dataset) and the manifest. The jobs select whole groups, so a new asset is built with its group;
`unbuilt` names any asset no job selects (a new group), and the build refuses to start then.
"""
from __future__ import annotations

from dagster import (AssetKey, AssetSelection, Definitions, define_asset_job, load_asset_checks_from_modules,
                     load_assets_from_modules)

from assets import (assembly, difficulty, evaluation, generation, manifest, publication, selection, sources,
                    verification)
from assets.groups import (ASSEMBLY, DIFFICULTY, EVALUATION, GENERATION, MANIFEST, PUBLICATION, SELECTION, SOURCES,
                           VERIFICATION)
from pipeline.resources import BuildSettings

ASSET_MODULES = [sources, generation, verification, selection, difficulty, assembly, evaluation, publication, manifest]

all_assets = load_assets_from_modules(ASSET_MODULES)
all_checks = load_asset_checks_from_modules(ASSET_MODULES)

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

defs = Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    jobs=list(BUILD_JOBS),
    resources={"build": BuildSettings()},
)


def unbuilt(definitions: Definitions | None = None) -> list[AssetKey]:
    """Assets of `definitions` (default: `defs`) that no job of BUILD_JOBS selects: a build would
    silently skip them."""
    graph = (definitions or defs).resolve_asset_graph()
    selected = set().union(*(job.selection.resolve(graph) for job in BUILD_JOBS))
    return sorted(graph.get_all_asset_keys() - selected)
