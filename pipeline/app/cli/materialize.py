"""Run the asset graph in process (the same assets the UI runs) and compare builds byte for byte.

A build runs the jobs of pipeline.app.jobs in order: the sources, every domain partition of
generation and verification, then selection, difficulty and assembly with their blocking checks.
It writes the whole output into a work folder beside the output folder and, only when the whole run
succeeded, exchanges the two in one step (pipeline/core/publish.py): a failed or killed build leaves
the committed outputs as they were, never a mix of old and new files.
"""
from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pipeline.core.errors import BuildError

# The CLI prints its own progress and one line on failure; Dagster's log goes to a file (build_log).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@dataclass
class BuildResult:
    profile: str
    out_dir: Path
    files: dict[str, str]
    stage_seconds: dict[str, float] = field(default_factory=dict)
    cells: dict[str, int] = field(default_factory=dict)
    drops: dict[str, int] = field(default_factory=dict)
    kappa: float | None = None


def _failed_checks(result) -> list[str]:
    out = []
    for ev in result.get_asset_check_evaluations():
        if not ev.passed:
            meta = {k: getattr(v, "value", v) for k, v in ev.metadata.items()}
            detail = meta.get("why") or meta.get("problems") or ""
            if isinstance(detail, list):
                detail = "; ".join(map(str, detail[:3]))
            out.append(f"check {ev.check_name} failed: {detail}")
    return sorted(out)


def _step_seconds(instance, run_id: str) -> dict[str, float]:
    from dagster import DagsterEventType

    starts, out = {}, defaultdict(float)
    for rec in instance.all_logs(run_id):
        ev = rec.dagster_event
        if ev is None or not ev.step_key:
            continue
        if ev.event_type == DagsterEventType.STEP_START:
            starts[ev.step_key] = rec.timestamp
        elif ev.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE) and ev.step_key in starts:
            out[ev.step_key] += rec.timestamp - starts[ev.step_key]
    return dict(out)


# The outputs job's steps in the order they usually run (for the progress lines' counts).
_STEP_ORDER = ("selected_rows", "row_similarities", "row_difficulty", "cachebench", "benchmark_files",
               "calibration_report", "baseline_reports", "reference_reports", "stream_reports", "transfer_reports",
               "system_traps", "trap_files", "trap_reports", "hf_dataset",
               "build_manifest")


def run_build(profile: str = "v1.1", out_dir: Path | None = None, datasets_dir: Path | None = None,
              cache_dir: Path | None = None, progress: Callable[[str], None] = lambda s: None,
              commercial_only: bool = False) -> BuildResult:
    from dagster import DagsterInstance, materialize

    from pipeline.orchestration.memory_io import MemoryIOManager

    from domains import domain_names
    from pipeline.core.config import load_profile
    from pipeline.core.paths import OUTPUTS
    from pipeline.app.jobs import all_assets, all_checks, asset_graph, domain_job, outputs_job, sources_job, unbuilt
    from pipeline.orchestration.resources import BuildSettings

    from pipeline.app.cli.build_log import BuildLog, check_inputs
    from pipeline.core.settings import use_cache_root

    load_profile(profile)  # unknown profile: fail before any work
    with use_cache_root(cache_dir):  # the corpora's datasets cache goes under --cache-dir, as the build's does
        check_inputs(datasets_dir)  # a malformed corpus: one line before Dagster starts
    log = BuildLog(cache_dir)
    missing = unbuilt()
    if missing:
        raise BuildError(f"asset {missing[0].to_user_string()} is in no build job. Add its group to a job's "
                         "selection in pipeline/app/jobs.py")
    target = Path(out_dir) if out_dir else OUTPUTS
    from pipeline.core.publish import publish, work_dir

    work = work_dir(target)  # beside the target, so the finished folder can replace it in one step
    staging = work / "out"
    instance = None
    try:
        build = BuildSettings(profile=profile, out_dir=str(staging), datasets_dir=str(datasets_dir or ""),
                              cache_dir=str(cache_dir or ""), commercial_only=commercial_only)
        # the runs' values stay in this process (pipeline/orchestration/memory_io.py)
        resources = {"build": build, "io_manager": MemoryIOManager()}
        instance = DagsterInstance.ephemeral()
        stages: dict[str, float] = defaultdict(float)

        def run(job, failed_what: str, partition_key: str | None = None):
            """Materialise a job's selection (with the checks of its assets); its step times summed
            into `stages`, mapped steps (one per shard) under the op's name."""
            res = materialize([*all_assets, *all_checks], selection=job.selection, partition_key=partition_key,
                              resources=resources, instance=instance, raise_on_error=False, run_config=QUIET)
            for step, s in _step_seconds(instance, res.run_id).items():
                stages[step.split("[")[0]] += s
            failed = _failed_checks(res)
            if failed:
                raise BuildError(f"{failed[0]}{f' (+{len(failed) - 1} more failed checks)' if len(failed) > 1 else ''}. "
                                 "Nothing was written; fix the generator or quota named")
            if not res.success:
                raise BuildError(f"{failed_what} failed: {_first_error(instance, res.run_id)} "
                                 f"(the Dagster log: {log.path})")
            return res

        t0 = time.perf_counter()
        mined = run(sources_job, "reading the sources").asset_value("mined_pairs")
        if mined.shards:
            progress(f"[0/{len(domain_names())}] real traffic: {len(mined.candidates)} pairs mined from "
                     f"{len(mined.shards)} shards in {time.perf_counter() - t0:.1f}s")
        for i, domain in enumerate(domain_names(), 1):
            t0 = time.perf_counter()
            run(domain_job, f"generating {domain}", partition_key=domain)
            progress(f"[{i}/{len(domain_names())}] {domain}: generated and verified in {time.perf_counter() - t0:.1f}s")
        from pipeline.app.cli.stage_progress import StageWatcher, load_times, save_times

        root = build.caches
        steps = sorted(k.path[-1] for k in outputs_job.selection.resolve(asset_graph()))
        order = [s for s in _STEP_ORDER if s in steps] + [s for s in steps if s not in _STEP_ORDER]
        previous = load_times(root, profile)
        progress(f"selecting, embedding, assembling: {len(order)} steps ...")
        with StageWatcher(resources["io_manager"], order, previous, progress):
            res = run(outputs_job, "build")
        save_times(root, profile, {s: stages[s] for s in order if s in stages})
        files = dict(res.asset_value("build_manifest")["outputs"])
        publish(staging, target)
        cells = Counter(f"{r['domain']}/{r['label']}" for r in res.asset_value("cachebench"))
        drops: Counter = Counter()
        for d, dd in res.asset_value("selected_rows").drops.items():
            for reason, n in dd.items():
                drops[f"{d}:{reason}"] += n
        kappa = res.asset_value("row_difficulty").kappa
        return BuildResult(profile, target, files, dict(stages), dict(sorted(cells.items())), dict(sorted(drops.items())),
                           kappa)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if instance is not None:
            log.write(instance)


