"""A threshold sweep over a fixed grid, from the per-row decisions of a report.

A cache whose confidence is its own similarity score (GPTCache's rank over its range, say) hits at
threshold t exactly when confidence >= t, so one run gives the cache's whole operating curve.
The harness's own sweep (pipeline.harness.metrics) walks the distinct confidences; this one reads
the grid a cache is configured with (e.g. GPTCache's similarity_threshold 0.50, 0.51, ... 0.99).
Standard library only.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

# The grid of GPTCache's similarity_threshold the reference reports sweep (0.50, 0.51, ... 0.99).
SWEEP_THRESHOLDS = tuple(round(0.50 + i / 100, 2) for i in range(50))


def _ratio(k: int, n: int) -> float | None:
    return k / n if n else None


def grid_sweep(decisions: Sequence[Mapping[str, Any]], thresholds: Iterable[float]) -> dict[str, Any]:
    """Precision, recall, F1 and FHR at each threshold, predicting HIT when confidence >= threshold
    (rows without a confidence never hit). `decisions` are a report's per-row decisions."""
    scored = [(d["confidence"], d["label"] == "HIT") for d in decisions]
    pos = sum(1 for _, gold in scored if gold)
    neg = len(scored) - pos
    points = []
    for t in thresholds:
        tp = sum(1 for c, gold in scored if gold and c is not None and c >= t)
        fp = sum(1 for c, gold in scored if not gold and c is not None and c >= t)
        points.append({"threshold": t, "tp": tp, "fp": fp, "precision": _ratio(tp, tp + fp),
                       "recall": _ratio(tp, pos), "f1": _ratio(2 * tp, tp + fp + pos),
                       "fhr": _ratio(fp, neg)})
    return {"rule": "HIT when confidence >= threshold; rows without a confidence never hit",
            "hit": pos, "miss": neg, "points": points}


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def render_grid_sweep(sweep: Mapping[str, Any]) -> str:
    """The sweep as a Markdown section."""
    lines = ["## Threshold sweep", "", f"{sweep['rule']} ({sweep['hit']} HIT, {sweep['miss']} MISS rows).", "",
             "| threshold | TP | FP | precision | recall | F1 | FHR |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {p['threshold']:.2f} | {p['tp']} | {p['fp']} | {_num(p['precision'])} | {_num(p['recall'])} | "
              f"{_num(p['f1'])} | {_num(p['fhr'])} |" for p in sweep["points"]]
    return "\n".join(lines) + "\n"
