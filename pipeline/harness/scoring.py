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
                 use_cache: bool = True, store: Any = None, rows: Any = None,
                 domains: Sequence[str] | None = None, strict: bool = True,
                 bench_sha256: str | None = None) -> tuple[dict, bool]:
    """(report dict, served from the result cache). The key covers the benchmark (its sha256, read
    as a stream), the cache's code and declared model snapshot and settings (a reference's threshold
    and weights' sha256), the protocol, the reference name, the harness, the contract the benchmark
    was checked against, how the cache was isolated and these options. `store` is an EvalCache
    (default: the one under the cache root).

    The benchmark's sha256, not a new check of its rows, decides a hit: an entry exists only for a
    benchmark that passed the same contract once (it is in the key). On a miss, the benchmark is
    checked and read as a stream (pipeline.harness.load.load_scored: the build's strict contract
    with the registered `domains`, or with strict=False the scoring contract) before the cache
    decides, unless the caller passes `rows` (a Bench, or a list of Rows) it already loaded.
    `bench_sha256`: the benchmark's sha256 when the caller has it (a file read once, not twice)."""
    from pipeline.core.hashing import file_sha256
    from pipeline.harness.cache import EvalCache
    from pipeline.harness.load import load_scored

    if store is None:
        store = EvalCache()  # $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval (pipeline.core.settings)
    config = {"on_error": on_error, "cache_name": chosen.name,
              "labels_sha256": file_sha256(labels) if labels else None,
              "protocol": chosen.protocol, "reference": chosen.reference, "sweep": list(chosen.sweep),
              "decisions": True, "contract": contract_name(strict, domains)}
    if chosen.worker is not None:
        # what ran apart is keyed on the worker's own account of it (its declared model and settings,
        # its run-time imports) and on this process's reading of its files (which the worker cannot fake)
        config["isolation"] = chosen.worker.isolation
        identity = store.identity(bench, None, config, implementation=chosen.worker.implementation(),
                                  bench_sha256=bench_sha256)
    else:
        identity = store.identity(bench, chosen.subject, config, bench_sha256=bench_sha256)

    def run() -> dict:
        loaded = rows
        if loaded is None:
            # a Parquet folder's key is over its files; a JSONL file's bytes are hashed again as they are read
            sha = identity["benchmark_sha256"] if not Path(bench).is_dir() else None
            loaded = load_scored(bench, labels, domains=domains, strict=strict, sha256=sha)
        return run_chosen(chosen, loaded, on_error)

    return store.cached_run(identity, run, use_cache=use_cache)


def contract_name(strict: bool, domains: Sequence[str] | None = None) -> str:
    """The contract a benchmark was checked against, as the result cache's key names it."""
    if not strict:
        return "scoring"
    return "strict" if domains is None else "strict:" + ",".join(domains)


def prefetch(reference: Any, pairs: Any) -> None:
    """Let a reference cache (the project's code, never a user's cache, which sees one request at a
    time) embed what a run will read in one pass instead of one call per request: `prefetch_pairs`
    gets the pairs (or rows), `prefetch` their requests' texts; a cache with neither is left alone."""
    if hasattr(reference, "prefetch_pairs"):
        reference.prefetch_pairs(pairs)
    elif hasattr(reference, "prefetch"):
        reference.prefetch(sorted({t for p in pairs for t in (p.query_a, p.query_b)}))


def run_chosen(chosen: Chosen, rows: Any, on_error: str = "miss") -> dict:
    """The report dict of `chosen` on `rows` (a checked Bench, whose requests are read again from
    its file as the cache decides, or a list of Rows): decisions on the rows' Pairs (here or in the
    worker), then the labels joined by `score`."""
    from pipeline.harness.evaluation import decide_rows, pair_stream, score
    from pipeline.harness.report import Report
    from pipeline.harness.stateful import ProtocolRun, StoreFailed, pair_protocol, protocol_summary
    from pipeline.harness.sweep import grid_sweep

    pairs = pair_stream(rows)
    ids = [r.id for r in rows]
    if chosen.reference is not None and chosen.worker is None:
        prefetch(chosen.subject, pairs)
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
        served: list = [None] * len(pairs)

        def record(i: int) -> None:
            served[i] = runner.last_served

        d = decide_rows(runner, rows, on_error, chosen.name, pairs, report=record)
        d.served, d.protocol = served, runner.meta()
    else:
        d = decide_rows(chosen.subject, rows, on_error, chosen.name, pairs)
    data = Report(score(rows, d, cache_name=chosen.name, decisions=True)).to_dict()
    data["protocol"] = (protocol_summary(d.protocol, ids, [r.binary_label for r in rows], d.served)
                        if d.protocol is not None else pair_protocol())
    if chosen.sweep:
        data["threshold_sweep"] = grid_sweep(data["decisions"], chosen.sweep)
    return data
