"""Assembly: the benchmark rows (with blocking invariant checks), the files under outputs/, the
calibration report and the baseline reports."""

from collections import Counter

from dagster import AssetCheckResult, AssetChecksDefinition, MetadataValue, Output, asset, asset_check

from assets.groups import ASSEMBLY
from pipeline.orchestration import asset_metadata as show
from pipeline.core.config import load_profile
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages import assembly as out
from pipeline.stages.difficulty import DifficultyResult
from pipeline.stages.values import SelectedRows, Similarities

CALIBRATION_PNG = "reports/calibration.png"  # the similarity plot write_calibration writes (shown on the asset page)

# pipeline.stages.assembly reads the difficulty and similarity values as mappings (field -> value);
# vars() gives that view of a frozen record without copying it.


@asset(group_name=ASSEMBLY)
def cachebench(build: BuildSettings, selected_rows: SelectedRows, row_similarities: Similarities,
               row_difficulty: DifficultyResult) -> Output[list[dict]]:
    """The benchmark rows in schema key order, sorted by id, with difficulty and provenance."""
    rows = out.assemble_rows(list(selected_rows.rows), vars(row_difficulty))
    profile = load_profile(build.profile)
    return Output(rows, metadata={
        "rows": len(rows), "profile": profile.name,
        "rows_per_cell": show.cells_table(((r["domain"], r["label"]) for r in rows), profile.labels),
        "construction_methods": show.method_mix(rows),
        "difficulty": MetadataValue.json(dict(Counter(r["difficulty"] for r in rows))),
        "binary": MetadataValue.json(dict(Counter(r["binary_label"] for r in rows))),
        **show.kappa(row_difficulty.kappa, row_similarities.members, row_similarities.held_out),
        "preview": show.rows_preview(rows)})


def _invariant_check(name: str, description: str) -> AssetChecksDefinition:
    fn = out.INVARIANTS[name]

    @asset_check(asset=cachebench, name=name, blocking=True, description=description)
    def check(build: BuildSettings, cachebench: list[dict]) -> AssetCheckResult:
        problems, meta = fn(cachebench, load_profile(build.profile))
        return AssetCheckResult(passed=not problems, metadata={
            **{k: MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in meta.items()},
            "problems": MetadataValue.json(problems[:20])})

    return check


INVARIANT_CHECKS = [_invariant_check(name, desc) for name, desc in out.INVARIANT_DESCRIPTIONS.items()]


@asset(group_name=ASSEMBLY)
def benchmark_files(build: BuildSettings, cachebench: list[dict]) -> Output[dict[str, str]]:
    """cachebench.jsonl and the splits in the output folder (test published without labels, labels apart)."""
    written = out.write_benchmark(build.outputs, cachebench)
    return Output(written, metadata=show.files_written(build.outputs, written, build.profile))


@asset(group_name=ASSEMBLY)
def calibration_report(build: BuildSettings, selected_rows: SelectedRows, row_similarities: Similarities,
                       row_difficulty: DifficultyResult) -> Output[dict[str, str]]:
    """reports/calibration.md in the output folder: per-model thresholds, agreement, kappa, similarity plot."""
    from pipeline.orchestration.step_cache import StepCache, fingerprint

    def compute() -> dict[str, bytes]:  # the plot is the slow part: its bytes come from the step cache
        made = out.write_calibration(build.outputs, list(selected_rows.rows), vars(row_similarities),
                                     vars(row_difficulty))
        return {rel: (build.outputs / rel).read_bytes() for rel in made}

    files = StepCache(build.caches).run("calibration_report", lambda: {
        "rows": fingerprint(list(selected_rows.rows)), "similarities": fingerprint(row_similarities),
        "difficulty": fingerprint(row_difficulty)}, compute)
    written = out.write_files(build.outputs, files)
    kappa = show.kappa(row_difficulty.kappa, row_similarities.members, row_similarities.held_out)
    plot = {"plot": show.png_image(build.outputs / CALIBRATION_PNG, "similarity distributions per label")} \
        if CALIBRATION_PNG in written else {}
    return Output(written, metadata={**plot, **kappa, **show.files_written(build.outputs, written, build.profile)})


@asset(group_name=ASSEMBLY)
def baseline_reports(build: BuildSettings, cachebench: list[dict]) -> Output[dict[str, str]]:
    """Reports of the reference baselines (always_miss, always_hit, exact_match) on the benchmark."""
    written, headline = out.write_baselines(build.outputs, cachebench)
    return Output(written, metadata={"headline": show.headline_table(headline, "baseline"),
                                     **show.files_written(build.outputs, written, build.profile)})
