"""Cold and warm `cacheeval build` time per stage, against the previous design, in one run; printed.

The previous design (default: commit 23c2c1a, torch one text per call on two threads, the six
embedders one after another) is checked out into a temporary git worktree and built with the same
virtual environment; then the current tree. Each build starts from an empty cache folder (cold),
then runs again on it (warm). Targets on this machine (2 cores): cold v1.1 build <= 4 min.

    .venv/bin/python benchmarks/build_time.py [--profile v1.1] [--baseline 23c2c1a] [--no-baseline] [--current REV]
    .venv/bin/python benchmarks/build_time.py --check [--current REV]

`--check` times `cacheeval check` instead (target: a warm check <= 15 s on 2 cores): from an empty
cache folder, the cold build (which also fills the committed slices' caches), the first check after
it, and a warm check; each check prints how many of its cached steps came from the step cache.

`--current REV` times a revision (in its own worktree) instead of the working tree, so that
uncommitted work in the checkout cannot change or break the measurement.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(tree: Path, profile: str, cache: Path, out: Path) -> tuple[float, float, dict[str, float]]:
    """Wall seconds, peak RSS of the children so far (MiB), seconds per stage."""
    env = {**os.environ, "CACHEEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pipeline.app.cli", "build", "--profile", profile, "--out", str(out)],
                          cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"error: build in {tree} failed:\n{proc.stderr[-3000:]}")
    stages: dict[str, float] = {}
    for line in proc.stdout.split("time per stage (s):", 1)[-1].splitlines():
        m = re.match(r"^\s+([0-9.]+)\s+(\S+)$", line)
        if m and not re.search(r"_(quota|check)|^cachebench_|^selected_rows_", m.group(2)):
            stages[m.group(2)] = float(m.group(1))
    filled = re.search(r"slices filled in ([0-9.]+)s", proc.stdout)
    if filled:
        stages["(slice caches)"] = float(filled.group(1))
    gen = re.findall(r"generated and verified in ([0-9.]+)s", proc.stderr)
    stages["generation+verification (10 domains)"] = sum(map(float, gen))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, peak, stages


def run_check(tree: Path, cache: Path) -> tuple[float, str]:
    """Wall seconds of `cacheeval check` on the committed outputs, and its step-cache line."""
    env = {**os.environ, "CACHEEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pipeline.app.cli", "check"], cwd=tree, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"error: check in {tree} failed:\n{proc.stderr[-3000:]}")
    steps = next((line for line in proc.stdout.splitlines() if "step cache" in line), "")
    return wall, steps


def measure_check(tree: Path, profile: str) -> None:
    """Cold build, first check after it, warm check, on one fresh cache folder; printed."""
    with tempfile.TemporaryDirectory(prefix="cacheeval-bt-check-") as tmp:
        cold, peak, stages = build(tree, profile, Path(tmp) / "cache", Path(tmp) / "out")
        print(f"cold build:               {cold:7.1f} s  (peak RSS so far {peak:,.0f} MiB; of which filling the "
              f"slices' caches {stages.get('(slice caches)', 0):.1f} s)", flush=True)
        for label in ("first check after it:", "warm check:"):
            wall, steps = run_check(tree, Path(tmp) / "cache")
            print(f"{label:25s} {wall:7.1f} s  ({steps or 'no step-cache line'})", flush=True)
        print(f"target: warm check <= 15 s: {'met' if wall <= 15 else 'NOT met'} ({wall:.1f} s)")


def measure(tree: Path, profile: str, label: str) -> dict[str, tuple[float, dict[str, float]]]:
    results = {}
    with tempfile.TemporaryDirectory(prefix="cacheeval-bt-") as tmp:
        for kind in ("cold", "warm"):
            wall, peak, stages = build(tree, profile, Path(tmp) / "cache", Path(tmp) / "out")
            results[kind] = (wall, stages)
            print(f"{label:8s} {kind}: {wall:7.1f} s  (peak RSS so far {peak:,.0f} MiB)", flush=True)
    return results


def measure_revision(rev: str, profile: str, label: str) -> dict[str, tuple[float, dict[str, float]]]:
    """measure() on a git revision checked out into a temporary worktree (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix=f"cacheeval-{label}-") as wt:
        subprocess.run(["git", "worktree", "add", "--detach", wt, rev], cwd=ROOT, check=True, capture_output=True)
        try:
            return measure(Path(wt), profile, label)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", wt], cwd=ROOT, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="v1.1")
    ap.add_argument("--baseline", default="23c2c1a", help="git revision of the previous design")
    ap.add_argument("--no-baseline", action="store_true", help="time the current tree only")
    ap.add_argument("--current", help="git revision to time as the current design (default: the working tree)")
    ap.add_argument("--check", action="store_true", help="time the cold build, the first check and a warm check")
    args = ap.parse_args()
    if args.check:
        print(f"profile {args.profile}; {os.cpu_count()} CPUs; cacheeval check on a fresh cache folder", flush=True)
        if args.current:
            with tempfile.TemporaryDirectory(prefix="cacheeval-current-") as wt:
                subprocess.run(["git", "worktree", "add", "--detach", wt, args.current], cwd=ROOT, check=True,
                               capture_output=True)
                try:
                    measure_check(Path(wt), args.profile)
                finally:
                    subprocess.run(["git", "worktree", "remove", "--force", wt], cwd=ROOT, capture_output=True)
        else:
            measure_check(ROOT, args.profile)
        return
    print(f"profile {args.profile}; {os.cpu_count()} CPUs; each build from an empty cache, then warm", flush=True)
    runs = {}
    if not args.no_baseline:
        runs["previous"] = measure_revision(args.baseline, args.profile, "previous")
    runs["current"] = (measure_revision(args.current, args.profile, "current") if args.current
                       else measure(ROOT, args.profile, "current"))
    names = sorted({s for r in runs.values() for _, st in r.values() for s in st},
                   key=lambda s: -max(st.get(s, 0) for r in runs.values() for _, st in r.values()))
    cols = [f"{d} {k}" for d in runs for k in ("cold", "warm")]
    print("\nseconds per stage (summed step time; the rest of the wall time is Dagster and process start):")
    print(f"  {'stage':38s}" + "".join(f"{c:>15s}" for c in cols))
    for s in names:
        if max(st.get(s, 0) for r in runs.values() for _, st in r.values()) < 0.5:
            continue
        print(f"  {s:38s}" + "".join(f"{runs[d][k][1].get(s, 0):15.1f}" for d in runs for k in ("cold", "warm")))
    print(f"  {'wall':38s}" + "".join(f"{runs[d][k][0]:15.1f}" for d in runs for k in ("cold", "warm")))
    if "previous" in runs:
        for kind in ("cold", "warm"):
            prev, cur = runs["previous"][kind][0], runs["current"][kind][0]
            print(f"speed-up {kind}: {prev / cur:.2f}x ({prev:.0f} s -> {cur:.0f} s)")
        for stage in ("row_similarities", "reference_reports"):
            prev, cur = runs["previous"]["cold"][1].get(stage), runs["current"]["cold"][1].get(stage)
            if prev and cur:
                print(f"speed-up cold {stage}: {prev / cur:.2f}x ({prev:.0f} s -> {cur:.0f} s)")
    cold = runs["current"]["cold"][0]
    print(f"target: cold {args.profile} build <= 240 s: {'met' if cold <= 240 else 'NOT met'} ({cold:.0f} s)")


if __name__ == "__main__":
    main()
