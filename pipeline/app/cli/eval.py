"""`cacheeval eval`: score a cache, or a reference baseline, on a benchmark file.

Standard library only (like the harness): scoring a cache needs nothing of the pipeline's stack.
The benchmark is first checked against the scoring contract (pipeline.harness.contract, lenient:
what scoring needs), so a pair file from anywhere is scored; a user's cache then decides in a
worker process that sees requests only (pipeline.harness.isolated). The file is read as a stream
(pipeline.harness.load.load_scored): memory follows the row count, not the file's size.

A rerun is decided by the benchmark's sha256: bytes this installation has checked before (a signed
record in the result cache) go straight to the result-cache lookup, and are checked again only on
a miss, before the cache decides; --no-cache checks and runs everything.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.core.errors import CacheEvalError, InputError, UsageError
from pipeline.core.writer import atomic_write, output_problem
from pipeline.app.cli.argtypes import FRACTION, SECONDS
from pipeline.app.cli import eval_stream
from pipeline.harness.stateful import PROTOCOLS
from pipeline.harness.stream import STREAM
from pipeline.harness.user_cache import load_cache, one_line as _one_line

EPILOG = """examples:
  cacheeval eval --bench outputs/cachebench.jsonl --baseline exact_match
  cacheeval eval --bench outputs/splits/test.jsonl --labels test_labels.jsonl --baseline always_hit
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module mycache --out report.md --json report.json
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module path/to/mycache.py --cache-class MyCache
  cacheeval eval --bench outputs/cachebench.jsonl --reference gptcache-minilm@0.80 --json gptcache.json
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module mystore.py --cache-class MyStore --protocol shared
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module mycache --max-fhr 0.05   # a CI gate: exit 1 above 5%

a cache module exposes a callable `cache(pair) -> verdict`, or a class named by --cache-class that is
built with no arguments and is callable or has a `decide(pair)` method. A pair
(pipeline.harness.Pair) holds the two requests only: pair.a and pair.b (query, context,
system_prompt, tools), also as pair.query_a ... pair.tools_b, and an opaque pair.key; a label,
expected answer or any other row field is not there. A verdict is a pipeline.harness.Verdict, any
object with the same attributes (is_hit, confidence, decision_ms, tier_used, cost_usd), a dict with
those keys, or a bool. A dotted module is imported with the current directory on the import path; a
.py file with its own folder on it.

a user's cache runs in a worker process, in bubblewrap where it works (the project, outputs/, the
benchmark and labels files and every cache root out of its sight or read-only), and the report
says which ("isolation"); a decision that takes longer than --timeout seconds, or a worker that
crashes, is scored MISS in the error tier. --in-process runs it in this process, for debugging.

