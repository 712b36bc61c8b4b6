"""The one Dagster `Definitions` of CacheEval (loaded by workspace.yaml)."""
from __future__ import annotations

from dagster import Definitions, load_asset_checks_from_modules, load_assets_from_modules

from assets import assembly, difficulty, generation, mining, selection, verification
from pipeline.resources import BuildSettings

ASSET_MODULES = [mining, generation, verification, selection, difficulty, assembly]

all_assets = load_assets_from_modules(ASSET_MODULES)
all_checks = load_asset_checks_from_modules(ASSET_MODULES)

defs = Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    resources={"build": BuildSettings()},
)
