"""A scored result and its two renderings: JSON (plain types, no NaN, keys in a fixed order) and a
Markdown document a reviewer reads (headline with Wilson intervals, breakdowns, latency, cost,
tiers, errors, the confidence sweep)."""
from __future__ import annotations

import json
from typing import Any


# What each way of running the cache under test means (`cacheeval eval` names it in the report).
ISOLATION = {
    "bubblewrap": "the cache ran in a bubblewrap jail as user nobody, seeing requests only; the project, the "
                  "labels and every cache root out of its sight or read-only",
    "process": "the cache ran in a worker process, seeing requests only; no file-system jail (bwrap unavailable)",
    "in-process": "the cache ran in the scorer's own process (--in-process, a reference or a baseline)",
}


class Report:
    """The scored result of one cache on one benchmark file. The headline numbers are properties
    (n, precision, recall, f1, fhr, accuracy), None where a ratio has no denominator."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (no NaN), keys in a fixed order."""
        return json.loads(json.dumps(self._data, allow_nan=False))

    def to_markdown(self) -> str:
        """The report as a Markdown document."""
        return _render_markdown(self._data)

    def _value(self, name: str) -> float | None:
        return self._data["metrics"][name]["value"]

    @property
    def n(self) -> int:
        """Rows scored."""
        return self._data["bench"]["n"]

    @property
    def precision(self) -> float | None:
        """TP / (TP + FP)."""
        return self._value("precision")

    @property
    def recall(self) -> float | None:
        """TP / (TP + FN)."""
        return self._value("recall")

    @property
    def f1(self) -> float | None:
        """2TP / (2TP + FP + FN)."""
        return self._value("f1")

    @property
    def fhr(self) -> float | None:
        """False-hit rate FP / (FP + TN)."""
        return self._value("fhr")

    @property
    def accuracy(self) -> float | None:
        """(TP + TN) / n."""
        return self._value("accuracy")


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ci(ci: list[float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f} – {ci[1]:.3f}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], body: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in body]
    return lines + [""]


def _group_table(title: str, column: str, groups: dict[str, Any]) -> list[str]:
    body = [[name, g["n"], g["hit"], g["miss"], _num(g["precision"]), _num(g["recall"]), _num(g["f1"]),
             _num(g["fhr"]), _ci(g["fhr_ci95"]), _num(g["accuracy"])] for name, g in groups.items()]
    header = [column, "n", "HIT", "MISS", "precision", "recall", "F1", "FHR", "FHR 95% CI", "accuracy"]
    return [f"## {title}", ""] + _table(header, body)


def _render_markdown(d: dict[str, Any]) -> str:
    m, b, cm = d["metrics"], d["bench"], d["confusion"]
    out = [f"# CacheEval report: {d['cache_name']}", "",
           f"Harness v{d['harness_version']} · {b['n']} rows ({b['hit']} HIT, {b['miss']} MISS) · "
           "HIT is the positive class; FHR = FP / (FP + TN).", ""]
    if d.get("protocol"):
        out += [f"Protocol: {d['protocol']['summary']}.", ""]
    if d.get("isolation"):
        out += [f"Isolation: {d['isolation']} ({ISOLATION.get(d['isolation'], 'as named')}).", ""]
    out += ["## Headline", ""]
    body = []
    for key, name in (("fhr", "FHR"), ("precision", "precision"), ("recall", "recall"), ("f1", "F1"),
                      ("accuracy", "accuracy")):
        e = m[key]
        frac = f" ({e['k']}/{e['n']})" if "k" in e else ""
        body.append([name, _num(e["value"]) + frac, _ci(e.get("ci95"))])
    out += _table(["metric", "value", "95% Wilson CI"], body)
    out += [f"Confusion: TP {cm['tp']} · FP {cm['fp']} · FN {cm['fn']} · TN {cm['tn']}", ""]
    out += _group_table("By domain", "domain", d["by_domain"])
    out += ["## FHR by MISS label", ""]
    out += _table(["label", "n", "FP", "FHR", "95% Wilson CI"],
                  [[k, e["n"], e["fp"], _num(e["fhr"]), _ci(e["ci95"])] for k, e in d["by_miss_label"].items()])
    out += _group_table("By difficulty", "difficulty", d["by_difficulty"])
    out += _group_table("By construction method", "method", d["by_construction_method"])
    out += _group_table("By subcategory", "domain/subcategory", d["by_subcategory"])
    lat = d["latency_ms"]
    out += ["## Decision latency (ms)", ""]
    out += _table(["p50", "p95", "p99", "mean", "max", "timed by cache", "wall clock"],
                  [[_num(lat["p50"]), _num(lat["p95"]), _num(lat["p99"]), _num(lat["mean"]), _num(lat["max"]),
                    lat["cache_timed"], lat["wall_clock"]]])
    cost = d["cost"]
    out += ["## Cost", "", f"Total ${cost['total_usd']:.6f} · per 1,000 decisions "
            + ("–" if cost["per_1000_usd"] is None else f"${cost['per_1000_usd']:.6f}"), ""]
    n = b["n"]
    out += ["## Tiers", ""]
    out += _table(["tier", "decisions", "share"],
                  [[t, k, _num(k / n if n else None)] for t, k in d["tiers"].items()])
    err = d["errors"]
    if err["count"]:
        out += [f"## Errors (rows scored MISS: {err['count']})", ""]
        out += [f"- {_cell(msg)}" for msg in err["messages"]]
        if err["count"] > len(err["messages"]):
            out.append(f"- … and {err['count'] - len(err['messages'])} more")
        out.append("")
    if d["confidence"]:
        out += _render_confidence(d["confidence"])
    return "\n".join(out).rstrip("\n") + "\n"


def _render_confidence(c: dict[str, Any]) -> list[str]:
    def op(p: dict[str, Any] | None, fmt: str) -> str:
        if p is None:
            return "not reached"
        t = "never hit" if p["threshold"] is None else f"threshold {p['threshold']:.6g}"
        return fmt.format(**{k: _num(v) for k, v in p.items() if k != "threshold"}) + f" ({t})"

    out = ["## Confidence", "",
           f"{c['rows_with_confidence']} rows carry a confidence; {c['rule']}.", "",
           "- recall at FHR ≤ 5%: " + op(c["recall_at_fhr_le_5pct"], "{recall} (FHR {fhr}, precision {precision})"),
           "- FHR at recall ≥ 80%: " + op(c["fhr_at_recall_ge_80pct"], "{fhr} (recall {recall}, precision {precision})"),
           "", f"Threshold sweep over {c['sweep_grid']}:", ""]
    out += _table(["threshold", "TP", "FP", "precision", "recall", "FHR"],
                  [[f"{p['threshold']:.6g}", p["tp"], p["fp"], _num(p["precision"]), _num(p["recall"]),
                    _num(p["fhr"])] for p in c["sweep"]])
    return out