the benchmark needs, per line, an id, query_a, query_b and a label or binary_label (HIT/MISS);
context_*, system_prompt_*, tools_* and every other field are optional (`cacheeval validate`
holds a file to the build's full contract).

a store/lookup cache (an object with store(request, response), lookup(request) -> response or
None, and reset(); see pipeline.harness.stateful) runs under --protocol isolated (reset, store A,
look up B for every row; the default) or shared (every A stored in one cache, then every B looked
up; serving another row's response is a wrong-entry hit). `cacheeval references` lists the
reference caches. The JSON report carries every row's decision, for `cacheeval compare`.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `cacheeval eval`."""
    parser.epilog = EPILOG
    parser.add_argument("--bench", required=True, metavar="PATH",
                        help="benchmark JSONL file, a Parquet split, or the outputs/hf folder (needs pyarrow)")
    parser.add_argument("--labels", metavar="PATH",
                        help="labels JSONL (id + withheld fields) for a split published without labels")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", metavar="NAME", help="a reference cache: always_miss, always_hit, exact_match")
    which.add_argument("--reference", metavar="NAME",
                       help="a reference cache such as gptcache-minilm@0.80 or verified (see: cacheeval references)")
    which.add_argument("--cache-module", metavar="MOD", help="dotted module name or path to a .py file")
    parser.add_argument("--cache-class", metavar="CLS", help="class in --cache-module to instantiate (no arguments)")
    parser.add_argument("--protocol", choices=(*PROTOCOLS, STREAM),
                        help="for a store/lookup cache: isolated (default), shared or stream")
    parser.add_argument("--max-fhr", type=FRACTION, metavar="X",
                        help="exit 1 when the false-hit rate exceeds X (0 to 1): a CI gate")
    parser.add_argument("--cache-name", metavar="NAME", help="name shown in the report (default: derived)")
    parser.add_argument("--out", metavar="PATH", help="write the Markdown report here instead of stdout")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON here")
    parser.add_argument("--no-cache", action="store_true",
                        help="evaluate even when the evaluation-result cache holds this exact evaluation")
    parser.add_argument("--on-error", choices=("miss", "raise"), default="miss",
                        help="a raising cache: score the row MISS with tier `error` (default) or stop")
    parser.add_argument("--timeout", type=SECONDS, default=30.0, metavar="SECONDS",
                        help="a user's cache: seconds per decision before the worker is stopped and the pair "
                             "scored in the error tier (default 30)")
    parser.add_argument("--in-process", action="store_true",
                        help="run a user's cache in this process (today's debugging mode: it could read the labels)")
    parser.add_argument("--readable", action="append", metavar="DIR",
                        help="a folder the worker may read (e.g. a model folder); repeatable")
    parser.add_argument("--train", metavar="PATH",
                        help="--reference verified: the labelled pairs it trains on (default: the project's published "
                             "outputs/splits/train.jsonl)")
    eval_stream.add_options(parser)


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output path that is not a new or existing regular file in an
    existing folder, or that is an input of the same run (the benchmark, the labels, the cache
    module), or the other output: one line, exit 2."""
    inputs = {"--bench": args.bench, "--labels": args.labels, "--cache-module": _module_file(args.cache_module),
              "--train": getattr(args, "train", None)}
    outs = [(opt, getattr(args, dest)) for opt, dest in (("--out", "out"), ("--json", "json")) if getattr(args, dest)]
    for option, path in outs:
        problem = output_problem(path, inputs)
        if problem:
            raise UsageError(f"{option} {path}: {problem}. Choose a new or existing regular file that is none of "
                             "the run's inputs")
    if len(outs) == 2 and Path(outs[0][1]).absolute() == Path(outs[1][1]).absolute():
        raise UsageError(f"--out and --json are the same file {outs[0][1]}. Give each report its own file")


def _module_file(spec: str | None) -> str | None:
    """The file of a --cache-module given as a path (a dotted module is not a file of its own here)."""
    return spec if spec and spec.endswith(".py") else None


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all (pipeline.core.writer.atomic_write), checked again
    just before (check_outputs ran before any work)."""
    problem = output_problem(path)
    if problem:
        raise UsageError(f"{path}: {problem}. Choose a new or existing regular file")
    atomic_write(Path(path), text.encode("utf-8"))


def run(args: argparse.Namespace) -> int:
    """Score the chosen cache, baseline or reference (through the evaluation-result cache), write the
    report, and apply the --max-fhr gate."""
    from pipeline.app.cli.scoring import choose_cache, eval_store, gate, score, summary_line
    from pipeline.harness import Report
    from pipeline.harness.cache import benchmark_sha256
    from pipeline.harness.load import load_scored

    if args.cache_class and not args.cache_module:
        raise InputError("--cache-class needs --cache-module. Name the module that defines the class")
    if args.train and args.reference != "verified":
        raise InputError("--train: only --reference verified trains on a file. Drop --train")
    check_outputs(args)
    eval_stream.check_options(args, args.protocol)
    if args.protocol == STREAM:
        return _stream(args)
    store = eval_store()
    # The benchmark is checked against the scoring contract before any cache is imported or built,
    # unless this installation has checked these very bytes before (then the result cache may hold
    # the run, and the check runs on a miss, before the cache decides).
    sha, rows = _checked_before(args, store), None
    if sha is None:
        rows = load_scored(args.bench, args.labels, strict=False)
        sha = rows.sha256 or benchmark_sha256(args.bench)
        store.mark_checked(sha, _labels_sha256(args.labels), CONTRACT)
    chosen = choose_cache(args, load_cache)
    try:
        data, cached = score(args, chosen, rows, store=store, bench_sha256=sha)
    except Exception as exc:
        row_id = getattr(exc, "cacheeval_row_id", None)
        if row_id is None:  # not the cache's exception: a bug here, keep the traceback
            raise
        raise CacheEvalError(f"cache '{chosen.name}' raised {_one_line(exc)} on row {row_id}. Fix the cache, or use "
                             "--on-error miss to score such rows as MISS") from None
    if cached:
        print(f"{chosen.name}: served from the evaluation-result cache (identity matched; --no-cache re-runs)",
              file=sys.stderr)
    data["isolation"] = chosen.isolation
    report = Report(data)
    markdown = report.to_markdown()
    if data.get("threshold_sweep"):
        from pipeline.harness.sweep import render_grid_sweep

        markdown += "\n" + render_grid_sweep(data["threshold_sweep"])
    if args.json:
        write_atomic(args.json, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    if args.out:
        write_atomic(args.out, markdown)
        d = report.to_dict()
        print(f"{chosen.name}: F1 {_fmt(d['metrics']['f1']['value'])}, FHR {_fmt(d['metrics']['fhr']['value'])}, "
              f"{d['bench']['n']} rows, {d['errors']['count']} errors; report written to {args.out}")
    else:
        sys.stdout.write(markdown)
    if chosen.protocol != "pair":
        print(summary_line(data), file=sys.stderr)
    if args.max_fhr is not None:
        print(gate(data, args.max_fhr, chosen.name), file=sys.stderr)
    return 0


CONTRACT = "scoring"   # what `cacheeval eval` checks a benchmark against (pipeline.harness.scoring.contract_name)


def _labels_sha256(labels: str | None) -> str | None:
    from pipeline.harness.jsonl import file_sha256

    return file_sha256(labels, "labels file") if labels else None


def _checked_before(args: argparse.Namespace, store: Any) -> str | None:
    """The benchmark's sha256 when this installation checked these bytes (and labels) against the
    scoring contract before (pipeline.harness.cache.EvalCache.checked), else None: check it now.
    --no-cache always checks. Reads the file once, as a stream; any reading problem is left to the
    check, which reports it on one line."""
    from pipeline.harness.cache import benchmark_sha256
    from pipeline.harness.jsonl import file_sha256
    from pipeline.harness.parquet import is_parquet_input

    if args.no_cache:
        return None
    try:
        sha = benchmark_sha256(args.bench) if is_parquet_input(args.bench) else file_sha256(args.bench)
        labels = _labels_sha256(args.labels)
    except (InputError, OSError):
        return None
    return sha if store.checked(sha, labels, CONTRACT) else None


def _stream(args: argparse.Namespace) -> int:
    """`--protocol stream`: the benchmark loaded whole (the workload interleaves every row's requests),
    the cache chosen, the stream scored (pipeline.app.cli.eval_stream). A user's cache runs under the
    stream protocol in this process only, so it must be asked for with --in-process."""
    from pipeline.app.cli.scoring import choose_cache
    from pipeline.harness import load_bench

    if args.cache_module and not args.in_process:
        raise UsageError("--protocol stream runs a user's cache in this process only (no worker yet): add "
                         "--in-process, or score it in its worker under --protocol isolated or shared")
    rows = load_bench(args.bench, args.labels, strict=False)   # the scoring contract, as under the other protocols
    chosen = choose_cache(args, load_cache)
    return eval_stream.run(args, chosen, rows, _domain_order())


def _domain_order() -> tuple[str, ...]:
    """The registry's domain order for the per-domain tables, where the pipeline's stack is installed."""
    try:
        from domains import domain_names

        return tuple(domain_names())
    except ImportError:
        return ()


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"
