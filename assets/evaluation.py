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


def _report(build: BuildSettings, score, files, headline_of, first: str, png: str, alt: str) -> Output[dict[str, str]]:
    """One evaluation report asset: skipped where the profile sets reference_caches: false, else the
    references scored on the built benchmark, their files written, and the headline table and plot
    shown on the asset page."""
    from domains import domain_names
    from pipeline.core.config import load_profile

    if not load_profile(build.profile).reference_caches:
        return Output({}, metadata={"skipped": f"profile {build.profile} sets reference_caches: false",
                                    **show.files_written(build.outputs, {}, build.profile)})
    result = score(build.outputs / out.BENCH, domain_names(), resolved=build.settings)
    written = out.write_files(build.outputs, files(result))
    plot = {"plot": show.png_image(build.outputs / png, alt)} if png in written else {}
    return Output(written, metadata={"headline": show.headline_table(headline_of(result), first), **plot,
                                     **show.files_written(build.outputs, written, build.profile)})


@asset(group_name=EVALUATION)
def reference_reports(build: BuildSettings, benchmark_files: dict[str, str]) -> Output[dict[str, str]]:
    """Every reference cache scored on the built benchmark (skipped where the profile says so)."""
    from pipeline.references.reports import reference_files, score_references

    def headline(result: dict) -> dict:
        return {r["configuration"]: {k: (None if r[k] is None else round(r[k], 4))
                                     for k in ("f1", "fhr", "adversarial_fhr", "precision", "recall")}
                for r in result["table"]}

    return _report(build, score_references, reference_files, headline, "configuration", REFERENCES_PNG,
                   "FHR against recall for every reference")


@asset(group_name=EVALUATION)
def stream_reports(build: BuildSettings, benchmark_files: dict[str, str]) -> Output[dict[str, str]]:
    """The store/lookup reference caches under the stream protocol, each declared error bound tested."""
    from pipeline.references.stream_report import score_stream_references, stream_files

    def headline(result: dict) -> dict:
        return {r["cache"]: {k: r[k] for k in ("hit_rate", "error_rate", "upper", "verdict")} for r in result["table"]}

    return _report(build, score_stream_references, stream_files, headline, "cache", STREAM_PNG,
                   "cumulative FHR against requests served, per order")
