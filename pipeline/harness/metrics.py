"""The numbers of a report, computed from the decisions the evaluation loop collected.

Metrics treat HIT as the positive class and use each row's `binary_label`:
precision TP/(TP+FP), recall TP/(TP+FN), F1 2TP/(2TP+FP+FN), FHR FP/(FP+TN), accuracy
(TP+TN)/n; every proportion carries a 95% Wilson interval. Latency percentiles interpolate
linearly between closest ranks (numpy's default method).

Breakdowns list domains in the order the caller gives (`domain_order`), then any other domain in
the order of its first row: the harness names no domain, so a new domain needs no change here.
Difficulties, construction methods and labels follow the benchmark's fixed taxonomy.

Confidence: `confidence` is read as the cache's score that the pair is a HIT (higher = more
willing to hit). The sweep predicts HIT when `confidence >= threshold`; rows without a confidence
(including errors) never hit. The two operating points (recall at FHR <= 5%, FHR at recall >= 80%)
are computed exactly over every distinct confidence. The sweep table lists every distinct
confidence when there are at most 50, else 21 of them at evenly spaced ranks (0%, 5%, ... 100%
of the sorted distinct values).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Sequence

from pipeline.core.taxonomy import CONSTRUCTION_METHODS, HIT_LABELS, LABELS
from pipeline.harness.interface import Row

# The difficulty scale of BENCHMARK.md, easiest first; values not listed here follow, sorted.
DIFFICULTIES = ("easy", "medium", "hard")
MISS_LABELS = tuple(label for label in LABELS if label not in HIT_LABELS)
# Verdict tiers as caches name them; other tier names follow, sorted.
TIERS = ("exact", "programmatic", "rubric", "judge", "error")
UNSPECIFIED = "unspecified"
SWEEP_MAX_DISTINCT = 50
SWEEP_RANKS = 21
# Outcome codes: 2 * gold_hit + predicted_hit.
_TN, _FP, _FN, _TP = 0, 1, 2, 3


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials (95% by default); None when n == 0."""
    if n <= 0:
        return None
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    # The exact ends are known at k = 0 and k = n; floating error must not move them.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def _ratio(k: int, n: int) -> float | None:
    return k / n if n else None


def _proportion(k: int, n: int) -> dict[str, Any]:
    ci = wilson(k, n)
    return {"value": _ratio(k, n), "k": k, "n": n, "ci95": list(ci) if ci else None}


def _f1(tp: int, fp: int, fn: int) -> float | None:
    return _ratio(2 * tp, 2 * tp + fp + fn)


def ordered(present: Iterable[str], preferred: Sequence[str] = ()) -> list[str]:
    """The distinct `present` values: those named in `preferred` first, in that order, then the
    rest in the order `present` gives them."""
    distinct = list(dict.fromkeys(present))
    seen = set(distinct)
    head = [k for k in dict.fromkeys(preferred) if k in seen]
    taken = set(head)
    return head + [k for k in distinct if k not in taken]


def _group(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    ci = wilson(fp, fp + tn)
    return {
        "n": tp + fp + fn + tn, "hit": tp + fn, "miss": fp + tn,
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn), "f1": _f1(tp, fp, fn),
        "fhr": _ratio(fp, fp + tn), "fhr_ci95": list(ci) if ci else None,
        "accuracy": _ratio(tp + tn, tp + fp + fn + tn),
    }


def _breakdown(keys: list[str], codes: list[int], order: list[str]) -> dict[str, Any]:
    # Counter over zip runs in C: one pass per dimension, no per-row Python branching.
    counts = Counter(zip(keys, codes))
    return {k: _group(counts[(k, _TP)], counts[(k, _FP)], counts[(k, _FN)], counts[(k, _TN)]) for k in order}


def _fixed_breakdown(keys: list[str], codes: list[int], preferred: Sequence[str]) -> dict[str, Any]:
    """A breakdown over a fixed scale: its values in scale order, unknown values after, sorted."""
    return _breakdown(keys, codes, ordered(sorted(set(keys)), preferred))


def _miss_entry(fp: int, tn: int) -> dict[str, Any]:
    ci = wilson(fp, fp + tn)
    return {"n": fp + tn, "fp": fp, "fhr": _ratio(fp, fp + tn), "ci95": list(ci) if ci else None}


