"""What `cacheeval eval` scores and how: the cache (baseline, reference or a user's module), its
protocol (pair, or isolated/shared for a store/lookup cache), the evaluation-result cache key, and
the --max-fhr gate. Standard library only; a reference's own libraries load when it is built.
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
        subject, name, reference, sweep = spec.build(Path(args.bench)), spec.name, spec.name, spec.sweep
    else:
        subject, name = load_cache(args.cache_module, args.cache_class)
    if is_store_lookup(subject):
        protocol = args.protocol or "isolated"
    elif args.protocol:
        raise InputError(f"--protocol {args.protocol}: '{name}' is a pair cache (row -> verdict), not a store/lookup "
                         "cache. Drop --protocol, or give the cache store, lookup and reset")
    else:
        protocol = "pair"
    return Chosen(args.cache_name or name, protocol, subject, reference, tuple(sweep))


def score(args: argparse.Namespace, chosen: Chosen, rows: list | None = None) -> tuple[dict, bool]:
    """`score_chosen` with the options of `cacheeval eval`, on `rows` when the benchmark is already loaded,
    through the evaluation-result cache the settings name."""
    from pipeline.core import settings
    from pipeline.harness.cache import EvalCache

    store = EvalCache(settings.resolve().eval_dir)
    return score_chosen(chosen, args.bench, args.labels, on_error=args.on_error, use_cache=not args.no_cache,
                        store=store, rows=rows)


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
    if fhr["value"] > max_fhr:
        raise GateFailed(f"{name}: {text} exceeds --max-fhr {max_fhr:g}. Make the cache serve fewer false hits, "
                         "or raise the limit")
    return f"{name}: {text} is within --max-fhr {max_fhr:g}: pass"
