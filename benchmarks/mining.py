"""Real-traffic mining at scale: time, peak memory and pairs per 1,000 human turns at 1k, 5k, 20k and
all (~61k) human turns of the shared corpora, cold and warm, with the growth ratio per step.

The first N human turns are taken in shard order (whole conversations) and mined as the build
does: prepared (scrub, sort into uses, MinHash signatures, MiniLM vectors) and paired (duplicates,
MinHash/LSH, usearch ANN, follow-up groups, rules, routes, family guard; the build verifies the
candidates afterwards, in verified_rows). Each (size, cold|warm) runs in its own process, so the
peak memory (ru_maxrss) is that run's. Cold: a fresh embedding
cache folder per size (the ONNX model folder is copied in, so model export is not timed); warm: the
same folder again. The outputs of a cold and a warm run must be the same bytes (checked: sha256 of
the candidates' keys, provenance and payloads, and the drops).

    .venv/bin/python benchmarks/mining.py [--datasets-dir ../shared/datasets] [--sizes 1000 5000 20000 0]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _records(datasets_dir: Path, n: int) -> list[tuple[str, str, list]]:
    """(shard, corpus, records) in shard order, whole conversations, until n human turns (0 = all)."""
    from domains.corpora import mining as M
    from sources.datasets_dir import DatasetsDir

    ds = DatasetsDir(datasets_dir)
    out, seen = [], 0
    for shard in M.shards(ds):
        corpus, records = M.shard_records(ds, shard)
        take = []
        for r in records:
            if n and seen >= n:
                break
            take.append(r)
            seen += sum(1 for role, text in (r.conversation or (("user", r.text),)) if role == "user")
        if take:
            out.append((shard, corpus, take))
    return out


def one(datasets_dir: Path, n: int, cache_dir: Path) -> dict:
    """Mine the first n human turns with `cache_dir`; time, peak memory, counts, output digest."""
    from domains.base import canonical_json
    from domains.corpora import mining as M

    parts = _records(datasets_dir, n)
    start = time.perf_counter()
    prepared = [M.prepare(shard, corpus, recs, cache_dir) for shard, corpus, recs in parts]
    mid = time.perf_counter()
    res = M.pair(prepared)
    end = time.perf_counter()
    blob = canonical_json([[c.key, c.provenance.to_dict(), c.verification_payload] for c in res.candidates]
                          + [sorted(res.drops.items())])
    return {"turns": res.n_prompts, "seconds": end - start, "prepare_seconds": mid - start,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "pairs": res.n_pairs,
            "candidates": len(res.candidates), "digest": hashlib.sha256(blob.encode()).hexdigest(),
            "summary": M.summarise([res])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 0], help="human turns; 0 = all")
    ap.add_argument("--one", nargs=2, metavar=("N", "CACHE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    if args.one:
        print(json.dumps(one(args.datasets_dir, int(args.one[0]), Path(args.one[1]))))
        return 0
    from pipeline.core import settings

    models = settings.cache_root() / "models"
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="mining-bench-") as tmp:
            if models.is_dir():
                shutil.copytree(models, Path(tmp) / "models")
            runs = {}
            for kind in ("cold", "warm"):
                proc = subprocess.run([sys.executable, __file__, "--datasets-dir", str(args.datasets_dir), "--one", str(n), tmp],
                                      capture_output=True, text=True, cwd=ROOT, check=True)
                runs[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(runs)
    print(f"{'turns':>7} {'cold s':>8} {'warm s':>8} {'cold MB':>8} {'warm MB':>8} {'pairs/1k':>9} {'rows/1k':>8} "
          f"{'time x':>7} {'size x':>7} {'same bytes':>10}")
    prev = None
    for r in rows:
        c, w = r["cold"], r["warm"]
        k = c["turns"] / 1000
        tx = f"{c['seconds'] / prev['seconds']:.2f}" if prev else "-"
        sx = f"{c['turns'] / prev['turns']:.2f}" if prev else "-"
        print(f"{c['turns']:7d} {c['seconds']:8.1f} {w['seconds']:8.1f} {c['peak_mb']:8.0f} {w['peak_mb']:8.0f} "
              f"{c['pairs'] / k:9.1f} {c['candidates'] / k:8.2f} {tx:>7} {sx:>7} {str(c['digest'] == w['digest']):>10}")
        prev = c
    last = rows[-1]["cold"]
    print("yield per 1,000 human turns by rule:",
          {rule: round(n / (last["turns"] / 1000), 3) for rule, n in last["summary"]["rules"].items()})
    print("kept:", last["summary"]["kept"])
    print("drops:", last["summary"]["drops"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
