"""The numbers and the Markdown of a stream run (pipeline.harness.stream): outcome codes, counts,
rates, the cumulative curves, the bound test in every order, answer instability, the per-domain and
per-label tables, and the --check-bound verdict. Standard library only.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pipeline.harness.bound import CONFIDENCE, EXCEEDED, HOLDS, NO_HITS, NOT_SHOWN, bound_test
from pipeline.harness.interface import Row
from pipeline.harness.metrics import ordered

STREAM = "stream"
CURVE_POINTS = 200
A_SIDE = "A (first request)"
LABEL_ORDER = ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")

# outcome codes of one lookup: negative lookups (no equivalent entry in the index) miss, serve a
# wrong response (a false hit) or, rarely, a correct one the index did not know of; positive ones
# miss, serve another entry's response (a wrong-entry hit) or the right one
MISS_NEG, WRONG_NEG, MISS_POS, WRONG_POS, CORRECT_POS, CORRECT_NEG = range(6)
_SERVED = (False, True, False, True, True, True)

@dataclass
class OrderRun:
    """What one arrival order produced: the outcome of every lookup (in arrival order), the answer
    each row's B got, the harness's counters and the timings."""

    seed: int
    codes: list[int]
    outcomes: list[int]
    b_answers: list[str | None]
    counters: dict[str, int]
    cache_seconds: float
    total_seconds: float
    lookup_seconds: list[float]
    errors: list[str]


def realised_gaps(codes: Sequence[int]) -> list[int]:
    """Requests between each row's A and its B, by row."""
    pos = {c: i for i, c in enumerate(codes)}
    return [pos[2 * r + 1] - pos[2 * r] - 1 for r in range(len(codes) // 2)]


# ---- counting

def _zero() -> list[int]:
    return [0, 0, 0, 0, 0, 0]


def _rates(c: Sequence[int]) -> dict[str, Any]:
    """The stream's numbers from outcome counts (indexed by outcome code)."""
    lookups = sum(c)
    negatives = c[MISS_NEG] + c[WRONG_NEG] + c[CORRECT_NEG]
    positives = c[MISS_POS] + c[WRONG_POS] + c[CORRECT_POS]
    correct = c[CORRECT_POS] + c[CORRECT_NEG]
    wrong = c[WRONG_NEG] + c[WRONG_POS]
    served = correct + wrong

    def ratio(k: int, n: int) -> float | None:
        return k / n if n else None

    return {
        "lookups": lookups, "served": served, "correct": correct, "wrong": wrong,
        "positives": positives, "negatives": negatives, "false_hits_on_negatives": c[WRONG_NEG],
        "wrong_entry_hits": c[WRONG_POS],
        "fhr": ratio(c[WRONG_NEG], negatives), "hit_rate": ratio(served, lookups),
        "precision": ratio(correct, served), "recall": ratio(c[CORRECT_POS], positives),
        "error_rate": ratio(wrong, served),
    }


def _curve(outcomes: Sequence[int], points: int = CURVE_POINTS) -> dict[str, list]:
    """Cumulative FHR, hit rate and error rate at evenly spaced request counts (the last included)."""
    n = len(outcomes)
    step = max(1, n // points)
    xs, fhr, hit, err = [], [], [], []
    neg = fp = served = wrong = 0
    for i, o in enumerate(outcomes, 1):
        if o in (MISS_NEG, WRONG_NEG, CORRECT_NEG):
            neg += 1
            fp += o == WRONG_NEG
        if _SERVED[o]:
            served += 1
            wrong += o in (WRONG_NEG, WRONG_POS)
        if i % step == 0 or i == n:
            xs.append(i)
            fhr.append(fp / neg if neg else None)
            hit.append(served / i)
            err.append(wrong / served if served else None)
    return {"requests": xs, "fhr": fhr, "hit_rate": hit, "error_rate": err}


_BOUND_KEYS = ("verdict", "upper", "error_rate", "wrong", "served", "per_order")


def _worst_bound(per_order: Sequence[tuple[int, int]], delta: float | None) -> dict[str, Any]:
    """The bound test in every order; the verdict and upper bound of the worst (largest upper)."""
    tests = [bound_test(k, n, delta) for k, n in per_order]
    rank = {EXCEEDED: 3, NOT_SHOWN: 2, NO_HITS: 1, HOLDS: 0, None: 0}
    worst = max(tests, key=lambda t: (rank[t["verdict"]], -1.0 if t["upper"] is None else t["upper"]))
    return {"delta": delta, "verdict": worst["verdict"], "upper": worst["upper"],
            "error_rate": worst["error_rate"], "wrong": worst["wrong"], "served": worst["served"],
            "per_order": [{"wrong": t["wrong"], "served": t["served"], "error_rate": t["error_rate"],
                           "upper": t["upper"], "verdict": t["verdict"]} for t in tests]}


def stream_report(runs: Sequence[OrderRun], rows: Sequence[Row], config: Mapping[str, Any], *, cache_name: str,
                  delta: float | None, delta_source: str | None, eviction_note: str | None,
                  feedback: bool, domain_order: Sequence[str] = ()) -> dict[str, Any]:
    """The report of a stream run (a plain dict, JSON-ready); see the module docstring."""
    from pipeline.harness.interface import HARNESS_VERSION

    domains = ordered((r.domain for r in rows), domain_order)
    labels = ordered((r.label for r in rows), LABEL_ORDER)
    groups = (*labels, A_SIDE)
    # per request code (2 x row + side): its domain and its label group (B: the row's label; A apart)
    dom_of = [d for r in rows for d in (r.domain, r.domain)]
    lab_of = [g for r in rows for g in (A_SIDE, r.label)]
    total = _zero()
    per_order_counts, by_domain, by_label = [], {d: _zero() for d in domains}, {g: _zero() for g in groups}
    dom_orders: dict[str, list[tuple[int, int]]] = {d: [] for d in domains}
    for run in runs:
        counts = _zero()
        for o, n in Counter(run.outcomes).items():
            counts[o] += n
        dom = {d: _zero() for d in domains}
        for (d, o), n in Counter(zip(map(dom_of.__getitem__, run.codes), run.outcomes)).items():
            dom[d][o] += n
        for (g, o), n in Counter(zip(map(lab_of.__getitem__, run.codes), run.outcomes)).items():
            by_label[g][o] += n
        per_order_counts.append(counts)
        for i in range(6):
            total[i] += counts[i]
        for d, c in dom.items():
            acc = by_domain[d]
            for i in range(6):
                acc[i] += c[i]
            r = _rates(c)
            dom_orders[d].append((r["wrong"], r["served"]))
    orders_out = []
    for run, counts in zip(runs, per_order_counts):
        r = _rates(counts)
        orders_out.append({"seed": run.seed, **r, **{k: v for k, v in sorted(run.counters.items())},
                           "curve": _curve(run.outcomes)})
    overall = {**_rates(total), "bound": _worst_bound([(o["wrong"], o["served"]) for o in orders_out], delta)}
    domain_out = {}
    for d in domains:
        domain_out[d] = {**_rates(by_domain[d]), "bound": _worst_bound(dom_orders[d], delta)}
    # instability over the B requests: a different answer (None: a miss) in some order
    unstable = unstable_hit = 0
    unstable_dom = {d: [0, 0] for d in domains}
    for row, answers in zip(rows, zip(*(run.b_answers for run in runs))):
        first = answers[0]
        tally = unstable_dom[row.domain]
        tally[1] += 1
        if answers.count(first) != len(answers):
            unstable += 1
            tally[0] += 1
            if any((a is None) != (first is None) for a in answers):
                unstable_hit += 1
    n = len(rows)
    for d in domains:
        k, m = unstable_dom[d]
        domain_out[d]["instability"] = k / m if m and len(runs) > 1 else None
    gaps = sorted(realised_gaps(runs[0].codes)) if runs else []
    errors = [e for run in runs for e in run.errors][:5]
    return {
        "cache_name": cache_name,
        "harness_version": HARNESS_VERSION,
        "protocol": {
            "name": STREAM, **dict(config), "seeds": [run.seed for run in runs],
            "requests_per_order": len(runs[0].codes) if runs else 0, "rows": n,
            "eviction_supported": eviction_note is None, "eviction_note": eviction_note, "feedback": feedback,
            "realised_gap": {"min": gaps[0], "median": gaps[len(gaps) // 2], "max": gaps[-1]} if gaps else None,
        },
        "bound": {"delta": delta, "delta_source": delta_source, "confidence": CONFIDENCE,
                  **{k: overall["bound"][k] for k in _BOUND_KEYS}},
        "overall": overall,
        "orders": orders_out,
        "by_domain": domain_out,
        "by_label": {g: _rates(by_label[g]) for g in groups},
        "instability": {"rows": n, "orders": len(runs), "answer_unstable": unstable, "hit_miss_unstable": unstable_hit,
                        "answer": unstable / n if n and len(runs) > 1 else None,
                        "hit_miss": unstable_hit / n if n and len(runs) > 1 else None},
        "errors": {"count": sum(run.counters.get("errors", 0) for run in runs), "messages": errors},
        "timing": _timing(runs),
    }


def with_bound(report: Mapping[str, Any], delta: float | None, delta_source: str | None) -> dict[str, Any]:
    """The report with its bound tests redone for another δ: they depend on the counts alone (every
    order's wrong and served hits, overall and per domain), so a run is never repeated for them."""
    out = dict(report)
    overall = dict(report["overall"])
    overall["bound"] = _worst_bound([(o["wrong"], o["served"]) for o in report["orders"]], delta)
    out["overall"] = overall
    out["by_domain"] = {d: {**r, "bound": _worst_bound([(p["wrong"], p["served"]) for p in r["bound"]["per_order"]],
                                                        delta)} for d, r in report["by_domain"].items()}
    out["bound"] = {"delta": delta, "delta_source": delta_source, "confidence": CONFIDENCE,
                    **{k: overall["bound"][k] for k in _BOUND_KEYS}}
    return out


def _percentile(sorted_values: Sequence[float], q: float) -> float | None:
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _timing(runs: Sequence[OrderRun]) -> dict[str, Any]:
    """The machine's numbers: lookup latency, the cache's own time and the harness's bookkeeping."""
    lat = sorted(x * 1000.0 for run in runs for x in run.lookup_seconds)
    cache_s = sum(run.cache_seconds for run in runs)
    total_s = sum(run.total_seconds for run in runs)
    requests = sum(len(run.codes) for run in runs)
    return {"lookup_ms": {"p50": _percentile(lat, 0.5), "p95": _percentile(lat, 0.95)},
            "cache_seconds": cache_s, "total_seconds": total_s, "bookkeeping_seconds": total_s - cache_s,
            "requests": requests,
            "bookkeeping_us_per_request": (total_s - cache_s) / requests * 1e6 if requests else None}


def untimed_stream(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report without what the machine decides (timings): what a committed file may hold."""
    return {k: v for k, v in report.items() if k != "timing"}


# ---- rendering

def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _bound_cell(b: Mapping[str, Any]) -> str:
    return f"{_f(b['upper'], 4)}" + (f" ({b['verdict']})" if b.get("verdict") else "")


def render_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown form of a stream report (no timings)."""
    p, o, b = report["protocol"], report["overall"], report["bound"]
    cap = "unbounded" if p["capacity"] is None else f"{p['capacity']} entries, eviction {p['eviction']}"
    gap = p["realised_gap"] or {}
    lines = [f"# {report['cache_name']}: stream protocol", "",
             f"{p['rows']} rows, {p['requests_per_order']} requests per order (every row's A and B), "
             f"{len(p['seeds'])} arrival orders (seeds {', '.join(map(str, p['seeds']))}); mean gap {p['gap']} "
             f"(realised in the first order: min {gap.get('min')}, median {gap.get('median')}, max {gap.get('max')}); "
             f"capacity {cap}; feedback {'given' if p['feedback'] else 'not taken (no feedback method)'}.", ""]
    if p.get("eviction_note"):
        lines += [f"**Capacity not applied:** {p['eviction_note']}.", ""]
    lines += ["| scope | lookups | served | hit rate | precision | recall | FHR | wrong-entry hits | error rate | "
              "error upper 95% |", "|---|---|---|---|---|---|---|---|---|---|"]

    def line(name: str, r: Mapping[str, Any], upper: Any) -> str:
        return (f"| {name} | {r['lookups']} | {r['served']} | {_f(r['hit_rate'])} | {_f(r['precision'])} | "
                f"{_f(r['recall'])} | {_f(r['fhr'])} | {r['wrong_entry_hits']} | {_f(r['error_rate'], 4)} | "
                f"{_f(upper, 4)} |")

    for order in report["orders"]:
        ub = bound_test(order["wrong"], order["served"], None)["upper"]
        lines.append(line(f"order seed {order['seed']}", order, ub))
    lines.append(line("all orders (summed)", o, None))
    inst = report["instability"]
    lines += ["", f"Answer instability: {_f(inst['answer'])} ({inst['answer_unstable']} of {inst['rows']} B requests "
              f"got a different answer in some order); decided differently as hit or miss: {_f(inst['hit_miss'])} "
              f"({inst['hit_miss_unstable']})."]
    if b["delta"] is None:
        lines += ["", f"Declared error bound: none. The worst order's error rate {_f(b['error_rate'], 4)} "
                  f"({b['wrong']}/{b['served']} served hits wrong) has a one-sided 95% Clopper–Pearson upper bound "
                  f"of {_f(b['upper'], 4)}."]
    else:
        src = "declared by the cache" if b["delta_source"] == "declared" else "given to the harness"
        lines += ["", f"Error bound δ = {b['delta']:g} ({src}): **{b['verdict']}**. In the worst order "
                  f"{b['wrong']} of {b['served']} served hits were wrong (rate {_f(b['error_rate'], 4)}, one-sided 95% "
                  "Clopper–Pearson upper bound " + _f(b["upper"], 4) + "); the bound holds when that upper bound is "
                  "<= δ in every order."]
    lines += ["", "## Per domain", "", "| domain | lookups | hit rate | precision | FHR | error rate | "
              "error upper 95% (worst order) | instability |", "|---|---|---|---|---|---|---|---|"]
    for d, r in report["by_domain"].items():
        lines.append(f"| {d} | {r['lookups']} | {_f(r['hit_rate'])} | {_f(r['precision'])} | {_f(r['fhr'])} | "
                     f"{_f(r['error_rate'], 4)} | {_bound_cell(r['bound'])} | {_f(r['instability'])} |")
    lines += ["", "## Per label (B lookups by the row's label; A lookups apart)", "",
              "| label | lookups | served | correct | wrong | served share |", "|---|---|---|---|---|---|"]
    for g, r in report["by_label"].items():
        lines.append(f"| {g} | {r['lookups']} | {r['served']} | {r['correct']} | {r['wrong']} | {_f(r['hit_rate'])} |")
    if report["errors"]["count"]:
        lines += ["", f"Errors: {report['errors']['count']} (scored as misses): "
                  + "; ".join(report["errors"]["messages"])]
    return "\n".join(lines) + "\n"


def summary_line(report: Mapping[str, Any]) -> str:
    """One line for the terminal: the headline numbers and the machine's timing."""
    o, t, b = report["overall"], report.get("timing") or {}, report["bound"]
    lat = t.get("lookup_ms") or {}
    bound = "" if b["delta"] is None else f", error bound {b['delta']:g}: {b['verdict']} (upper {_f(b['upper'], 4)})"
    return (f"{report['cache_name']}: stream, {len(report['orders'])} orders, hit rate {_f(o['hit_rate'])}, "
            f"FHR {_f(o['fhr'])}, precision {_f(o['precision'])}, instability {_f(report['instability']['answer'])}"
            f"{bound}; lookup p50 {_f(lat.get('p50'), 2)} ms, p95 {_f(lat.get('p95'), 2)} ms")


def check_bound(report: Mapping[str, Any]) -> tuple[bool, str]:
    """The --check-bound verdict: (passed, one line)."""
    b, name = report["bound"], report["cache_name"]
    if b["delta"] is None:
        return False, (f"{name} declares no error_bound, so --check-bound has nothing to test. Declare "
                       "`error_bound` on the cache, or pass a value: --check-bound 0.05")
    if b["served"] == 0:
        return False, (f"{name}: no served hits in the worst order, so error bound {b['delta']:g} cannot be shown "
                       "(--check-bound)")
    text = (f"error rate {_f(b['error_rate'], 4)} ({b['wrong']}/{b['served']}), one-sided 95% upper bound "
            f"{_f(b['upper'], 4)}")
    if b["upper"] > b["delta"]:
        return False, (f"{name}: {text} exceeds the error bound {b['delta']:g} (--check-bound). Make the cache serve "
                       "fewer wrong hits, or declare the bound it keeps")
    return True, f"{name}: {text} is within the error bound {b['delta']:g}: pass"
