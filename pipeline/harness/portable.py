"""What a committed report file may hold: a report without what the machine decides (latency,
store time, the last bits of a confidence) or per-row detail. Baseline and reference reports alike
go through `untimed` before they are written. Standard library only.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from pipeline.harness.sweep import SWEEP_THRESHOLDS, grid_sweep

TIMING_KEYS = ("p50", "p95", "p99", "mean", "max")


def untimed(report: dict) -> dict:
    """The report without what the machine decides (latency figures, store time, the last bits of
    a confidence) or per-row detail: what a committed report file may hold (baseline and reference
    reports alike)."""
    d = dict(report)
    if "latency_ms" in d:
        d["latency_ms"] = {k: (None if k in TIMING_KEYS else v) for k, v in d["latency_ms"].items()}
    if isinstance(d.get("protocol"), dict) and "store_seconds" in d["protocol"]:
        d["protocol"] = {k: v for k, v in d["protocol"].items() if k != "store_seconds"}
    if isinstance(d.get("confidence"), dict):
        d["confidence"] = portable_confidence(d["confidence"], d.get("decisions"))
    d.pop("decisions", None)
    return d


def portable_confidence(conf: Mapping[str, Any], decisions: Sequence[Mapping[str, Any]] | None) -> dict:
    """The harness's confidence section in a form every machine reproduces. A confidence is a float
    whose last bits depend on the CPU: ONNX Runtime's and faiss's AVX-512 kernels round differently
    from AVX2 ones (measured: about one GPTCache confidence in three moved by one unit in the last
    place between two machines, and with them every threshold read off the distinct confidences,
    and their count). Counts at fixed thresholds, and the counts at the two operating points, do
    not move; so the committed form keeps those and drops the values read off the confidences."""
    out: dict[str, Any] = {"rows_with_confidence": conf.get("rows_with_confidence"), "rule": conf.get("rule")}
    for key in ("recall_at_fhr_le_5pct", "fhr_at_recall_ge_80pct"):
        point = conf.get(key)
        out[key] = None if point is None else {k: v for k, v in point.items() if k != "threshold"}
    if decisions is not None:
        out["sweep_grid"] = f"fixed thresholds {SWEEP_THRESHOLDS[0]:.2f}-{SWEEP_THRESHOLDS[-1]:.2f}"
        out["sweep"] = grid_sweep(decisions, SWEEP_THRESHOLDS)["points"]
    return out
