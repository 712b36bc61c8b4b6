"""Decisions per second and lookup latency (p50/p95) of each reference cache, printed.

Each GPTCache reference runs under the isolated protocol (reset, store A, look up B) on an evenly
spaced sample of the benchmark's rows, in two embedding modes:
- `model`: the embedder runs on every request, as in production (what a user of GPTCache waits for);
- `cache`: vectors from the project's content-addressed embedding cache (what `cacheeval eval
  --reference` uses by default; the same vectors, so the same decisions).
Decisions/s counts whole pairs (reset + store + lookup) over wall-clock time; the latency is the
lookup alone. Model loading and a few warm-up rows are excluded. The pair cache `verified` is
timed too with --verified (it trains on the train split first, outside the timing).

    .venv/bin/python benchmarks/references.py [--bench outputs/cachebench.jsonl] [--rows 100] [--verified]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.harness import evaluate, load_bench  # noqa: E402
from pipeline.references import REFERENCES, STORE_KIND  # noqa: E402
from pipeline.harness.stateful import ProtocolRun  # noqa: E402

WARMUP = 3


def sample(rows: list, n: int) -> list:
    """n rows at evenly spaced positions (deterministic, every domain represented)."""
    if n >= len(rows):
        return rows
    return [rows[round(i * (len(rows) - 1) / (n - 1))] for i in range(n)] if n > 1 else rows[:1]


def time_store(name: str, embeddings: str, rows: list) -> dict:
    from pipeline.references.gptcache_store import GPTCacheStore

    params = REFERENCES[name].params
    store = GPTCacheStore(params["embedder"], params["threshold"], embeddings=embeddings)
    t0 = time.perf_counter()
    evaluate(ProtocolRun(store, "isolated", rows[:WARMUP]), rows[:WARMUP], on_error="raise")  # loads the model
    load_s = time.perf_counter() - t0
    timed = rows[WARMUP:]
    t0 = time.perf_counter()
    report = evaluate(ProtocolRun(store, "isolated", timed), timed, on_error="raise").to_dict()
    wall = time.perf_counter() - t0
    return {"load_s": load_s, "per_s": len(timed) / wall, "p50": report["latency_ms"]["p50"],
            "p95": report["latency_ms"]["p95"], "fhr": report["metrics"]["fhr"]["value"]}


def time_pair(name: str, bench: Path, rows: list) -> dict:
    t0 = time.perf_counter()
    cache = REFERENCES[name].build(bench)
    cache(rows[0])
    load_s = time.perf_counter() - t0
    timed = rows[WARMUP:]
    t0 = time.perf_counter()
    report = evaluate(cache, timed, on_error="raise").to_dict()
    wall = time.perf_counter() - t0
    return {"load_s": load_s, "per_s": len(timed) / wall, "p50": report["latency_ms"]["p50"],
            "p95": report["latency_ms"]["p95"], "fhr": report["metrics"]["fhr"]["value"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=Path("outputs/cachebench.jsonl"))
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--verified", action="store_true", help="also time the verified cache (trains first)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    rows = sample(load_bench(args.bench), args.rows + WARMUP)
    load = getattr(os, "getloadavg", lambda: (float("nan"),) * 3)()
    print(f"{len(rows) - WARMUP} rows of {args.bench} (+{WARMUP} warm-up), isolated protocol; "
          f"load average {load[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'reference':<24} {'embeddings':<10} {'decisions/s':>11} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'load s':>7} {'FHR':>6}")
    names = [n for n in REFERENCES.names() if REFERENCES[n].kind == STORE_KIND and not REFERENCES[n].sweep]
    results = [(n, mode, time_store(n, mode, rows)) for n in names for mode in ("model", "cache")]
    if args.verified:
        results.append(("verified", "cache", time_pair("verified", args.bench, rows)))
    for name, mode, r in results:
        print(f"{name:<24} {mode:<10} {r['per_s']:>11.1f} {r['p50']:>8.1f} {r['p95']:>8.1f} {r['load_s']:>7.1f} "
              f"{r['fhr']:>6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
