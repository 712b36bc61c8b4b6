"""outputs/reports/stream.{md,json,png}: the reference caches as they run (the stream protocol).

Every run is `cacheeval eval --reference NAME --protocol stream` with the default workload (every
row's A and B, mean gap 100, unbounded capacity, 3 arrival orders), through the evaluation-result
cache (a warm rebuild re-runs nothing):

- the vCache-style online cache (pipeline/references/vcache.py) at δ = 0.01, 0.02, 0.05, with
  per-entry sigmoids (the paper's design) and with one pooled sigmoid (our variant);
- GPTCache 0.1.44 with MiniLM at similarity thresholds 0.80 (its registered default) to 0.99. Under
  the stream protocol a threshold changes what is stored (a hit is not stored, a miss is), so each
  threshold is its own run, unlike the isolated protocol's sweep read off one run.

The report answers: does each declared bound hold (one-sided 95% Clopper–Pearson upper bound of the
error rate on served hits, in every order), at what hit rate, and what GPTCache threshold reaches the
same error, at what hit rate. Committed files hold no timings, no per-lookup detail and no curves
(the PNG shows them); the PNG is written without a timestamp, so a rebuild is byte-identical.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pipeline.core.hashing import canonical_json

if TYPE_CHECKING:
    from pipeline.core.settings import Settings

DELTAS = (0.01, 0.02, 0.05)
VCACHE = tuple(f"vcache-minilm@delta={d:g}" for d in DELTAS) + tuple(f"vcache-global-minilm@delta={d:g}"
                                                                     for d in DELTAS)
GPTCACHE_THRESHOLDS = (0.80, 0.85, 0.90, 0.95, 0.98, 0.99, 0.999)


def gptcache_name(threshold: float) -> str:
    return f"gptcache-minilm@{threshold:.2f}" if round(threshold, 2) == threshold else f"gptcache-minilm@{threshold:g}"


def _subject(name: str, bench: Path) -> tuple[Any, str | None]:
    """(the cache, its registered reference name or None) for a report entry."""
    from pipeline.references import REFERENCES

    if name in REFERENCES:
        return REFERENCES[name].build(bench), name
    from pipeline.references.gptcache_store import GPTCacheStore

    threshold = float(name.rpartition("@")[2])
    return GPTCacheStore("minilm_l6", threshold), None


def _run(name: str, bench: str, domains: Sequence[str], use_cache: bool, eval_dir: str | None) -> dict:
    """One reference under the default stream workload, through the evaluation-result cache (a
    process-pool task: plain data in and out)."""
    from pipeline.harness import load_bench
    from pipeline.harness.cache import EvalCache
    from pipeline.harness.scoring import prefetch
    from pipeline.harness.stream import StreamConfig, score_stream

    rows = load_bench(bench)
    subject, reference = _subject(name, Path(bench))
    prefetch(subject, rows)
    report, _ = score_stream(name, subject, bench, rows, StreamConfig(), reference=reference, use_cache=use_cache,
                             store=EvalCache(eval_dir), domain_order=tuple(domains))
    return report


def _run_all(names: Sequence[str], bench: Path, domains: Sequence[str], use_cache: bool,
             resolved: "Settings | None") -> dict[str, dict]:
    from pipeline.core import settings

    s = resolved or settings.resolve()
    n, eval_dir = min(s.workers, len(names)), str(s.eval_dir)
    if n <= 1:
        return {name: _run(name, str(bench), domains, use_cache, eval_dir) for name in names}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")  # never fork a process holding Dagster's threads
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=settings.single_thread) as pool:
        futures = {name: pool.submit(_run, name, str(bench), tuple(domains), use_cache, eval_dir) for name in names}
        return {name: f.result() for name, f in futures.items()}


def _committed(report: Mapping[str, Any]) -> dict:
    """A report as the committed JSON holds it: no timings, no curves."""
    from pipeline.harness.stream import untimed_stream

    out = untimed_stream(report)
    out["orders"] = [{k: v for k, v in o.items() if k != "curve"} for o in out["orders"]]
    return out


def _line(name: str, report: Mapping[str, Any]) -> dict:
    o, b = report["overall"], report["bound"]
    return {"cache": name, "delta": b["delta"], "served": o["served"], "lookups": o["lookups"],
            "explorations": sum(x.get("explorations", 0) for x in report["orders"]),
            "hit_rate": o["hit_rate"], "precision": o["precision"],
            "fhr": o["fhr"], "recall": o["recall"], "error_rate": o["error_rate"],
            "worst_order_error_rate": b["error_rate"], "upper": b["upper"], "verdict": b["verdict"],
            "wrong_entry_hits": o["wrong_entry_hits"], "instability": report["instability"]["answer"],
            "hit_miss_instability": report["instability"]["hit_miss"]}


def equal_error(table: Sequence[Mapping[str, Any]]) -> list[dict]:
    """For every cache with a declared bound: the GPTCache threshold with the highest hit rate whose
    error rate (summed over orders) is no higher than the bounded cache's (when it served any hit) and
    than its δ, with the hit rates side by side."""
    gpt = [r for r in table if r["cache"].startswith("gptcache") and r["error_rate"] is not None]
    out = []
    for r in table:
        if r["delta"] is None:
            continue
        limits = {"its error rate": r["error_rate"], "its δ": r["delta"]}
        row = {"cache": r["cache"], "delta": r["delta"], "error_rate": r["error_rate"], "hit_rate": r["hit_rate"]}
        for what, limit in limits.items():
            within = [g for g in gpt if limit is not None and g["error_rate"] <= limit]
            best = max(within, key=lambda g: g["hit_rate"]) if within else None
            key = "at_error" if what == "its error rate" else "at_delta"
            row[key] = None if best is None else {"cache": best["cache"], "error_rate": best["error_rate"],
                                                  "hit_rate": best["hit_rate"]}
        out.append(row)
    return out


def findings(table: Sequence[Mapping[str, Any]]) -> list[str]:
    """Plain sentences read off the table: what each bounded cache served and whether δ held, and the
    lowest error any GPTCache threshold reached."""
    lines = []
    for r in table:
        if r["delta"] is None:
            continue
        if not r["served"]:
            lines.append(f"{r['cache']} served no hit in {r['lookups']} lookups ({r['explorations']} explorations "
                         f"with feedback): it never became confident enough for δ = {r['delta']:g}, so it kept its "
                         "promise only vacuously (no served hit, nothing to show).")
        else:
            lines.append(f"{r['cache']} served {r['served']} of {r['lookups']} lookups (hit rate {_f(r['hit_rate'])}) "
                         f"at error rate {_f(r['error_rate'], 4)}; δ = {r['delta']:g}: {r['verdict']} (worst-order "
                         f"upper bound {_f(r['upper'], 4)}).")
    gpt = [r for r in table if r["cache"].startswith("gptcache") and r["error_rate"] is not None]
    if gpt:
        low = min(gpt, key=lambda g: g["error_rate"])
        lines.append(f"The lowest error rate of GPTCache here is {_f(low['error_rate'], 4)} ({low['cache']}, hit rate "
                     f"{_f(low['hit_rate'])}, worst-order upper bound {_f(low['upper'], 4)}).")
    return lines


def score_stream_references(bench: Path, domains: Sequence[str], use_cache: bool = True,
                            resolved: "Settings | None" = None) -> dict:
    """Every reference under the stream protocol: the table, the equal-error comparison, each run's
    committed report and (for the plot only) the curves."""
    names = [*VCACHE, *(gptcache_name(t) for t in GPTCACHE_THRESHOLDS)]
    results = _run_all(names, bench, domains, use_cache, resolved)
    table = [_line(n, results[n]) for n in names]
    first = results[names[0]]["protocol"]
    workload = {k: first[k] for k in ("gap", "capacity", "eviction", "orders", "seed", "seeds", "requests_per_order",
                                      "rows", "realised_gap")}
    return {"workload": workload, "table": table, "equal_error": equal_error(table), "findings": findings(table),
            "runs": {n: _committed(results[n]) for n in names}, "domains": list(domains),
            "curves": {n: [o["curve"] for o in results[n]["orders"]] for n in names}}


def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def render_markdown(result: Mapping[str, Any]) -> str:
    """stream.md: the workload, the main table, the bound verdicts, GPTCache at equal error, per domain."""
    w = result["workload"]
    g = w["realised_gap"]
    lines = ["# Reference caches as they run (stream protocol)", "",
             f"Each cache serves {w['requests_per_order']} requests per arrival order (every row's A and B of the "
             f"{w['rows']} rows, a row's B on average {w['gap']} requests after its A: realised min {g['min']}, median "
             f"{g['median']}, max {g['max']}), {w['orders']} orders (seeds {', '.join(map(str, w['seeds']))}), "
             "capacity unbounded. A miss is answered and stored; the harness's oracle tells a cache with `feedback` "
             "whether each served (or explored) response was right. `cacheeval eval --reference NAME --protocol "
             "stream` gives each run's full report.", "",
             "The error rate is wrong served hits / served hits; its bound is the one-sided 95% Clopper–Pearson "
             "upper bound in the worst order (a declared δ *holds* when that bound is <= δ in every order, is *not "
             "shown* when the observed rate is within δ but the hits are too few to show it, and is *exceeded* when "
             "the observed rate is above δ). FHR is false hits on lookups with no equivalent entry stored; instability "
             "is the share of B requests served a different answer (or none) in some order.", "",
             "| cache | δ | hit rate | precision | recall | FHR | error rate | worst order | upper 95% | δ verdict | "
             "wrong-entry hits | instability |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["table"]:
        delta = "–" if r["delta"] is None else f"{r['delta']:g}"
        lines.append(f"| {r['cache']} | {delta} | {_f(r['hit_rate'])} | {_f(r['precision'])} | {_f(r['recall'])} | "
                     f"{_f(r['fhr'])} | {_f(r['error_rate'], 4)} | {_f(r['worst_order_error_rate'], 4)} | "
                     f"{_f(r['upper'], 4)} | {r['verdict'] or '–'} | {r['wrong_entry_hits']} | "
                     f"{_f(r['instability'])} |")
    lines += ["", *(f"- {x}" for x in result["findings"])]
    lines += ["", "## GPTCache at equal error", "",
              "For each bounded cache, the GPTCache threshold with the highest hit rate among those whose error rate "
              "(all orders) is no higher than the cache's own (when it served) and than its δ:", "",
              "| cache | δ | error rate | hit rate | GPTCache at no more error | its error, hit rate | "
              "GPTCache within δ | its error, hit rate |", "|---|---|---|---|---|---|---|---|"]

    def point(p: Mapping[str, Any] | None) -> tuple[str, str]:
        return ("none", "–") if p is None else (p["cache"], f"{_f(p['error_rate'], 4)}, {_f(p['hit_rate'])}")

    for e in result["equal_error"]:
        (a, a_num), (d, d_num) = point(e["at_error"]), point(e["at_delta"])
        lines.append(f"| {e['cache']} | {e['delta']:g} | {_f(e['error_rate'], 4)} | {_f(e['hit_rate'])} | {a} | "
                     f"{a_num} | {d} | {d_num} |")
    domains = result["domains"]
    lines += ["", "## Error rate per domain (all orders) and its worst-order upper bound", "",
              "| cache | " + " | ".join(domains) + " |", "|---|" + "---|" * len(domains)]
    for name, run in result["runs"].items():
        cells = []
        for d in domains:
            r = run["by_domain"].get(d)
            cells.append("–" if not r or not r["served"] else f"{_f(r['error_rate'])} ({_f(r['bound']['upper'])})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Hit rate per domain (all orders)", "", "| cache | " + " | ".join(domains) + " |",
              "|---|" + "---|" * len(domains)]
    for name, run in result["runs"].items():
        lines.append(f"| {name} | " + " | ".join(_f((run["by_domain"].get(d) or {}).get("hit_rate")) for d in domains)
                     + " |")
    lines += ["", "![Cumulative FHR along the stream, one line per arrival order](stream.png)", ""]
    return "\n".join(lines)


def render_stream_plot(curves_by_cache: Mapping[str, Any], columns: int = 4) -> bytes:
    """Cumulative FHR against requests served, one line per arrival order, one panel per cache.
    `curves_by_cache`: name -> a stream report (its orders' curves) or the list of curves itself."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves_by_cache)
    cols = min(columns, len(names)) or 1
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), dpi=80, squeeze=False, sharey=True)
    for ax, name in zip(axes.flat, names):
        value = curves_by_cache[name]
        curves = [o["curve"] for o in value["orders"]] if isinstance(value, Mapping) else value
        seeds = ([o["seed"] for o in value["orders"]] if isinstance(value, Mapping) else list(range(len(curves))))
        for seed, c in zip(seeds, curves):
            pts = [(x, y) for x, y in zip(c["requests"], c["fhr"]) if y is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], linewidth=1, label=f"order {seed}")
        ax.set_title(name, fontsize=8)
        ax.grid(True, linewidth=0.3)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("requests served", fontsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    axes[0][0].set_ylabel("cumulative FHR", fontsize=7)
    axes[0][0].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def stream_files(result: Mapping[str, Any]) -> dict[str, bytes]:
    """The three committed files, byte-stable."""
    data = {k: v for k, v in result.items() if k != "curves"}
    return {"reports/stream.md": render_markdown(result).encode("utf-8"),
            "reports/stream.json": (canonical_json(data) + "\n").encode("utf-8"),
            "reports/stream.png": render_stream_plot(result["curves"])}
