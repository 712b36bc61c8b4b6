"""Per-corpus load time and peak memory, cold and warm, on a datasets dir (default
../shared/datasets). Printed as a table; target: all corpora cold <= 60 s.

cold = a fresh process and an empty `datasets` Arrow cache; warm = a fresh process reusing the
cache the cold run filled. Each measurement runs in its own process so peak RSS is per corpus.

    .venv/bin/python benchmarks/load_sources.py [--datasets-dir DIR] [--corpus NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(datasets_dir: str, corpora: list[str]) -> None:
    """Load the corpora in this process and print timings and peak RSS as one JSON line."""
    sys.path.insert(0, str(ROOT))
    from sources.datasets_dir import DatasetsDir

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    ddir = DatasetsDir(datasets_dir)
    n = sum(sum(1 for _ in ddir.load(c)) for c in corpora)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"records": n, "seconds": seconds, "peak_mib": peak / 1024, "delta_mib": (peak - base) / 1024}))


def measure(datasets_dir: str, corpora: list[str], cache: str) -> dict:
    env = {**os.environ, "HF_DATASETS_CACHE": cache, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, __file__, "--child", "--datasets-dir", datasets_dir, *sum((["--corpus", c] for c in corpora), [])],
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets-dir", default=os.environ.get("CACHEEVAL_DATASETS_DIR", str(ROOT.parent / "shared" / "datasets")))
    parser.add_argument("--corpus", action="append", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.datasets_dir, args.corpus or [])
        return 0
    sys.path.insert(0, str(ROOT))
    from sources.datasets_dir import DatasetsDir

    corpora = args.corpus or DatasetsDir(args.datasets_dir).found()
    print(f"datasets dir: {args.datasets_dir}   (peak = max RSS of the loading process; delta = growth during the load)")
    print(f"{'corpus':<12} {'records':>8} {'cold s':>7} {'warm s':>7} {'cold peak MiB':>14} {'warm peak MiB':>14} {'cold delta':>11}")
    total_cold = total_warm = 0.0
    with tempfile.TemporaryDirectory(prefix="cacheeval-bench-") as tmp:
        for name in corpora:
            cache = str(Path(tmp) / name)
            cold, warm = measure(args.datasets_dir, [name], cache), measure(args.datasets_dir, [name], cache)
            total_cold += cold["seconds"]
            total_warm += warm["seconds"]
            print(f"{name:<12} {cold['records']:>8,} {cold['seconds']:>7.2f} {warm['seconds']:>7.2f} "
                  f"{cold['peak_mib']:>14.0f} {warm['peak_mib']:>14.0f} {cold['delta_mib']:>11.0f}")
        every = measure(args.datasets_dir, corpora, str(Path(tmp) / "_all"))
    print(f"{'sum':<12} {'':>8} {total_cold:>7.2f} {total_warm:>7.2f}")
    verdict = "OK" if every["seconds"] <= 60 else "OVER TARGET"
    print(f"all corpora in one process, cold: {every['records']:,} records in {every['seconds']:.2f} s, "
          f"peak {every['peak_mib']:.0f} MiB  (target <= 60 s: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
