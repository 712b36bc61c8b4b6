"""Scoring one chosen cache on a benchmark through the evaluation-result cache: the one path used
by `cacheeval eval` (pipeline.app.cli), the build's reference reports (pipeline.stages) and the
quarterly slice's targets (pipeline.evolving). Standard library only.

The cache decides on Pairs (requests only, pipeline.harness.interface): in this process for trusted
code (references, baselines, `--in-process`), or in a worker process (`Chosen.worker`,
pipeline.harness.isolated) for a user's cache; either way the labels are joined here, afterwards
(pipeline.harness.evaluation.score). A store/lookup cache runs under its protocol
(pipeline.harness.stateful).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence


@dataclass
class Chosen:
    """The cache to score: its report name, protocol, the object whose code and declared
    model/settings key the result cache, and what the evaluation loop calls. A user's cache run
    apart has no `subject` here but a `worker` (pipeline.harness.isolated.Worker)."""

    name: str
    protocol: str                      # "pair", "isolated" or "shared"
    subject: Any                       # the user's (or reference's) cache object; None when run in a worker
    reference: str | None = None
    sweep: tuple[float, ...] = ()
    rows: list = field(default_factory=list)
    worker: Any = None                 # pipeline.harness.isolated.Worker, or None: decided in this process

    @property
    def isolation(self) -> str:
        """How the cache ran: "bubblewrap", "process" (a worker process) or "in-process"."""
        return self.worker.isolation if self.worker is not None else "in-process"


def score_chosen(chosen: Chosen, bench: str | Path, labels: str | Path | None = None, *, on_error: str = "miss",
                 use_cache: bool = True, store: Any = None, rows: list | None = None,
                 domains: Sequence[str] | None = None) -> tuple[dict, bool]:
    """(report dict, served from the result cache). The key covers the benchmark, the cache's code
    and declared model snapshot and settings (a reference's threshold and weights' sha256), the
    protocol, the reference name, the harness, how the cache was isolated and these options.
    `store` is an EvalCache (default: the one under the cache root). `rows`: the benchmark already
    loaded (and so checked) by the caller; otherwise it is loaded here (the build's strict contract,
    with the registered `domains` if given)."""
    from pipeline.core.hashing import file_sha256
    from pipeline.harness import load_bench
    from pipeline.harness.cache import EvalCache

    if rows is None:
        rows = load_bench(bench, labels, domains=domains)
    if store is None:
        store = EvalCache()  # $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval (pipeline.core.settings)
    config = {"on_error": on_error, "cache_name": chosen.name,
              "labels_sha256": file_sha256(labels) if labels else None,
              "protocol": chosen.protocol, "reference": chosen.reference, "sweep": list(chosen.sweep),
              "decisions": True}
    if chosen.worker is not None:
        # what ran apart is keyed on the worker's own account of it (its declared model and settings,
        # its run-time imports) and on this process's reading of its files (which the worker cannot fake)
        config["isolation"] = chosen.worker.isolation
        identity = store.identity(bench, None, config, implementation=chosen.worker.implementation())
    else:
        identity = store.identity(bench, chosen.subject, config)
    return store.cached_run(identity, lambda: run_chosen(chosen, rows, on_error), use_cache=use_cache)


def run_chosen(chosen: Chosen, rows: list, on_error: str = "miss") -> dict:
    """The report dict of `chosen` on `rows`: decisions on the rows' Pairs (here or in the worker),
    then the labels joined by `score`."""
    from pipeline.harness.evaluation import decide_rows, pairs_of, score
    from pipeline.harness.report import Report
    from pipeline.harness.stateful import ProtocolRun, StoreFailed, pair_protocol, protocol_summary
    from pipeline.harness.sweep import grid_sweep

    pairs = pairs_of(rows)
    ids = [r.id for r in rows]
    if chosen.worker is not None:
        try:
            d = chosen.worker.decide(pairs, chosen.protocol, on_error=on_error, ids=ids)
        except StoreFailed as exc:
            raise exc.named(ids) from None
    elif chosen.protocol != "pair":
        runner = ProtocolRun(chosen.subject, chosen.protocol, pairs)
        try:
            runner.prepare()  # the shared protocol's stores: a failure there is one error, not one per row
        except StoreFailed as exc:
            raise exc.named(ids) from exc.__cause__
        d = decide_rows(runner, rows, on_error, chosen.name, pairs)
        d.served, d.protocol = [runner.served.get(p.key) for p in pairs], runner.meta()
    else:
        d = decide_rows(chosen.subject, rows, on_error, chosen.name, pairs)
    data = Report(score(rows, d, cache_name=chosen.name, decisions=True)).to_dict()
    data["protocol"] = (protocol_summary(d.protocol, ids, [r.binary_label for r in rows], d.served)
                        if d.protocol is not None else pair_protocol())
    if chosen.sweep:
        data["threshold_sweep"] = grid_sweep(data["decisions"], chosen.sweep)
    return data
