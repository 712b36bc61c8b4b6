"""outputs/reports/traps.{md,json}: the reference caches on the system traps (outputs/traps/system_traps.jsonl,
pipeline/stages/traps.py), per trap, under the isolated and the stream protocols.

Every trap row is MISS, so each number is a false hit: a response served where none may be. The
caches, as registered (pipeline/references):

- GPTCache 0.1.44 with MiniLM at 0.80 and its default pre-processing, which keys on the last
  message only: it cannot see a user, a tenant, a system prompt, tools or a stored status;
- the verified cache, trained on the main benchmark's train split (a pair cache: under `isolated`
  it decides each pair as `cacheeval eval --reference verified` does; under `stream` it runs as a
  store/lookup cache through pipeline/references/pair_store.py);
- the vCache-style cache at δ = 0.05, the most willing of the registered bounds (it learns only from
  the stream's feedback: under `isolated` it has nothing to learn from).

Each run goes through the evaluation-result cache (`score_chosen`, `score_stream`), so a warm rebuild
re-runs nothing. Per trap: n (isolated: rows; stream: lookups with no equivalent entry stored, A and
B, over the arrival orders), false hits and FHR with its 95% Wilson interval (isolated). Committed
files hold no timings.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pipeline.core.hashing import canonical_json, file_sha256

if TYPE_CHECKING:
    from pipeline.core.settings import Settings

CACHES = ("gptcache-minilm@0.80", "verified", "vcache-minilm@delta=0.05")
PROTOCOLS = ("isolated", "stream")


def _per_trap_isolated(report: Mapping[str, Any], traps: Sequence[str]) -> dict:
    out = {}
    for t in traps:
        d = report["by_domain"].get(t) or {}
        out[t] = {"n": d.get("miss", 0), "false_hits": d.get("fp", 0), "fhr": d.get("fhr"), "fhr_ci95": d.get("fhr_ci95")}
    c = report["confusion"]
    out["all"] = {"n": c["fp"] + c["tn"], "false_hits": c["fp"], "fhr": report["metrics"]["fhr"]["value"],
                  "fhr_ci95": report["metrics"]["fhr"].get("ci95")}
    return out


def _per_trap_stream(report: Mapping[str, Any], traps: Sequence[str]) -> dict:
    def cell(r: Mapping[str, Any]) -> dict:
        return {"n": r["negatives"], "false_hits": r["false_hits_on_negatives"], "fhr": r["fhr"],
                "served": r["served"], "lookups": r["lookups"], "wrong_entry_hits": r["wrong_entry_hits"]}

    out = {t: cell(report["by_domain"][t]) if t in report["by_domain"] else None for t in traps}
    out["all"] = cell(report["overall"])
    return out


def _run(task: tuple[str, str], traps: str, bench: str, use_cache: bool, eval_dir: str | None) -> dict:
    """One cache under one protocol on the traps, through the evaluation-result cache (a process-pool
    task: plain data in and out): its per-trap numbers and its errors."""
    from pipeline.harness import load_bench
    from pipeline.harness.cache import EvalCache
    from pipeline.harness.scoring import Chosen, prefetch, score_chosen
    from pipeline.harness.stream import StreamConfig, score_stream
    from pipeline.references import PAIR_KIND, REFERENCES
    from pipeline.stages.traps import TRAPS

    name, protocol = task
    store, spec = EvalCache(eval_dir), REFERENCES[name]
    subject = spec.build(Path(bench))   # the verified cache trains on the main benchmark's splits
    if protocol == "isolated":
        kind = "pair" if spec.kind == PAIR_KIND else "isolated"
        report = score_chosen(Chosen(name, kind, subject, name), traps, store=store, use_cache=use_cache,
                              strict=False)[0]
        return {"per_trap": _per_trap_isolated(report, list(TRAPS)), "errors": report["errors"]["count"]}
    if spec.kind == PAIR_KIND:
        from pipeline.references.pair_store import PairStore

        subject = PairStore(subject)
    rows = load_bench(traps, strict=False)
    prefetch(subject, rows)
    report = score_stream(name, subject, traps, rows, StreamConfig(), reference=name, store=store,
                          use_cache=use_cache)[0]
    return {"per_trap": _per_trap_stream(report, list(TRAPS)), "errors": report["errors"]["count"],
            "workload": {k: report["protocol"][k] for k in ("gap", "orders", "seeds", "requests_per_order", "rows")}}


def _run_all(tasks: Sequence[tuple[str, str]], traps: Path, bench: Path, use_cache: bool,
             resolved: "Settings | None") -> dict[tuple[str, str], dict]:
    from pipeline.core import settings

    s = resolved or settings.resolve()
    n, eval_dir = min(s.workers, len(tasks)), str(s.eval_dir)
    if n <= 1:
        return {t: _run(t, str(traps), str(bench), use_cache, eval_dir) for t in tasks}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")  # never fork a process holding Dagster's threads
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=settings.single_thread) as pool:
        futures = {t: pool.submit(_run, t, str(traps), str(bench), use_cache, eval_dir) for t in tasks}
        return {t: f.result() for t, f in futures.items()}


def score_trap_references(traps: Path, bench: Path, use_cache: bool = True, resolved: "Settings | None" = None) -> dict:
    """Every cache of CACHES under both protocols on the traps file; `bench`: the main benchmark (the
    verified cache trains on the splits beside it)."""
    from pipeline.harness import load_bench
    from pipeline.stages.traps import GROUPS, TRAPS, counts

    tasks = [(name, p) for name in CACHES for p in PROTOCOLS]
    results = _run_all(tasks, traps, bench, use_cache, resolved)
    rows = load_bench(traps, strict=False)
    stream = results[(CACHES[0], "stream")]["workload"]
    return {"suite": {"file": "traps/system_traps.jsonl", "sha256": file_sha256(traps), "rows": len(rows),
                      "per_trap": counts([r.to_dict() for r in rows])},
            "traps": {t: {"group": g, "what": what} for t, (g, what) in TRAPS.items()}, "groups": dict(GROUPS),
            "caches": list(CACHES), "stream_workload": stream,
            **{p: {name: results[(name, p)]["per_trap"] for name in CACHES} for p in PROTOCOLS},
            "errors": {f"{name} ({p})": results[(name, p)]["errors"] for name, p in tasks}}


def _f(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def findings(result: Mapping[str, Any]) -> list[str]:
    """Plain sentences read off the tables: what each cache served, its worst and best trap."""
    lines = []
    for c in result["caches"]:
        parts = []
        for p in PROTOCOLS:
            per = result[p][c]
            a = per["all"]
            traps = [(t, x) for t, x in per.items() if t != "all" and x and x["n"]]
            if not a["false_hits"]:
                parts.append(f"under {p} it served none of {a['n']}")
                continue
            worst = max(traps, key=lambda tx: (tx[1]["fhr"], tx[0]))
            best = min(traps, key=lambda tx: (tx[1]["fhr"], tx[0]))
            parts.append(f"under {p} it served {a['false_hits']} of {a['n']} (FHR {_f(a['fhr'])}; worst {worst[0]} "
                         f"{_f(worst[1]['fhr'])}, least {best[0]} {_f(best[1]['fhr'])})")
        lines.append(f"{c}: " + "; ".join(parts) + ".")
    return lines


def _table(result: Mapping[str, Any], protocol: str) -> list[str]:
    caches = result["caches"]
    lines = ["| group | trap | " + " | ".join(f"{c}: n | false hits | FHR" for c in caches) + " |",
             "|---|---|" + "---|---|---|" * len(caches)]
    for t, meta in [*result["traps"].items(), ("all", {"group": "", "what": ""})]:
        cells = []
        for c in caches:
            x = result[protocol][c].get(t)
            cells.append("– | – | –" if not x else f"{x['n']} | {x['false_hits']} | {_f(x['fhr'])}")
        name = "**all traps**" if t == "all" else f"{t} ({meta['what']})"
        lines.append(f"| {meta['group']} | {name} | " + " | ".join(cells) + " |")
    return lines


def render_markdown(result: Mapping[str, Any]) -> str:
    s, w = result["suite"], result["stream_workload"]
    lines = ["# System traps: pairs a cache must miss whatever the wording", "",
             f"{s['rows']} pairs ({s['file']}, sha256 {s['sha256'][:16]}…), each an EQUIV or PARA_SAFE HIT row of the "
             "benchmark wrapped in a trap that makes it a MISS: " + "; ".join(
                 f"({g}) {what}" for g, what in result["groups"].items()) + ". Every row is MISS, so every served "
             "response is a false hit. Score your cache on them with `cacheeval eval --bench "
             "outputs/traps/system_traps.jsonl --cache-module ...` (add `--protocol stream --in-process` for a "
             "store/lookup cache); the report's per-domain table is the per-trap table.", "",
             "## Isolated (reset, store A, look up B; a pair cache decides each pair)", "",
             "n: trap rows; false hits: rows served.", "", *_table(result, "isolated"), "",
             f"## Stream ({w['requests_per_order']} requests per order, mean gap {w['gap']}, {w['orders']} orders)", "",
             "n: lookups with no equivalent entry stored (A and B, all orders); false hits: those served.", "",
             *_table(result, "stream"), ""]
    lines += [f"- {x}" for x in findings(result)] + [""]
    errors = {k: v for k, v in result["errors"].items() if v}
    lines += ["Errors: " + (", ".join(f"{k} {v}" for k, v in errors.items()) if errors else "none") + ".", ""]
    return "\n".join(lines)


def trap_files(result: Mapping[str, Any]) -> dict[str, bytes]:
    """The two committed files, byte-stable."""
    return {"reports/traps.md": render_markdown(result).encode("utf-8"),
            "reports/traps.json": (canonical_json(dict(result)) + "\n").encode("utf-8")}
