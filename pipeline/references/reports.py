"""outputs/reports/references.{md,json,png}: every reference cache scored on the built benchmark.

- GPTCache 0.1.44 (the real library, pipeline/references/gptcache_store.py) at each
  registered configuration, on every row under the isolated protocol (Protocol A-prime: reset, store
  A, look up B), and its MiniLM-L6 default once more under the shared protocol (every A in one cache);
  the MiniLM sweep (similarity_threshold 0.50-0.99) is read off the 0.80 run's confidences, which
  are GPTCache's own score (it hits at t exactly when the score is >= t), so it costs no second run.
- The verified cache (pipeline/references/verified.py): trained on train, threshold on dev,
  scored on test (labels joined), and as 5-fold out-of-fold predictions over every row.

The five runs are independent and are spread over spawned processes (as many as the embedding
workers of the build's settings, one thread each); the tables are assembled in a fixed order after.
Every score goes through the evaluation-result cache (keyed on the benchmark's sha256, the cache's
code, its model snapshots and settings), so a warm rebuild re-runs nothing. Committed files hold
no timings (latency is the machine's: `cacheeval eval` prints it, benchmarks/references.py measures
it), and the PNG is written without a timestamp, so a rebuild is byte-identical.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pipeline.core.hashing import canonical_json
from pipeline.harness.portable import TIMING_KEYS, portable_confidence, untimed  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from pipeline.core.settings import Settings

# Isolated runs of these registered references, in table order; the sweep is read off the first.
ISOLATED = ("gptcache-minilm@0.80", "gptcache-minilm@0.85", "gptcache-mpnet@0.80")
SHARED = ("gptcache-minilm@0.80",)
SWEEP_OF = "gptcache-minilm@0.80"
# The specification's reference points (../shared/design/BENCHMARK.md, "Reference points").
SPECIFICATION = {
    "gptcache-minilm@0.80": {"f1": 0.571, "fhr": 0.682, "adversarial_fhr": 0.963, "precision": 0.411,
                             "recall": 0.933},
    "verified (out of fold)": {"f1": 0.864, "fhr": 0.049, "adversarial_fhr": 0.080, "precision": 0.896,
                               "recall": 0.834},
}
def _value(m: Mapping[str, Any], key: str) -> float | None:
    return m[key]["value"]


def _row_of(config: str, rows: str, data: Mapping[str, Any], domains: Sequence[str]) -> dict:
    """One line of the table from a harness report dict."""
    m = data["metrics"]
    adv = (data.get("by_miss_label") or {}).get("ADVERSARIAL") or {}
    by_domain = data.get("by_domain") or {}
    return {
        "configuration": config, "rows": rows, "n": data["bench"]["n"],
        "f1": _value(m, "f1"), "fhr": _value(m, "fhr"), "adversarial_fhr": adv.get("fhr"),
        "precision": _value(m, "precision"), "recall": _value(m, "recall"), "accuracy": _value(m, "accuracy"),
        "fhr_by_domain": {d: (by_domain.get(d) or {}).get("fhr") for d in domains},
    }


def _run(task: tuple[str, str], bench: str, use_cache: bool, eval_dir: str | None = None) -> dict:
    """One reference run through the evaluation-result cache (a process-pool task, so it takes and
    returns plain data): ("isolated" | "shared", name) -> the harness report; ("verified", "") -> the
    verified cache's full report (the cache trained here keys the result and, on a miss, is the one
    the report scores: trained once). `eval_dir`: the evaluation-result cache's folder."""
    from pipeline.harness.cache import EvalCache

    store = EvalCache(eval_dir)
    kind, name = task
    if kind == "verified":
        from pipeline.references.verified import build as build_verified
        from pipeline.references.verified_report import full_report

        verified = build_verified(Path(bench))
        identity = store.identity(bench, verified, {"report": "verified full_report", "folds": "see settings"})
        return store.cached_run(identity, lambda: full_report(bench, cache=verified), use_cache=use_cache)[0]
    from pipeline.references import get_reference
    from pipeline.harness.scoring import Chosen, score_chosen

    subject = get_reference(name).build(Path(bench))
    return score_chosen(Chosen(name, kind, subject, name), bench, store=store, use_cache=use_cache)[0]


