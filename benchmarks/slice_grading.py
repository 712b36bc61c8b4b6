"""What grading a quarterly slice's candidates costs: every candidate (before 0a64e9f) against only the
ones that fool the target (after), in CPU seconds per ensemble member, measured in one run.

    .venv/bin/python benchmarks/slice_grading.py [--quarter 2026-Q4] [--sample 600]

Reads the newest `<cache root>/evolving/<quarter>-candidates-*.jsonl` (written by any evolve, build or
check) and the committed slice's report for how many candidates fooled the target. Embeds a random
sample of the candidates' distinct texts with each member's loaded encoder (no embedding cache: the
work a cold cache does), and scales the CPU time per text to all distinct texts and to the texts of
the fooled rows (their count from the report, two texts a row: an upper bound). MiniLM and mpnet are
shown too, though the caches that score every candidate embed those texts with them anyway.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    from pipeline.core import settings
    from pipeline.core.paths import OUTPUTS
    from pipeline.services.embedders import load_embedders_config, load_encoder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quarter", default="2026-Q4")
    ap.add_argument("--sample", type=int, default=600)
    args = ap.parse_args()
    root = settings.cache_root()
    files = sorted((root / "evolving").glob(f"{args.quarter}-candidates-*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not files:
        print(f"no {args.quarter} candidates file under {root / 'evolving'}: run `cacheeval evolve --quarter "
              f"{args.quarter}` (or a check) first", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in files[-1].read_text(encoding="utf-8").split("\n") if line.strip()]
    texts = sorted({t for r in rows for t in (r["query_a"], r["query_b"])})
    report = (OUTPUTS / "evolving" / f"{args.quarter}.md").read_text(encoding="utf-8")
    fooled = int(re.search(r"\| fooled the target \S+ \| ([\d,]+) \|", report).group(1).replace(",", ""))
    sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
    cfg = load_embedders_config()
    print(f"{len(rows):,} candidates, {len(texts):,} distinct texts; {fooled} fooled the target "
          f"(<= {2 * fooled} texts); per-text CPU from {len(sample)} sampled texts")
    print(f"{'member':24s} {'CPU-s/text':>10s} {'all texts':>10s} {'fooled':>8s}")
    total_all = total_fooled = 0.0
    for name in cfg.members:
        encode = load_encoder(cfg.specs[name], root)
        encode(sample[:8])                      # load and warm up outside the timing
        start = _cpu()
        encode(sample)
        per = (_cpu() - start) / len(sample)
        every, few = per * len(texts), per * 2 * fooled
        total_all, total_fooled = total_all + every, total_fooled + few
        print(f"{name:24s} {per:10.4f} {every:10.0f} {few:8.0f}")
    print(f"{'all members':24s} {'':10s} {total_all:10.0f} {total_fooled:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
