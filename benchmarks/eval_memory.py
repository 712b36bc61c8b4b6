"""Wall time and peak memory of `cacheeval eval` at scale, and of the rerun served from the
evaluation-result cache.

Writes a benchmark of --rows rows (default 200,000: about 480 MB of JSONL) made of the committed
outputs/cachebench.jsonl rows repeated, ids renumbered, into a temporary folder, with a fresh cache
root there ($CACHEEVAL_CACHE_DIR, so the first run is never served from an earlier one). Then runs
`cacheeval eval --baseline exact_match` on it as a subprocess, twice: the first run evaluates and
stores its result, the second is served from the result cache. Each run's wall time and peak RSS
(the child's ru_maxrss, read per child with os.wait4; `resource.getrusage(RUSAGE_CHILDREN)` is the
maximum over every child so far, printed as a cross-check) are printed.

Targets: the first run within 1 GB peak RSS, the cached rerun under 5 s. Measured on 2 shared cores
(200,000 rows, 477 MB): before streaming, 56.7 s and 3,135 MB, the cached rerun 44.7 s (it loaded and
checked every row first); after, 21-31 s and 357 MB, the cached rerun 0.9-1.5 s and 133 MB.

    PYTHONPATH=. .venv/bin/python benchmarks/eval_memory.py [--rows 200000] [--keep]
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
SOURCE = ROOT / "outputs" / "cachebench.jsonl"
RSS_TARGET_MB = 1024
CACHED_TARGET_S = 5.0


def write_bench(path: Path, n: int) -> int:
    """n rows cycled from the committed benchmark, each id made unique; returns the file's size."""
    rows = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["id"] = f"cb-{row.get('domain', 'x')}-{i + 1:07d}"
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path.stat().st_size


def run(argv: list[str], env: dict[str, str], out: Path) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS in MB, exit code, stderr) of one child."""
    t0 = time.perf_counter()
    with out.open("wb") as stdout, tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        stderr.seek(0)
        err = stderr.read().decode("utf-8", "replace")
    return wall, usage.ru_maxrss / 1024.0, proc.returncode, err  # ru_maxrss is in KB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    parser.add_argument("--baseline", default="exact_match")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="cacheeval-evalmem-"))
    try:
        bench = tmp / "bench.jsonl"
        t0 = time.perf_counter()
        size = write_bench(bench, args.rows)
        print(f"benchmark: {args.rows:,} rows, {size / 1e6:.0f} MB ({bench}), "
              f"written in {time.perf_counter() - t0:.1f} s")
        env = {**os.environ, "CACHEEVAL_CACHE_DIR": str(tmp / "cache"), "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        env.pop("CACHEEVAL_EVAL_CACHE_DIR", None)
        argv = [sys.executable, "-m", "pipeline.app.cli", "eval", "--bench", str(bench), "--baseline", args.baseline]
        figures = []
        for what in ("evaluated", "cached rerun"):
            wall, rss, code, err = run(argv, env, tmp / f"{what.split()[0]}.md")
            if code != 0:
                print(f"{what}: exit {code}\n{err}", file=sys.stderr)
                return 1
            served = "served from the evaluation-result cache" in err
            figures.append((what, wall, rss, served))
            print(f"{what:13s} wall {wall:6.1f} s   peak RSS {rss:7.0f} MB   served from the result cache: {served}")
        same = (tmp / "evaluated.md").read_bytes() == (tmp / "cached.md").read_bytes()
        print(f"reports identical: {same}")
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        print(f"RUSAGE_CHILDREN ru_maxrss (max over both runs): {children:.0f} MB")
        (_, _, rss, _), (_, cached_wall, _, served) = figures
        fast = cached_wall < CACHED_TARGET_S and served
        print(f"targets: peak RSS <= {RSS_TARGET_MB} MB: {'met' if rss <= RSS_TARGET_MB else 'NOT met'}; "
              f"cached rerun < {CACHED_TARGET_S:g} s: {'met' if fast else 'NOT met'}")
        return 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
