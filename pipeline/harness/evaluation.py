"""The evaluation loop, in two halves that never meet: `decide` asks the cache for a verdict on every
Pair (requests only) and checks what came back; `score` joins the decisions to the benchmark's rows
(the labels) and builds the report. `evaluate` runs both in this process; `cacheeval eval` runs
`decide` for a user's cache in a worker process (pipeline.harness.isolated), so the cache never holds
a label or the scorer's code.

A cache that raises, or returns something that is not a verdict, is scored MISS with tier `error`
(or, with `on_error="raise"`, the exception propagates with the row id attached as a note).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from pipeline.harness.interface import HARNESS_VERSION, Pair, Row, Verdict, VerdictError
from pipeline.harness.metrics import build_report
from pipeline.harness.report import Report

MAX_ERROR_MESSAGES = 5


def _as_bool(value: Any) -> bool:
    if value is None or isinstance(value, (str, bytes)):
        raise VerdictError(f"is_hit must be a bool, got {value!r}")
    b = bool(value)
    if value != b:  # accepts numpy bools and 0/1, refuses 0.5 or "yes"
        raise VerdictError(f"is_hit must be a bool, got {value!r}")
    return b


def _as_number(value: Any, name: str, *, allow_none: bool) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise VerdictError(f"{name} must be a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise VerdictError(f"{name} must be finite, got {value!r}")
    return out


def _unpack(v: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(is_hit, confidence, decision_ms, tier_used, cost_usd) of a non-Verdict verdict."""
    if isinstance(v, Mapping):
        if "is_hit" not in v:
            raise VerdictError(f"verdict dict has no 'is_hit' key (keys: {', '.join(sorted(map(str, v)))})")
        return v["is_hit"], v.get("confidence"), v.get("decision_ms"), v.get("tier_used"), v.get("cost_usd", 0.0)
    if not hasattr(v, "is_hit"):
        raise VerdictError(f"cache returned {type(v).__name__}, expected a Verdict, an object with "
                           "is_hit, a dict with 'is_hit', or a bool")
    return (v.is_hit, getattr(v, "confidence", None), getattr(v, "decision_ms", None),
            getattr(v, "tier_used", None), getattr(v, "cost_usd", 0.0))


