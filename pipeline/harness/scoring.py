"""Scoring one chosen cache on a benchmark through the evaluation-result cache: the one path used
by `cacheeval eval` (pipeline.app.cli) and by the build's reference reports (pipeline.stages).
Standard library only; a store/lookup cache runs under its protocol (pipeline.harness.stateful).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence


@dataclass
class Chosen:
    """The cache to score: its report name, protocol, the object whose code and declared
    model/settings key the result cache, and what the evaluation loop calls."""

    name: str
    protocol: str                      # "pair", "isolated" or "shared"
    subject: Any                       # the user's (or reference's) cache object
    reference: str | None = None
    sweep: tuple[float, ...] = ()
    rows: list = field(default_factory=list)


def score_chosen(chosen: Chosen, bench: str | Path, labels: str | Path | None = None, *, on_error: str = "miss",
                 use_cache: bool = True, store: Any = None, rows: list | None = None,
                 domains: Sequence[str] | None = None) -> tuple[dict, bool]:
    """(report dict, served from the result cache). The key covers the benchmark, the cache's code
    and declared model snapshot and settings (a reference's threshold and weights' sha256), the
    protocol, the reference name, the harness and these options. `store` is an EvalCache (default:
    the one under the cache root). `rows`: the benchmark already loaded (and so checked against the
    contract) by the caller; otherwise it is loaded here, with the registered `domains` if given."""
    from pipeline.core.hashing import file_sha256
    from pipeline.harness import evaluate, load_bench
    from pipeline.harness.cache import EvalCache
    from pipeline.harness.stateful import ProtocolRun, pair_protocol
    from pipeline.harness.sweep import grid_sweep

    if rows is None:
        rows = load_bench(bench, labels, domains=domains)
    if store is None:
        store = EvalCache()  # $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval (pipeline.core.settings)
    config = {"on_error": on_error, "cache_name": chosen.name,
              "labels_sha256": file_sha256(labels) if labels else None,
              "protocol": chosen.protocol, "reference": chosen.reference, "sweep": list(chosen.sweep),
              "decisions": True}
    identity = store.identity(bench, chosen.subject, config)

    def run() -> dict:
        runner = None
        cache = chosen.subject
        if chosen.protocol != "pair":
            runner = ProtocolRun(chosen.subject, chosen.protocol, rows)
            runner.prepare()  # the shared protocol's stores: a failure there is one error, not one per row
            cache = runner
        data = evaluate(cache, rows, cache_name=chosen.name, on_error=on_error, decisions=True).to_dict()
        data["protocol"] = runner.summary() if runner else pair_protocol()
        if chosen.sweep:
            data["threshold_sweep"] = grid_sweep(data["decisions"], chosen.sweep)
        return data

    return store.cached_run(identity, run, use_cache=use_cache)
