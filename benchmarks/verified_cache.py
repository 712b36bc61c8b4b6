"""Training time, decisions per second and decision latency (p50/p95) of the reference verified cache.

- training: `build` on the benchmark's train split (featurize train + dev, fit, choose the dev
  threshold), embeddings read from the project's embedding cache;
- decisions, in three embedding modes, on an evenly spaced sample of the test split, each decision
  one `cache(row)` call timed by the harness (`evaluate`):
  - `cache`: a fresh cache object, so every vector comes from the SQLite embedding cache (what
    `cacheeval eval --reference verified` does on a benchmark the cache has seen);
  - `memory`: the same rows again, vectors already in memory (features + classifier only);
  - `model`: an empty embedding cache, so MiniLM and mpnet embed every text (new traffic); the
    models load during the warm-up rows, outside the timing.

    .venv/bin/python benchmarks/verified_cache.py [--bench outputs/cachebench.jsonl] [--rows 100] [--no-model]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.harness import evaluate, load_bench  # noqa: E402
from pipeline.references import verified as V  # noqa: E402
from references import WARMUP, sample  # noqa: E402  (benchmarks/references.py: the same evenly spaced sample)


def timed(cache, rows: list) -> dict:
    evaluate(cache, rows[:WARMUP], on_error="raise")
    rest = rows[WARMUP:]
    t0 = time.perf_counter()
    rep = evaluate(cache, rest, on_error="raise").to_dict()
    wall = time.perf_counter() - t0
    return {"n": len(rest), "per_s": len(rest) / wall, "p50": rep["latency_ms"]["p50"], "p95": rep["latency_ms"]["p95"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=Path("outputs/cachebench.jsonl"))
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--no-model", action="store_true", help="skip the `model` mode (embedders run on every text)")
    args = ap.parse_args()
    splits = args.bench.parent / "splits"

    t0 = time.perf_counter()
    cache = V.build(args.bench)
    train_s = time.perf_counter() - t0
    print(f"training: {train_s:.1f} s (featurize train + dev, fit, dev threshold {cache.threshold:.6f})")

    rows = sample(load_bench(splits / "test.jsonl", splits / "test_labels.jsonl"), args.rows + WARMUP)
    fresh = V.VerifiedCache(cache.clf, cache.threshold, V.Vectors(), cache.settings["trained_on"])
    results = [("cache", timed(fresh, rows)), ("memory", timed(fresh, rows))]
    if not args.no_model:
        with tempfile.TemporaryDirectory(prefix="verified-bench-") as tmp:
            cold = V.VerifiedCache(cache.clf, cache.threshold, V.Vectors(embeddings_db=Path(tmp) / "emb.sqlite"),
                                   cache.settings["trained_on"])
            results.append(("model", timed(cold, rows)))
            cold.vectors.cache.close()
    print(f"{'embeddings':<10} {'rows':>5} {'decisions/s':>12} {'p50 ms':>8} {'p95 ms':>8}")
    for mode, r in results:
        print(f"{mode:<10} {r['n']:>5} {r['per_s']:>12.1f} {r['p50']:>8.2f} {r['p95']:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