def _by_miss_label(rows: list[Row], codes: list[int]) -> dict[str, Any]:
    counts = Counter(zip([r.label for r in rows], codes))
    out = {label: _miss_entry(counts[(label, _FP)], counts[(label, _TN)]) for label in MISS_LABELS}
    # Rows whose 5-class label says HIT but the policy override makes MISS (creative, mutations, ...).
    fp = sum(counts[(label, _FP)] for label in HIT_LABELS)
    tn = sum(counts[(label, _TN)] for label in HIT_LABELS)
    if fp + tn:
        out["policy_no_cache"] = _miss_entry(fp, tn)
    return out


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return None
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _confidence(gold: list[bool], confs: list[float | None]) -> dict[str, Any] | None:
    scored = [(c, g) for c, g in zip(confs, gold) if c is not None]
    if not scored:
        return None
    pos = sum(gold)
    neg = len(gold) - pos
    per_value: dict[float, list[int]] = {}
    for c, g in scored:
        per_value.setdefault(c, [0, 0])[0 if g else 1] += 1
    # points[j]: threshold and cumulative (tp, fp) predicting HIT for confidence >= threshold,
    # thresholds descending; the first point (threshold None) never hits.
    points: list[tuple[float | None, int, int]] = [(None, 0, 0)]
    tp = fp = 0
    for c in sorted(per_value, reverse=True):
        tp += per_value[c][0]
        fp += per_value[c][1]
        points.append((c, tp, fp))

    def point(p: tuple[float | None, int, int]) -> dict[str, Any]:
        t, tp_, fp_ = p
        return {"threshold": t, "tp": tp_, "fp": fp_, "precision": _ratio(tp_, tp_ + fp_),
                "recall": _ratio(tp_, pos), "fhr": _ratio(fp_, neg)}

    recall_at = None
    if neg:
        # fp only grows as the threshold falls, so the feasible points are a prefix; within it,
        # the first point reaching the best tp has the highest threshold and the fewest FP.
        feasible = [p for p in points if p[2] * 20 <= neg]
        best_tp = feasible[-1][1]
        recall_at = point(next(p for p in feasible if p[1] == best_tp))
    fhr_at = None
    if pos:
        fhr_at = next((point(p) for p in points if p[1] * 5 >= pos * 4), None)
    distinct = points[1:][::-1]  # ascending thresholds
    if len(distinct) <= SWEEP_MAX_DISTINCT:
        grid = "every distinct confidence"
        table = distinct
    else:
        grid = f"{SWEEP_RANKS} evenly spaced ranks of the {len(distinct)} distinct confidences"
        last = len(distinct) - 1
        table = [distinct[round(i * last / (SWEEP_RANKS - 1))] for i in range(SWEEP_RANKS)]
    return {
        "rows_with_confidence": len(scored),
        "distinct_confidences": len(distinct),
        "rule": "HIT when confidence >= threshold; rows without a confidence never hit",
        "sweep_grid": grid,
        "sweep": [point(p) for p in table],
        "recall_at_fhr_le_5pct": recall_at,
        "fhr_at_recall_ge_80pct": fhr_at,
    }


def build_report(rows: list[Row], hits: list[bool], confs: list[float | None], lats: list[float],
                 tiers: list[str | None], costs: list[float], *, own_ms: int, n_errors: int,
                 messages: list[str], cache_name: str, harness_version: str,
                 domain_order: Sequence[str] = ()) -> dict[str, Any]:
    """The report dict (keys in a fixed order) of one cache's decisions on `rows`."""
    n = len(rows)
    gold = [r.binary_label == "HIT" for r in rows]
    codes = [2 * g + h for g, h in zip(gold, hits)]
    c = Counter(codes)
    tp, fp, fn, tn = c[_TP], c[_FP], c[_FN], c[_TN]
    tier_counts = Counter(UNSPECIFIED if t is None else t for t in tiers)
    tier_counts.setdefault("error", 0)
    lat_sorted = sorted(lats)
    total_cost = math.fsum(costs)
    domains = [r.domain for r in rows]
    return {
        "harness_version": harness_version,
        "cache_name": cache_name,
        "bench": {"n": n, "hit": tp + fn, "miss": fp + tn},
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "metrics": {
            "precision": _proportion(tp, tp + fp),
            "recall": _proportion(tp, tp + fn),
            "f1": {"value": _f1(tp, fp, fn)},
            "fhr": _proportion(fp, fp + tn),
            "accuracy": _proportion(tp + tn, n),
        },
        "by_domain": _breakdown(domains, codes, ordered(domains, domain_order)),
        "by_miss_label": _by_miss_label(rows, codes),
        "by_difficulty": _fixed_breakdown([r.difficulty for r in rows], codes, DIFFICULTIES),
        "by_construction_method": _fixed_breakdown([r.construction_method for r in rows], codes,
                                                   CONSTRUCTION_METHODS),
        "by_subcategory": _fixed_breakdown([f"{r.domain}/{r.subcategory}" for r in rows], codes, ()),
        "latency_ms": {
            "p50": _percentile(lat_sorted, 0.50), "p95": _percentile(lat_sorted, 0.95),
            "p99": _percentile(lat_sorted, 0.99),
            "mean": math.fsum(lats) / n if n else None, "max": lat_sorted[-1] if n else None,
            "cache_timed": own_ms, "wall_clock": n - own_ms,
        },
        "cost": {"total_usd": total_cost, "per_1000_usd": total_cost / n * 1000 if n else None},
        "tiers": {t: tier_counts[t] for t in ordered(sorted(tier_counts), TIERS + (UNSPECIFIED,))},
        "errors": {"count": n_errors, "messages": list(messages)},
        "confidence": _confidence(gold, confs),
    }
