"""Two caches' reports on the same rows, compared with McNemar's exact test.

Each report carries its per-row decisions (`cacheeval eval --json`). The FHR comparison pairs the
two decisions on every MISS row, the recall comparison on every HIT row; only discordant rows (one
cache hits, the other does not) carry information. Under the null hypothesis (the caches are
equally good) a discordant row is either cache's with probability 1/2, so the two-sided p-value is
`min(1, 2 * P(X <= min(b, c)))` for X ~ Binomial(b + c, 1/2): McNemar's exact test. Standard
library only (exact integer arithmetic).
"""
from __future__ import annotations

from math import comb
from typing import Any, Mapping

from pipeline.core.errors import InputError

ALPHA = 0.05


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)  # int / int: exact until the final float


def _decisions(report: Mapping[str, Any], name: str) -> dict[str, tuple[str, bool]]:
    rows = report.get("decisions") if isinstance(report, Mapping) else None
    if not isinstance(rows, list):
        raise InputError(f"{name}: the report has no per-row decisions. Write it again with "
                         "cacheeval eval --json (reports carry them since the compare command exists)")
    out: dict[str, tuple[str, bool]] = {}
    for d in rows:
        try:
            out[d["id"]] = (d["label"], d["decision"] == "HIT")
        except (KeyError, TypeError):
            raise InputError(f"{name}: a decision is not an object with id, label and decision. "
                             "Pass a report written by cacheeval eval --json") from None
    return out


def _side(pairs: list[tuple[bool, bool]], name_a: str, name_b: str, lower_is_better: bool,
          alpha: float) -> dict[str, Any]:
    n = len(pairs)
    a_only = sum(1 for a, b in pairs if a and not b)
    b_only = sum(1 for a, b in pairs if b and not a)
    rate_a = sum(a for a, _ in pairs) / n if n else None
    rate_b = sum(b for _, b in pairs) / n if n else None
    p = mcnemar_exact(a_only, b_only)
    better = None
    if a_only != b_only:
        a_higher = a_only > b_only
        better = name_b if a_higher == lower_is_better else name_a
    return {"rows": n, "a": rate_a, "b": rate_b, "a_only_hits": a_only, "b_only_hits": b_only,
            "p_value": p, "better": better, "significant": better is not None and p < alpha}


def compare_reports(a: Mapping[str, Any], b: Mapping[str, Any], name_a: str = "A", name_b: str = "B",
                    alpha: float = ALPHA) -> dict[str, Any]:
    """FHR and recall of two reports on the same rows, each with its McNemar exact p-value.
    InputError (one line) when the reports are not on the same rows."""
    da, db = _decisions(a, name_a), _decisions(b, name_b)
    if da.keys() != db.keys():
        only_a, only_b = sorted(da.keys() - db.keys()), sorted(db.keys() - da.keys())
        parts = [f"{len(ids)} id{'s' if len(ids) > 1 else ''} only in {name} (first: {ids[0]})"
                 for ids, name in ((only_a, name_a), (only_b, name_b)) if ids]
        raise InputError(f"{name_a} and {name_b} are not on the same rows: {', '.join(parts)}. "
                         "Score both caches on the same benchmark file")
    for rid, (label, _) in da.items():
        if db[rid][0] != label:
            raise InputError(f"{name_a} and {name_b} disagree on row {rid}'s label ({label} vs {db[rid][0]}). "
                             "Score both caches on the same benchmark version")
    ids = list(da)
    miss = [(da[i][1], db[i][1]) for i in ids if da[i][0] != "HIT"]
    hit = [(da[i][1], db[i][1]) for i in ids if da[i][0] == "HIT"]
    return {"a": name_a, "b": name_b, "rows": len(ids), "alpha": alpha,
            "fhr": _side(miss, name_a, name_b, lower_is_better=True, alpha=alpha),
            "recall": _side(hit, name_a, name_b, lower_is_better=False, alpha=alpha)}


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def render_comparison(c: Mapping[str, Any]) -> str:
    """Three lines: the rows, then FHR and recall with the better cache and the test's verdict."""
    lines = [f"{c['a']} vs {c['b']} on {c['rows']} rows ({c['recall']['rows']} HIT, {c['fhr']['rows']} MISS)"]
    for key, label, what, unit in (("fhr", "FHR", "fewer false hits", "MISS"),
                                   ("recall", "recall", "more true hits", "HIT")):
        s = c[key]
        head = f"{label}: {c['a']} {_num(s['a'])}, {c['b']} {_num(s['b'])}; "
        if s["better"] is None:
            verdict = "no difference"
        else:
            verdict = f"{s['better']} is better ({what})"
        sig = "significant" if s["significant"] else "not significant"
        lines.append(f"{head}{verdict}; {s['a_only_hits'] + s['b_only_hits']} {unit} rows decided differently "
                     f"({c['a']} alone hit {s['a_only_hits']}, {c['b']} alone hit {s['b_only_hits']}); "
                     f"McNemar exact p = {s['p_value']:.3g}: {sig} at alpha {c['alpha']:g}")
    return "\n".join(lines) + "\n"
