"""`cacheeval eval`: score a cache, or a reference baseline, on a benchmark file.

Standard library only (like the harness): scoring a cache needs nothing of the pipeline's stack.
The benchmark is first checked against the row contract (pipeline.harness.load), with the domain
registry's names when the pipeline's stack is installed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.core.errors import CacheEvalError, InputError, UsageError, warn
from pipeline.core.writer import atomic_write, output_problem
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

a cache module exposes a callable `cache(row) -> verdict`, or a class named by --cache-class that is
built with no arguments and is callable or has a `decide(row)` method. A verdict is a
pipeline.harness.Verdict, any object with the same attributes (is_hit, confidence, decision_ms,
tier_used, cost_usd), a dict with those keys, or a bool. A dotted module is imported with the
current directory on the import path; a .py file with its own folder on it.

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
    parser.add_argument("--max-fhr", type=_fraction, metavar="X",
                        help="exit 1 when the false-hit rate exceeds X (0 to 1): a CI gate")
    parser.add_argument("--cache-name", metavar="NAME", help="name shown in the report (default: derived)")
    parser.add_argument("--out", metavar="PATH", help="write the Markdown report here instead of stdout")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON here")
    parser.add_argument("--no-cache", action="store_true",
                        help="evaluate even when the evaluation-result cache holds this exact evaluation")
    parser.add_argument("--on-error", choices=("miss", "raise"), default="miss",
                        help="a raising cache: score the row MISS with tier `error` (default) or stop")
    eval_stream.add_options(parser)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def registered_domains() -> tuple[str, ...] | None:
    """The domain registry's names, so a row of an unknown domain is refused as the build refuses
    it. The registry needs the pipeline's own stack (PyYAML); where that is not installed, scoring
    still works and domains are checked for their form only (one warning says so)."""
    try:
        from domains import domain_names

        return tuple(domain_names())
    except ImportError as exc:
        warn(f"the domain registry cannot be loaded here ({_one_line(exc)}), so domain names are checked for "
             "their form only. Install the pipeline's requirements to check them against the registry")
        return None


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output path that is not a new or existing regular file in an
    existing folder, or that is an input of the same run (the benchmark, the labels, the cache
    module), or the other output: one line, exit 2."""
    inputs = {"--bench": args.bench, "--labels": args.labels, "--cache-module": _module_file(args.cache_module)}
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
    from pipeline.app.cli.scoring import choose_cache, gate, score, summary_line
    from pipeline.harness import Report, load_bench

    if args.cache_class and not args.cache_module:
        raise InputError("--cache-class needs --cache-module. Name the module that defines the class")
    check_outputs(args)
    eval_stream.check_options(args, args.protocol)
    # The benchmark is checked against the row contract before any cache is imported or built.
    domains = registered_domains()
    rows = load_bench(args.bench, args.labels, domains=domains)
    chosen = choose_cache(args, load_cache)
    if chosen.protocol == STREAM:
        return eval_stream.run(args, chosen, rows, domains or ())
    try:
        data, cached = score(args, chosen, rows)
    except Exception as exc:
        row_id = getattr(exc, "cacheeval_row_id", None)
        if row_id is None:  # not the cache's exception: a bug here, keep the traceback
            raise
        raise CacheEvalError(f"cache '{chosen.name}' raised {_one_line(exc)} on row {row_id}. Fix the cache, or use "
                             "--on-error miss to score such rows as MISS") from None
    if cached:
        print(f"{chosen.name}: served from the evaluation-result cache (identity matched; --no-cache re-runs)",
              file=sys.stderr)
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


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"