def error_text(exc: BaseException) -> str:
    """`Type: first line` of an exception, as the report's error messages show it."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


@dataclass
class Decisions:
    """What a cache decided on n pairs, by position, and nothing about the rows: `errors` maps a
    position to its error text (tier `error`), `served` (store/lookup caches) what each lookup served."""

    hits: list
    confs: list
    lats: list
    tiers: list
    costs: list
    own: list                                   # True where the cache timed itself (decision_ms > 0)
    errors: dict = field(default_factory=dict)  # position -> "Type: message"
    served: list | None = None                  # "own" | "other" | "none" | None (the lookup raised)
    protocol: dict | None = None                # stateful.ProtocolRun.meta()

    @classmethod
    def empty(cls, n: int) -> "Decisions":
        return cls([False] * n, [None] * n, [0.0] * n, [None] * n, [0.0] * n, [False] * n)

    def fail(self, i: int, text: str, ms: float = 0.0) -> None:
        """Score position i MISS in the error tier."""
        self.hits[i], self.confs[i], self.lats[i], self.tiers[i], self.costs[i], self.own[i] = (
            False, None, ms, "error", 0.0, False)
        self.errors[i] = text


class PairStream:
    """The Pairs of a benchmark as passes that are read, not held: `from_(start)` begins a new pass
    at position `start` (a benchmark file is read again for each; see pipeline.harness.load.Bench),
    iterating it is a pass from the start, and len() is the number of pairs. A list of Pairs is
    one too (`PairStream.of`)."""

    def __init__(self, n: int, open_pass: Callable[[int], Iterator[Pair]]) -> None:
        self.n, self.open_pass = n, open_pass

    @classmethod
    def of(cls, pairs: Sequence[Pair]) -> "PairStream":
        return pairs if isinstance(pairs, PairStream) else cls(len(pairs), lambda start: islice(pairs, start, None))

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Pair]:
        return self.open_pass(0)

    def from_(self, start: int) -> Iterator[Pair]:
        return self.open_pass(start)


def decide(cache: Callable[[Pair], Any], pairs: Sequence[Pair] | PairStream, on_error: str = "miss",
           decisions: Decisions | None = None, start: int = 0, report: Callable[[int], None] | None = None) -> Decisions:
    """Ask `cache` for a verdict on every pair (from position `start`), time it and check it; the
    pairs are a list or a PairStream (read as they are decided, never held).
    on_error="raise" re-raises a cache's exception with `cacheeval_index` (its position) set.
    `report(i)` is called after each position is decided (the worker streams it to the scorer)."""
    n = len(pairs)
    source = pairs.from_(start) if isinstance(pairs, PairStream) else islice(pairs, start, None)
    out = decisions if decisions is not None else Decisions.empty(n)
    hits, confs, lats, tiers, costs, own = out.hits, out.confs, out.lats, out.tiers, out.costs, out.own
    perf = time.perf_counter
    verdict_cls = Verdict
    # The per-row path is kept lean on purpose: benchmarks/harness_overhead.py holds it to
    # >= 200,000 decisions/s, so checks run only when a value is not already the expected type.
    # the source first: it is asked once more after the last pair, so a pass over a file ends (and
    # checks that the file did not change) before the loop does
    for pair, i in zip(source, range(start, n)):
        t0 = perf()
        try:
            v = cache(pair)
            wall = (perf() - t0) * 1000.0
            if v.__class__ is verdict_cls:
                is_hit, conf, ms, tier, cost = v.is_hit, v.confidence, v.decision_ms, v.tier_used, v.cost_usd
            elif v is True or v is False:
                is_hit, conf, ms, tier, cost = v, None, None, None, 0.0
            else:
                is_hit, conf, ms, tier, cost = _unpack(v)
            if is_hit is not True and is_hit is not False:
                is_hit = _as_bool(is_hit)
            # `x - x != 0.0` is true exactly for nan and inf.
            if conf is not None and (conf.__class__ is not float or conf - conf != 0.0):
                conf = _as_number(conf, "confidence", allow_none=True)
            if ms is not None:
                if ms.__class__ is not float or ms - ms != 0.0:
                    ms = _as_number(ms, "decision_ms", allow_none=True)
                if ms > 0.0:
                    wall = ms
                    own[i] = True
            if cost.__class__ is not float or cost - cost != 0.0 or cost < 0.0:
                cost = _as_number(0.0 if cost is None else cost, "cost_usd", allow_none=False)
                if cost < 0.0:
                    raise VerdictError(f"cost_usd must not be negative, got {cost!r}")
            if tier is not None and tier.__class__ is not str:
                raise VerdictError(f"tier_used must be a string, got {tier!r}")
        except Exception as exc:  # noqa: BLE001 - scored and counted, or re-raised on request
            if on_error == "raise":
                exc.cacheeval_index = i  # type: ignore[attr-defined]
                raise
            own[i] = False
            out.fail(i, error_text(exc), (perf() - t0) * 1000.0)
            if report is not None:
                report(i)
            continue
        hits[i] = is_hit
        confs[i] = conf
        lats[i] = wall
        tiers[i] = tier
        costs[i] = cost
        if report is not None:
            report(i)
    return out


def new_run_key() -> str:
    """The opaque part of every pair key of one run (new on every run: a key names no row)."""
    import secrets

    return secrets.token_hex(8)


def pairs_of(rows: Sequence[Row], run_key: str | None = None) -> list[Pair]:
    """The Pairs a cache sees for `rows`: their requests under opaque keys, new on every call."""
    run_key = run_key or new_run_key()
    return [Pair.of(r, f"{run_key}-{i:06d}") for i, r in enumerate(rows)]


def pair_stream(rows: Any, run_key: str | None = None) -> PairStream:
    """The Pairs a cache sees for `rows`: a checked benchmark (pipeline.harness.load.Bench, whose
    requests are read again from its file on every pass) or a list of Rows."""
    run_key = run_key or new_run_key()
    if hasattr(rows, "pairs"):
        return PairStream(len(rows), lambda start: rows.pairs(run_key, start))
    return PairStream.of(pairs_of(rows, run_key))


def score(rows: Sequence[Row], d: Decisions, cache_name: str = "cache", domain_order: Sequence[str] = (),
          decisions: bool = False) -> dict:
    """The report dict of decisions `d` on `rows` (joined by position): the scorer's half, the only
    code that reads labels. A wrong-entry hit of a store/lookup cache on a HIT row is a miss. A row
    is a Row or anything with the fields the metrics read (pipeline.harness.load.Scored)."""
    rows = list(rows)
    hits, confs = list(d.hits), list(d.confs)
    if d.served is not None:
        from pipeline.harness.stateful import apply_served

        apply_served(d.served, [r.binary_label for r in rows], hits, confs)
    errs = sorted(d.errors)
    messages = [f"{rows[i].id}: {d.errors[i]}"[:300] for i in errs[:MAX_ERROR_MESSAGES]]
    data = build_report(
        rows, hits, confs, list(d.lats), list(d.tiers), list(d.costs), own_ms=sum(d.own), n_errors=len(errs),
        messages=messages, cache_name=cache_name, harness_version=HARNESS_VERSION, domain_order=domain_order,
    )
    if decisions:
        data["decisions"] = [{"id": r.id, "label": r.binary_label, "decision": "HIT" if h else "MISS",
                              "confidence": c} for r, h, c in zip(rows, hits, confs)]
    return data


def evaluate(cache: Callable[[Pair], Any], rows: Iterable[Row], cache_name: str = "cache",
             on_error: str = "miss", domain_order: Sequence[str] = (), decisions: bool = False) -> Report:
    """Ask `cache` for a verdict on every row's Pair (its requests only) in this process, then score
    the decisions against the rows (see pipeline.harness.metrics).

    on_error="miss" scores a raising cache as MISS with tier `error` and counts it;
    on_error="raise" re-raises the exception with a note naming the row.
    domain_order lists domains to show first in the per-domain breakdown (e.g. the pipeline's
    registry order); other domains follow in the order of their first row.
    decisions=True adds every row's decision to the report (`decisions`: id, gold binary label,
    decision, confidence), which `cacheeval compare` pairs row by row."""
    check_options(on_error, domain_order)
    rows = list(rows)
    d = decide_rows(cache, rows, on_error, cache_name)
    return Report(score(rows, d, cache_name, domain_order, decisions))


def check_options(on_error: str, domain_order: Sequence[str] = ()) -> None:
    if on_error not in ("miss", "raise"):
        raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
    if isinstance(domain_order, str):
        raise TypeError("domain_order must be a sequence of domain names, not one string")


def decide_rows(cache: Callable[[Pair], Any], rows: Sequence[Row], on_error: str, cache_name: str,
                pairs: Sequence[Pair] | PairStream | None = None,
                report: Callable[[int], None] | None = None) -> Decisions:
    """`decide` on the rows' Pairs in this process; a re-raised exception names its row."""
    pairs = pairs if pairs is not None else pairs_of(rows)
    try:
        return decide(cache, pairs, on_error, report=report)
    except Exception as exc:
        i = getattr(exc, "cacheeval_index", None)
        if i is None:
            raise
        exc.add_note(f"cacheeval: while scoring row {rows[i].id} with cache '{cache_name}'")
        exc.cacheeval_row_id = rows[i].id  # type: ignore[attr-defined]  # for the CLI's one line
        raise
