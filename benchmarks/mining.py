"""Real-traffic mining: time and pairs found per 1,000 prompts at 1k, 2k and the full shared
traffic (ShareGPT + Chatbot Arena, ~4,700 prompts), and how time grows (near linear, not quadratic).

The first N prompts are taken across the shards in shard order and each shard's part is mined as
in the build (scrub, duplicate hash, usearch ANN over MiniLM, rules, family guard, verifiers).
Embeddings come from the content-addressed cache (default: the project's, as the build uses it);
the `embed` column is the share of time spent getting vectors, so a cold cache shows up there.
`--cold` uses a fresh cache folder per size (slow: MiniLM embeds ~10 long prompts/s on two cores).

    .venv/bin/python benchmarks/mining.py [--datasets-dir ../shared/datasets] [--sizes 1000 2000 0] [--cold]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(datasets_dir: Path, n: int, cache_dir: Path | None) -> dict:
    """Mine the first `n` prompts (0 = all) of the real-traffic shards; timings and counts."""
    from domains.corpora import mining as M
    from sources.datasets_dir import DatasetsDir

    ds = DatasetsDir(datasets_dir)
    parts, left = [], n or None
    for shard in M.shards(ds):
        prompts, _ = M.shard_prompts(ds, shard)  # read + scrub: outside the timed part (loading is benchmarked elsewhere)
        if left is not None:
            prompts = prompts[:left]
            left -= len(prompts)
        if prompts:
            parts.append((shard, prompts))
    embed_s = 0.0
    real_embed = M.embed

    def timed_embed(texts, cache_dir=None):
        nonlocal embed_s
        t = time.perf_counter()
        try:
            return real_embed(texts, cache_dir)
        finally:
            embed_s += time.perf_counter() - t

    M.embed = timed_embed
    try:
        start = time.perf_counter()
        results = [M.mine(ds, shard, cache_dir=cache_dir, prompts=prompts) for shard, prompts in parts]
        total = time.perf_counter() - start
    finally:
        M.embed = real_embed
    return {"prompts": sum(r.n_prompts for r in results), "seconds": total, "embed_seconds": embed_s,
            "pairs_considered": sum(r.n_pairs for r in results),
            "candidates": sum(len(r.candidates) for r in results), "summary": M.summarise(results)}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 0], help="prompt counts; 0 = all")
    ap.add_argument("--cold", action="store_true", help="a fresh embedding cache per size")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    rows = []
    for n in args.sizes:
        if args.cold:
            with tempfile.TemporaryDirectory(prefix="mining-bench-") as tmp:
                rows.append(run(args.datasets_dir, n, Path(tmp)))
        else:
            run(args.datasets_dir, n, None)  # warm-up: fills the cache and loads the model once if needed
            rows.append(run(args.datasets_dir, n, None))
    base = rows[0]
    print(f"{'prompts':>8} {'seconds':>8} {'embed s':>8} {'s/1k':>7} {'pairs/1k':>9} {'cands/1k':>9} {'time growth':>12} {'size growth':>12}")
    for r in rows:
        k = r["prompts"] / 1000
        print(f"{r['prompts']:8d} {r['seconds']:8.2f} {r['embed_seconds']:8.2f} {r['seconds'] / k:7.2f} "
              f"{r['pairs_considered'] / k:9.1f} {r['candidates'] / k:9.2f} "
              f"{r['seconds'] / base['seconds']:12.2f} {r['prompts'] / base['prompts']:12.2f}")
    last = rows[-1]
    ratio = (last["seconds"] / base["seconds"]) / (last["prompts"] / base["prompts"])
    print(f"time growth / size growth, {base['prompts']} -> {last['prompts']} prompts: {ratio:.2f} (1 = linear)")
    print("kept:", last["summary"]["kept"])
    print("drops:", last["summary"]["drops"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
