"""`cacheeval eval --protocol stream`: a store/lookup cache serving a seeded workload built from the
benchmark (pipeline.harness.stream), its declared error bound tested (pipeline.harness.bound).

The options are added to `cacheeval eval` by `add_options`; `run` is called by eval's run() once the
benchmark is loaded and the cache chosen. Standard library only, except `--plot` (matplotlib,
loaded only when a plot is asked for).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.app.cli.argtypes import FRACTION, NATURAL, POSITIVE
from pipeline.core.errors import CacheEvalError, InputError, UsageError
from pipeline.harness.stream import DEFAULT_GAP, DEFAULT_ORDERS, DEFAULT_SEED, EVICTIONS, STREAM

OPTIONS = ("gap", "capacity", "eviction", "orders", "seed", "check_bound", "plot")
EPILOG = """
stream protocol (--protocol stream, store/lookup caches): the cache serves a seeded workload, every
row's A and B interleaved with the other rows' requests (a miss is answered and stored), under
--orders arrival orders; --gap, --capacity and --eviction shape it. A cache may expose
evict(request), feedback(request, response, correct) and error_bound; --check-bound exits 1 unless
the one-sided 95% upper bound of its error rate (wrong served hits / served hits) is within the bound:
  cacheeval eval --bench outputs/cachebench.jsonl --reference vcache-minilm@delta=0.02 --protocol stream --check-bound
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module mystore.py --cache-class MyStore \\
      --protocol stream --gap 50 --capacity 500 --eviction lru --orders 5 --json s.json --plot s.png
"""


class BoundFailed(CacheEvalError):
    """--check-bound: the error rate's upper bound is above the bound (exit code 1)."""


def add_options(parser: argparse.ArgumentParser) -> None:
    """The stream protocol's options of `cacheeval eval` (each needs --protocol stream)."""
    group = parser.add_argument_group("stream protocol (--protocol stream)")
    group.add_argument("--gap", type=NATURAL, metavar="N",
                       help=f"mean number of requests between a row's A and its B (default {DEFAULT_GAP})")
    group.add_argument("--capacity", type=POSITIVE, metavar="N",
                       help="entries the cache may hold (default: unbounded)")
    group.add_argument("--eviction", choices=EVICTIONS,
                       help="when full: evict the least recently stored or served (lru, default), the oldest stored "
                            "(fifo), or store nothing more (none); the harness calls the cache's evict(request)")
    group.add_argument("--orders", type=POSITIVE, metavar="N",
                       help=f"arrival orders (seeds; default {DEFAULT_ORDERS})")
    group.add_argument("--seed", type=NATURAL, metavar="N", help=f"the first order's seed (default {DEFAULT_SEED})")
    group.add_argument("--check-bound", nargs="?", const="declared", type=_delta_or_declared, metavar="DELTA",
                       help="exit 1 unless the error rate's one-sided 95%% upper bound is within the cache's declared "
                            "error_bound (or DELTA)")
    group.add_argument("--plot", metavar="PATH", help="write the cumulative FHR of every order as a PNG (matplotlib)")
    parser.epilog = (parser.epilog or "") + EPILOG


def _delta_or_declared(text: str) -> Any:
    return text if text == "declared" else FRACTION(text)


def check_options(args: argparse.Namespace, protocol: str | None) -> None:
    """Stream options without --protocol stream are refused, before any work (one line, exit 2)."""
    given = [f"--{o.replace('_', '-')}" for o in OPTIONS if getattr(args, o, None) is not None]
    if given and protocol != STREAM:
        raise UsageError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --protocol stream. "
                         "Add --protocol stream (a store/lookup cache), or drop the option")
    if args.plot:
        from pipeline.core.writer import output_problem

        problem = output_problem(args.plot, {"--bench": args.bench, "--labels": args.labels,
                                             "--out": args.out, "--json": args.json})
        if problem:
            raise UsageError(f"--plot {args.plot}: {problem}. Choose a new or existing regular file that is none of "
                             "the run's inputs or other outputs")