def _first_error(instance, run_id: str) -> str:
    from dagster import DagsterEventType

    for rec in instance.all_logs(run_id):
        ev = rec.dagster_event
        if ev is not None and ev.event_type == DagsterEventType.STEP_FAILURE:
            err = ev.step_failure_data.error
            while err.cause is not None and err.cls_name in ("DagsterExecutionStepExecutionError",):
                err = err.cause
            first = err.message.strip().splitlines()[0] if err.message else ""
            # Dagster's message repeats the exception's qualified name ("pipeline.core.errors.BuildError: ...")
            first = re.sub(rf"^[\w.]*\b{re.escape(err.cls_name)}: ", "", first)
            return f"{ev.step_key}: {err.cls_name}: {first}"
    return "see the Dagster run log"


@dataclass(frozen=True)
class Difference:
    file: str
    detail: str


# Written by the build but not listed in manifest.json (the system traps and their report, #29 item 4):
# compared too, wherever either side has them.
UNLISTED_OUTPUTS = ("traps/system_traps.jsonl", "reports/traps.md", "reports/traps.json")


def compare_outputs(committed: Path, rebuilt: Path) -> list[Difference]:
    """Every file the committed manifest lists (and the manifest itself), and UNLISTED_OUTPUTS where
    either folder has them, byte for byte; for JSONL the first differing row id and field."""
    manifest_path = committed / "manifest.json"
    if not manifest_path.is_file():
        raise BuildError(f"{manifest_path}: no build manifest. Run `cacheeval build` first")
    listed = sorted(json.loads(manifest_path.read_text(encoding="utf-8"))["outputs"])
    rebuilt_listed = sorted(json.loads((rebuilt / "manifest.json").read_text(encoding="utf-8"))["outputs"])
    diffs = []
    unlisted = [r for r in UNLISTED_OUTPUTS if (committed / r).is_file() or (rebuilt / r).is_file()]
    for rel in sorted(set(listed) | set(rebuilt_listed)) + ["manifest.json"] + unlisted:
        a, b = committed / rel, rebuilt / rel
        if not a.is_file() or not b.is_file():
            diffs.append(Difference(rel, "missing from the committed outputs" if not a.is_file() else "not produced by the rebuild"))
            continue
        da, db = a.read_bytes(), b.read_bytes()
        if da != db:
            diffs.append(Difference(rel, _first_difference(rel, da, db)))
    return diffs


def _first_difference(rel: str, a: bytes, b: bytes) -> str:
    if not rel.endswith(".jsonl"):
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return f"first difference at byte {i}"
    la, lb = a.decode("utf-8", "replace").splitlines(), b.decode("utf-8", "replace").splitlines()
    for n, (x, y) in enumerate(zip(la, lb), 1):
        if x == y:
            continue
        try:
            ra, rb = json.loads(x), json.loads(y)
        except json.JSONDecodeError:
            return f"line {n}: not valid JSON in one of the files"
        rid = ra.get("id", f"line {n}")
        fields_ = [k for k in list(ra) + [k for k in rb if k not in ra] if ra.get(k) != rb.get(k)]
        return f"row {rid}: field {fields_[0] if fields_ else '(key order or formatting)'} differs"
    return f"{len(la)} rows committed vs {len(lb)} rebuilt"