def _run_all(tasks: Sequence[tuple[str, str]], bench: Path, use_cache: bool,
             resolved: "Settings | None" = None) -> dict[tuple[str, str], dict]:
    """Every task's result, by task. The runs are independent (each its own GPTCache store or its
    own trained cache), so they are spread over the settings' count of embedding workers, spawned
    processes (one thread each); a result does not depend on which process ran it or when.
    `resolved`: the build's settings (default: this process's)."""
    from pipeline.core import settings

    s = resolved or settings.resolve()
    n, eval_dir = min(s.workers, len(tasks)), str(s.eval_dir)
    if n <= 1:
        return {t: _run(t, str(bench), use_cache, eval_dir) for t in tasks}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")  # never fork a process holding Dagster's threads
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=settings.single_thread) as pool:
        futures = {t: pool.submit(_run, t, str(bench), use_cache, eval_dir) for t in tasks}
        return {t: f.result() for t, f in futures.items()}


def score_references(bench: Path, domains: Sequence[str], use_cache: bool = True,
                     resolved: "Settings | None" = None) -> dict:
    """Every reference scored on `bench` (a built benchmark with its splits beside it): the table
    rows, the sweep, each run's report without timings, and the verified cache's full report.
    `resolved`: the build's settings (workers, evaluation-result folder; default: this process's)."""
    from pipeline.harness.sweep import SWEEP_THRESHOLDS
    from pipeline.harness.sweep import grid_sweep

    # the longest first (training plus five folds), so the pool's two processes finish together
    tasks = [("verified", ""), *(("isolated", n) for n in ISOLATED), *(("shared", n) for n in SHARED)]
    results = _run_all(tasks, bench, use_cache, resolved)
    table, runs, sweep = [], {}, None
    for protocol, names in (("isolated", ISOLATED), ("shared", SHARED)):
        for name in names:
            data = results[(protocol, name)]
            label = f"{name} ({protocol})"
            table.append(_row_of(label, "all", data, domains))
            if protocol == "shared":
                p = data["protocol"]
                table[-1]["wrong_entry_hits"] = p["wrong_entry_hits"]["total"]
            runs[label] = untimed(data)
            if name == SWEEP_OF and protocol == "isolated":
                sweep = grid_sweep(data["decisions"], SWEEP_THRESHOLDS)

    full = results[("verified", "")]
    table.append(_row_of("verified (test split)", "test", full["test"], domains))
    table.append(_row_of("verified (out of fold, nested thresholds)", "all", full["out_of_fold"]["nested"], domains))
    table.append(_row_of("verified (out of fold, pooled threshold)", "all", full["out_of_fold"]["pooled"], domains))
    return {"table": table, "sweep": sweep, "runs": runs, "verified": full,
            "specification": SPECIFICATION, "domains": list(domains)}


