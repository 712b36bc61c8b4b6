"""The evaluation loop: ask a cache for a verdict on every row, time it, and check what came back.

A cache that raises, or returns something that is not a verdict, is scored MISS with tier `error`
(or, with `on_error="raise"`, the exception propagates with the row id attached as a note).
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

from pipeline.harness.interface import HARNESS_VERSION, Row, Verdict, VerdictError
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


def _message(row: Row, exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{row.id}: {type(exc).__name__}: {first}"[:300]


def evaluate(cache: Callable[[Row], Any], rows: Iterable[Row], cache_name: str = "cache",
             on_error: str = "miss", domain_order: Sequence[str] = (), decisions: bool = False) -> Report:
    """Ask `cache` for a verdict on every row and score the decisions (see pipeline.harness.metrics).

    on_error="miss" scores a raising cache as MISS with tier `error` and counts it;
    on_error="raise" re-raises the exception with a note naming the row.
    domain_order lists domains to show first in the per-domain breakdown (e.g. the pipeline's
    registry order); other domains follow in the order of their first row.
    decisions=True adds every row's decision to the report (`decisions`: id, gold binary label,
    decision, confidence), which `cacheeval compare` pairs row by row."""
    if on_error not in ("miss", "raise"):
        raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
    if isinstance(domain_order, str):
        raise TypeError("domain_order must be a sequence of domain names, not one string")
    rows = list(rows)
    n = len(rows)
    hits: list[bool] = [False] * n
    confs: list[float | None] = [None] * n
    lats: list[float] = [0.0] * n
    tiers: list[str | None] = [None] * n
    costs: list[float] = [0.0] * n
    own_ms = 0
    n_errors = 0
    messages: list[str] = []
    perf = time.perf_counter
    verdict_cls = Verdict
    # The per-row path is kept lean on purpose: benchmarks/harness_overhead.py holds it to
    # >= 200,000 decisions/s, so checks run only when a value is not already the expected type.
    for i, row in enumerate(rows):
        t0 = perf()
        try:
            v = cache(row)
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
                    own_ms += 1
            if cost.__class__ is not float or cost - cost != 0.0 or cost < 0.0:
                cost = _as_number(0.0 if cost is None else cost, "cost_usd", allow_none=False)
                if cost < 0.0:
                    raise VerdictError(f"cost_usd must not be negative, got {cost!r}")
            if tier is not None and tier.__class__ is not str:
                raise VerdictError(f"tier_used must be a string, got {tier!r}")
        except Exception as exc:  # noqa: BLE001 - scored and counted, or re-raised on request
            if on_error == "raise":
                exc.add_note(f"cacheeval: while scoring row {row.id} with cache '{cache_name}'")
                exc.cacheeval_row_id = row.id  # type: ignore[attr-defined]  # for the CLI's one line
                raise
            wall = (perf() - t0) * 1000.0
            is_hit, conf, tier, cost = False, None, "error", 0.0
            n_errors += 1
            if len(messages) < MAX_ERROR_MESSAGES:
                messages.append(_message(row, exc))
        hits[i] = is_hit
        confs[i] = conf
        lats[i] = wall
        tiers[i] = tier
        costs[i] = cost
    data = build_report(
        rows, hits, confs, lats, tiers, costs, own_ms=own_ms, n_errors=n_errors,
        messages=messages, cache_name=cache_name, harness_version=HARNESS_VERSION, domain_order=domain_order,
    )
    if decisions:
        data["decisions"] = [{"id": r.id, "label": r.binary_label, "decision": "HIT" if h else "MISS",
                              "confidence": c} for r, h, c in zip(rows, hits, confs)]
    return Report(data)
