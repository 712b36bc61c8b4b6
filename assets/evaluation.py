"""Evaluation: the reference caches (the real GPTCache at its registered settings, the verified
cache) scored on the benchmark just built, as outputs/reports/references.{md,json,png}; and the
store/lookup references (GPTCache at a threshold sweep, the vCache-style cache at three error
bounds) under the stream protocol, as outputs/reports/stream.{md,json,png}; each reference on dev
(generators it trained on) against test (generators it never saw), with the verified cache's
leave-one-method-out table, as outputs/reports/transfer.{md,json}; the system traps built from the
benchmark (outputs/traps/system_traps.jsonl, with blocking checks) and the references on them per
trap, as outputs/reports/traps.{md,json}."""

from dagster import AssetCheckResult, AssetChecksDefinition, AssetIn, MetadataValue, Output, asset, asset_check

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
    result, made = bench_step(build, f"{score.__module__}.{score.__name__}",
                              lambda: (r := score(build.outputs / out.BENCH, domain_names(), resolved=build.settings),
                                       files(r)))
    written = out.write_files(build.outputs, made)
    plot = {"plot": show.png_image(build.outputs / png, alt)} if png in written else {}
    return Output(written, metadata={"headline": show.headline_table(headline_of(result), first), **plot,
                                     **show.files_written(build.outputs, written, build.profile)})


def bench_step(build: BuildSettings, step: str, compute, also: tuple[str, ...] = ()):
    """compute() through the step cache, keyed on the built benchmark's bytes (cachebench.jsonl and
    splits/, what the references are scored on), the output files named in `also` that the step
    reads, and the models (pipeline/orchestration/cached_steps.py)."""
    from pipeline.orchestration.cached_steps import embedded
    from pipeline.orchestration.step_cache import files_sha256

    def inputs() -> dict:
        splits = sorted(p.relative_to(build.outputs).as_posix() for p in (build.outputs / "splits").rglob("*") if p.is_file())
        return {"benchmark": files_sha256(build.outputs, [out.BENCH, *splits]),
                **({"files": files_sha256(build.outputs, also)} if also else {})}

    return embedded(build.caches, step, inputs, compute)


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


@asset(group_name=EVALUATION)
def transfer_reports(build: BuildSettings, benchmark_files: dict[str, str]) -> Output[dict[str, str]]:
    """Each reference on dev (seen generators) and test (unseen), and the verified cache leaving one method out."""
    from pipeline.references.transfer import score_transfer, transfer_files

    def headline(result: dict) -> dict:
        return {r["reference"]: {f"{s} {k}": r[s][k] for s in ("dev", "test") for k in ("fhr", "recall")}
                for r in result["table"]}

    return _report(build, score_transfer, transfer_files, headline, "reference", "reports/transfer.png",
                   "no plot")


# ---- the system traps (#29 item 4): built from the benchmark's HIT rows, written apart from it
# (outputs/traps/, not in cachebench.jsonl nor in manifest.json) and scored by the references

@asset(group_name=EVALUATION)
def system_traps(cachebench: list[dict]) -> Output[list[dict]]:
    """The system traps: benchmark HIT rows wrapped so they must MISS (another user, tenant, system prompt, tools, stored status, fresh output)."""
    from pipeline.stages.traps import build_traps, counts

    rows = build_traps(cachebench)
    return Output(rows, metadata={"rows": len(rows), "per_trap": MetadataValue.json(counts(rows)),
                                  "preview": show.rows_preview(rows)})


def _trap_check(name: str, description: str) -> AssetChecksDefinition:
    from pipeline.stages.trap_checks import CHECKS

    fn = CHECKS[name][1]

    @asset_check(asset=system_traps, name=name, blocking=True, description=description,
                 additional_ins={"cachebench": AssetIn("cachebench")})
    def check(system_traps: list[dict], cachebench: list[dict]) -> AssetCheckResult:
        problems, meta = fn(system_traps, cachebench)
        return AssetCheckResult(passed=not problems, metadata={
            **{k: MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in meta.items()},
            "why": "; ".join(problems[:3]) or "ok", "problems": MetadataValue.json(problems[:20])})

    return check


def _trap_checks() -> list[AssetChecksDefinition]:
    from pipeline.stages.trap_checks import CHECKS

    return [_trap_check(name, desc) for name, (desc, _) in CHECKS.items()]


TRAP_CHECKS = _trap_checks()


@asset(group_name=EVALUATION)
def trap_files(build: BuildSettings, system_traps: list[dict]) -> Output[dict[str, str]]:
    """traps/system_traps.jsonl in the output folder (its own file: not in cachebench.jsonl nor the manifest)."""
    from pipeline.core.writer import jsonl_bytes
    from pipeline.stages.traps import FILE

    written = out.write_files(build.outputs, {FILE: jsonl_bytes(system_traps)})
    return Output(written, metadata=show.files_written(build.outputs, written, build.profile))


@asset(group_name=EVALUATION)
def trap_reports(build: BuildSettings, trap_files: dict[str, str], benchmark_files: dict[str, str]) -> Output[dict[str, str]]:
    """The reference caches on the system traps, per trap, isolated and stream (skipped where the profile says so)."""
    from pipeline.core.config import load_profile
    from pipeline.references.trap_report import score_trap_references, trap_files as report_files
    from pipeline.stages.traps import FILE

    if not load_profile(build.profile).reference_caches:
        return Output({}, metadata={"skipped": f"profile {build.profile} sets reference_caches: false",
                                    **show.files_written(build.outputs, {}, build.profile)})
    # keyed on the traps file and the benchmark the verified cache trains on
    result, made = bench_step(build, "trap_reports", lambda: (
        r := score_trap_references(build.outputs / FILE, build.outputs / out.BENCH, resolved=build.settings),
        report_files(r)), also=(FILE,))
    written = out.write_files(build.outputs, made)
    return Output(written, metadata={"all_traps": MetadataValue.json(
        {f"{c} ({p})": result[p][c]["all"] for p in ("isolated", "stream") for c in result["caches"]}),
        **show.files_written(build.outputs, written, build.profile)})