def _f(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def render_markdown(result: Mapping[str, Any]) -> str:
    """references.md: the main table, the specification's points, per-domain FHR, the sweep."""
    domains = result["domains"]
    lines = ["# Reference caches on this benchmark", "",
             "Real caches, scored by the harness exactly as `cacheeval eval --reference NAME` scores them. "
             "GPTCache 0.1.44 is the real library (its SQLite cache base, faiss vector base, "
             "SearchDistanceEvaluation and default last-message pre-processing); *isolated* stores A and looks "
             "up B for each pair alone, *shared* stores every A in one cache and then looks up every B (a lookup "
             "that serves another row's answer is a false hit, or a miss on a HIT row). The verified cache is "
             "trained on the train split and its threshold chosen on dev for FHR <= 5%; its test row is the "
             "test split, its out-of-fold rows are 5-fold predictions over every row (*nested*: each fold's "
             "threshold from its own training rows only; *pooled*: one threshold over all out-of-fold scores, "
             "as the specification's reference did).", "",
             "| configuration | rows | F1 | FHR | ADVERSARIAL FHR | precision | recall | accuracy |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["table"]:
        lines.append(f"| {r['configuration']} | {r['n']} ({r['rows']}) | {_f(r['f1'])} | {_f(r['fhr'])} | "
                     f"{_f(r['adversarial_fhr'])} | {_f(r['precision'])} | {_f(r['recall'])} | {_f(r['accuracy'])} |")
    lines += ["", "The specification's reference points (../shared/design/BENCHMARK.md), for comparison:", "",
              "| configuration | F1 | FHR | ADVERSARIAL FHR | precision | recall |", "|---|---|---|---|---|---|"]
    for name, s in result["specification"].items():
        lines.append(f"| {name} | {_f(s['f1'])} | {_f(s['fhr'])} | {_f(s['adversarial_fhr'])} | {_f(s['precision'])} | "
                     f"{_f(s['recall'])} |")
    shared = [r for r in result["table"] if "wrong_entry_hits" in r]
    if shared:
        lines += ["", "Wrong-entry hits under the shared protocol (a lookup served another row's response): "
                  + ", ".join(f"{r['configuration']}: {r['wrong_entry_hits']}" for r in shared) + "."]
    lines += ["", "## FHR per domain", "", "| configuration | " + " | ".join(domains) + " |",
              "|---|" + "---|" * len(domains)]
    for r in result["table"]:
        lines.append(f"| {r['configuration']} | " + " | ".join(_f(r["fhr_by_domain"][d]) for d in domains) + " |")
    v = result["verified"]
    lines += ["", "## The verified cache", "",
              f"Threshold on dev: {v['settings']['threshold']:.6f} (dev FHR {_f(v['dev']['metrics']['fhr']['value'])}, "
              f"dev recall {_f(v['dev']['metrics']['recall']['value'])}); {len(v['features'])} features; "
              f"out-of-fold nested thresholds {', '.join(f'{t:.3f}' for t in v['out_of_fold']['nested_thresholds'])}.",
              "", "FHR per MISS label:", "", "| configuration | RELATED_UNSAFE | ADVERSARIAL | UNRELATED |", "|---|---|---|---|"]
    for key, name in (("test", "test split"), ("nested", "out of fold, nested"), ("pooled", "out of fold, pooled")):
        rep = v["test"] if key == "test" else v["out_of_fold"][key]
        ml = rep.get("by_miss_label") or {}
        lines.append(f"| {name} | " + " | ".join(_f((ml.get(lab) or {}).get("fhr"))
                                                 for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")) + " |")
    if result.get("sweep"):
        from pipeline.harness.sweep import render_grid_sweep

        lines += ["", f"## {SWEEP_OF}: similarity_threshold sweep", "",
                  "GPTCache hits at similarity_threshold t exactly when its own score for the nearest entry is >= t, "
                  "so the 0.80 run gives every point.", ""]
        lines.append(render_grid_sweep(result["sweep"]).split("\n", 2)[2].rstrip("\n"))
    lines += ["", "![FHR against recall for every reference](references.png)", ""]
    return "\n".join(lines)


def render_plot(result: Mapping[str, Any]) -> bytes:
    """FHR against recall: the MiniLM sweep as a curve, every configuration as a point."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5), dpi=80)
    if result.get("sweep"):
        pts = [p for p in result["sweep"]["points"] if p["recall"] is not None and p["fhr"] is not None]
        ax.plot([p["recall"] for p in pts], [p["fhr"] for p in pts], color="grey", linewidth=1,
                label=f"{SWEEP_OF} sweep 0.50-0.99")
    markers = "osD^v<>P*X"
    for i, r in enumerate(result["table"]):
        if r["recall"] is None or r["fhr"] is None:
            continue
        ax.scatter([r["recall"]], [r["fhr"]], marker=markers[i % len(markers)], s=40, label=r["configuration"], zorder=3)
    ax.set_xlabel("recall (HIT rows served)")
    ax.set_ylabel("false-hit rate (MISS rows served)")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("Reference caches: FHR against recall (lower right is better)", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def reference_files(result: Mapping[str, Any]) -> dict[str, bytes]:
    """The three committed files, byte-stable."""
    return {"reports/references.md": render_markdown(result).encode("utf-8"),
            "reports/references.json": (canonical_json(dict(result)) + "\n").encode("utf-8"),
            "reports/references.png": render_plot(result)}