def _write(path: str, data: bytes) -> None:
    """Whole or not at all, the path checked again just before (as eval's other outputs)."""
    from pipeline.core.writer import atomic_write, output_problem

    problem = output_problem(path)
    if problem:
        raise UsageError(f"{path}: {problem}. Choose a new or existing regular file")
    atomic_write(Path(path), data)


def _fhr_gate(report: dict, max_fhr: float) -> str:
    """--max-fhr on the stream: the false-hit rate over every order's negative lookups."""
    from pipeline.app.cli.scoring import GateFailed

    o, name = report["overall"], report["cache_name"]
    if o["fhr"] is None:
        raise GateFailed(f"FHR of {name} is undefined (no negative lookups), so --max-fhr {max_fhr:g} cannot be "
                         "checked")
    text = f"stream FHR {o['fhr']:.3f} ({o['false_hits_on_negatives']}/{o['negatives']})"
    if o["fhr"] > max_fhr:
        raise GateFailed(f"{name}: {text} exceeds --max-fhr {max_fhr:g}. Make the cache serve fewer false hits, "
                         "or raise the limit")
    return f"{name}: {text} is within --max-fhr {max_fhr:g}: pass"


def config_of(args: argparse.Namespace) -> Any:
    from pipeline.harness.stream import StreamConfig

    return StreamConfig(gap=DEFAULT_GAP if args.gap is None else args.gap, capacity=args.capacity,
                        eviction=args.eviction or "lru", orders=args.orders or DEFAULT_ORDERS,
                        seed=DEFAULT_SEED if args.seed is None else args.seed)


def run(args: argparse.Namespace, chosen: Any, rows: list, domain_order: tuple[str, ...] = ()) -> int:
    """Score `chosen` under the stream protocol through the evaluation-result cache, write the
    report (Markdown, JSON, plot) and apply --check-bound."""
    from pipeline.core import settings
    from pipeline.harness.bound import declared_bound
    from pipeline.harness.cache import EvalCache
    from pipeline.harness.stream import check_bound, render_markdown, score_stream, summary_line

    try:
        declared_bound(chosen.subject)
    except ValueError as exc:
        raise InputError(f"cache '{chosen.name}': {exc}. Fix the cache's error_bound") from None
    given = args.check_bound if isinstance(args.check_bound, float) else None
    store = EvalCache(settings.resolve().eval_dir)
    try:
        report, cached = score_stream(chosen.name, chosen.subject, args.bench, rows, config_of(args),
                                      labels=args.labels, reference=chosen.reference, on_error=args.on_error,
                                      use_cache=not args.no_cache, store=store, error_bound=given,
                                      domain_order=domain_order)
    except Exception as exc:
        row_id = getattr(exc, "cacheeval_row_id", None)
        if row_id is None:
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CacheEvalError(f"cache '{chosen.name}' raised {type(exc).__name__}: {first} on row {row_id} (stream "
                             "protocol). Fix the cache, or use --on-error miss to score such lookups as misses"
                             ) from None
    if cached:
        print(f"{chosen.name}: served from the evaluation-result cache (identity matched; --no-cache re-runs)",
              file=sys.stderr)
    markdown = render_markdown(report)
    if args.json:
        _write(args.json, (json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))
    if args.plot:
        from pipeline.references.stream_report import render_stream_plot

        _write(args.plot, render_stream_plot({chosen.name: report}))
    if args.out:
        _write(args.out, markdown.encode("utf-8"))
    else:
        sys.stdout.write(markdown)
    print(summary_line(report), file=sys.stderr)
    if args.max_fhr is not None:
        print(_fhr_gate(report, args.max_fhr), file=sys.stderr)
    if args.check_bound is not None:
        passed, line = check_bound(report)
        if not passed:
            raise BoundFailed(line)
        print(line, file=sys.stderr)
    return 0
