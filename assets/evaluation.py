"""Evaluation: the reference caches (the real GPTCache at its registered settings, the verified
cache) scored on the benchmark just built, as outputs/reports/references.{md,json,png}; and the
store/lookup references (GPTCache at a threshold sweep, the vCache-style cache at three error
bounds) under the stream protocol, as outputs/reports/stream.{md,json,png}."""

from dagster import Output, asset

from assets.groups import EVALUATION
from pipeline.orchestration import asset_metadata as show
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages import assembly as out

REFERENCES_PNG = "reports/references.png"
STREAM_PNG = "reports/stream.png"


@asset(group_name=EVALUATION)
def reference_reports(build: BuildSettings, benchmark_files: dict[str, str]) -> Output[dict[str, str]]:
    """Every reference cache scored on the built benchmark (skipped where the profile says so)."""
    from domains import domain_names
    from pipeline.core.config import load_profile
    from pipeline.references.reports import reference_files, score_references

    if not load_profile(build.profile).reference_caches:
        return Output({}, metadata={"skipped": f"profile {build.profile} sets reference_caches: false",
                                    **show.files_written(build.outputs, {}, build.profile)})
    result = score_references(build.outputs / out.BENCH, domain_names(), resolved=build.settings)
    written = out.write_files(build.outputs, reference_files(result))
    headline = {r["configuration"]: {k: (None if r[k] is None else round(r[k], 4))
                                      for k in ("f1", "fhr", "adversarial_fhr", "precision", "recall")}
                for r in result["table"]}
    plot = {"plot": show.png_image(build.outputs / REFERENCES_PNG, "FHR against recall for every reference")} \
        if REFERENCES_PNG in written else {}
    return Output(written, metadata={"headline": show.headline_table(headline, "configuration"), **plot,
                                     **show.files_written(build.outputs, written, build.profile)})


@asset(group_name=EVALUATION)
def stream_reports(build: BuildSettings, benchmark_files: dict[str, str]) -> Output[dict[str, str]]:
    """The store/lookup reference caches under the stream protocol, each declared error bound tested."""
    from domains import domain_names
    from pipeline.core.config import load_profile
    from pipeline.references.stream_report import score_stream_references, stream_files

    if not load_profile(build.profile).reference_caches:
        return Output({}, metadata={"skipped": f"profile {build.profile} sets reference_caches: false",
                                    **show.files_written(build.outputs, {}, build.profile)})
    result = score_stream_references(build.outputs / out.BENCH, domain_names(), resolved=build.settings)
    written = out.write_files(build.outputs, stream_files(result))
    headline = {r["cache"]: {"hit_rate": r["hit_rate"], "error_rate": r["error_rate"], "upper": r["upper"],
                             "verdict": r["verdict"]} for r in result["table"]}
    plot = {"plot": show.png_image(build.outputs / STREAM_PNG, "cumulative FHR against requests served, per order")} \
        if STREAM_PNG in written else {}
    return Output(written, metadata={"headline": show.headline_table(headline, "cache"), **plot,
                                     **show.files_written(build.outputs, written, build.profile)})
