"""What `cacheeval eval` scores and how: the cache (baseline, reference or a user's module), its
protocol (pair, or isolated/shared for a store/lookup cache), where it runs (a user's module in a
worker process, in bubblewrap where available, unless --in-process; baselines and references, which
are the project's own code, in this process), the evaluation-result cache key, and the --max-fhr
gate. Standard library only; a reference's own libraries load when it is built.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from pipeline.core.errors import CacheEvalError, InputError
from pipeline.harness.scoring import Chosen, score_chosen


class GateFailed(CacheEvalError):
    """--max-fhr: the false-hit rate is above the limit (exit code 1, like every CLI error)."""


def choose_cache(args: argparse.Namespace, load_cache: Callable[[str, str | None], tuple[Any, str]]) -> Chosen:
    """The cache named by --baseline, --reference or --cache-module, and the protocol it runs under."""
    from pipeline.core.registry import UnknownNameError
    from pipeline.harness.stateful import is_store_lookup

    reference, sweep = None, ()
    if args.baseline:
        from pipeline.harness.baselines import get_baseline

        try:
            subject, name = get_baseline(args.baseline), args.baseline
        except UnknownNameError as exc:
            raise InputError(f"--baseline: {exc}") from None
    elif args.reference:
        from pipeline.references import get_reference

        try:
            spec = get_reference(args.reference)
        except UnknownNameError as exc:
            raise InputError(f"--reference: {exc}") from None
        kwargs = {"train": Path(args.train)} if getattr(args, "train", None) and spec.name == "verified" else {}
        if getattr(args, "train", None) and spec.name != "verified":
            raise InputError(f"--train: only --reference verified trains; {spec.name} does not. Drop --train")
        subject, name, reference, sweep = spec.build(Path(args.bench), **kwargs), spec.name, spec.name, spec.sweep
    elif getattr(args, "in_process", False):
        subject, name = load_cache(args.cache_module, args.cache_class)
    else:
        return _worker_cache(args)
    if is_store_lookup(subject):
        protocol = args.protocol or "isolated"
    elif args.protocol:
        raise InputError(f"--protocol {args.protocol}: '{name}' is a pair cache (pair -> verdict), not a store/lookup "
                         "cache. Drop --protocol, or give the cache store, lookup and reset")
    else:
        protocol = "pair"
    return Chosen(args.cache_name or name, protocol, subject, reference, tuple(sweep))


def _worker_cache(args: argparse.Namespace) -> Chosen:
    """A user's cache loaded in a worker process (pipeline.harness.isolated), with the benchmark, the
    labels, the train file, the outputs, every cache root and the signing key out of its sight."""
    from pipeline.core import settings
    from pipeline.harness.isolated import Worker

    resolved = settings.resolve()
    hidden = [p for p in (args.bench, args.labels, getattr(args, "train", None)) if p]
    hidden += [resolved.cache_root, resolved.eval_dir, settings.cache_root(None, {})]
    worker = Worker(args.cache_module, args.cache_class, timeout=args.timeout, hidden=hidden,
                    readable=getattr(args, "readable", None) or ())
    hello = worker.start()
    name = hello["name"]
    if hello.get("store_lookup"):
        protocol = args.protocol or "isolated"
    elif args.protocol:
        worker.close()
        raise InputError(f"--protocol {args.protocol}: '{name}' is a pair cache (pair -> verdict), not a store/lookup "
                         "cache. Drop --protocol, or give the cache store, lookup and reset")
    else:
        protocol = "pair"
    return Chosen(args.cache_name or name, protocol, None, worker=worker)


def eval_store() -> Any:
    """The evaluation-result cache the settings name (its signing key under the cache root)."""
    from pipeline.core import settings
    from pipeline.harness.cache import EvalCache

    resolved = settings.resolve()
    return EvalCache(resolved.eval_dir, key_root=resolved.cache_root)


def score(args: argparse.Namespace, chosen: Chosen, rows: Any = None, *, store: Any = None,
          bench_sha256: str | None = None) -> tuple[dict, bool]:
    """`score_chosen` with the options of `cacheeval eval` (the scoring contract), through the
    evaluation-result cache the settings name (or `store`): on `rows` when the benchmark is already
    checked and loaded (a Bench), else loaded, and so checked, on a miss only."""
    store = store if store is not None else eval_store()
    try:
        return score_chosen(chosen, args.bench, args.labels, on_error=args.on_error, use_cache=not args.no_cache,
                            store=store, rows=rows, strict=False, bench_sha256=bench_sha256)
    finally:
        if chosen.worker is not None:
            chosen.worker.close()


def summary_line(data: dict) -> str:
    """One line for a store/lookup run: protocol, wrong-entry hits and lookup latency."""
    p, lat = data["protocol"], data["latency_ms"]
    wrong = p["wrong_entry_hits"]
    return (f"{data['cache_name']}: protocol {p['name']}, {p['served']} of {p['lookups']} lookups served, "
            f"wrong-entry hits {wrong['total']} ({wrong['on_hit_rows']} on HIT rows, {wrong['on_miss_rows']} on MISS "
            f"rows); lookup p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")


def gate(data: dict, max_fhr: float, name: str) -> str:
    """The --max-fhr verdict: a one-line pass message, or GateFailed naming both numbers."""
    fhr = data["metrics"]["fhr"]
    if fhr["value"] is None:
        raise GateFailed(f"FHR of {name} is undefined (no MISS rows), so --max-fhr {max_fhr:g} cannot be checked. "
                         "Score a benchmark that has MISS rows")
    text = f"FHR {fhr['value']:.3f} ({fhr['k']}/{fhr['n']})"
    errors = (data.get("errors") or {}).get("count") or 0
    if errors:
        # An error is scored MISS, and a MISS is never a false hit: a cache that raises (or reads what
        # it is not given) would pass any FHR limit. A gate passes only a cache that decided every row.
        raise GateFailed(f"{name}: {errors:,} of {data['bench']['n']:,} decisions were errors (scored MISS), so its "
                         f"{text} says nothing against --max-fhr {max_fhr:g}. Fix the cache (the report lists the "
                         "first errors)")
    if fhr["value"] > max_fhr:
        raise GateFailed(f"{name}: {text} exceeds --max-fhr {max_fhr:g}. Make the cache serve fewer false hits, "
                         "or raise the limit")
    return f"{name}: {text} is within --max-fhr {max_fhr:g}: pass"
