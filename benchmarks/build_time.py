"""Cold and warm build time of each profile (with time per stage) and peak memory, and the warm
`cacheeval check`; printed. Targets on this machine: warm check of v1.1 <= 20 s; cold v1.1 build
with all six embedders <= 6 min.

    .venv/bin/python benchmarks/build_time.py [--profiles smoke v1.1 lifted40]
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


def run(cmd: list[str], env: dict) -> tuple[float, float, str]:
    """Wall seconds, peak RSS of the child (MiB), combined output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return wall, max(peak, before) / 1024, proc.stdout + proc.stderr


def stages(output: str) -> str:
    lines = output.split("time per stage (s):", 1)[-1].strip().splitlines()
    top = [ln.strip() for ln in lines if re.match(r"^\s+[0-9.]+\s+\S+$", ln)][:6]
    return "; ".join(top)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", nargs="+", default=["smoke", "v1.1"])
    args = ap.parse_args()
    cli = [sys.executable, "-m", "pipeline.cli"]
    for profile in args.profiles:
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            env = {**os.environ, "CACHEEVAL_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
            for kind in ("cold", "warm"):
                wall, peak, output = run([*cli, "build", "--profile", profile, "--out", out], env)
                print(f"{profile:9s} {kind} build: {wall:7.1f} s   peak RSS {peak:7.0f} MiB   stages: {stages(output)}")
            if profile == "v1.1" and (ROOT / "outputs" / "manifest.json").is_file():
                wall, peak, _ = run([*cli, "check"], env)
                print(f"{profile:9s} warm check: {wall:7.1f} s (target <= 20 s)")


if __name__ == "__main__":
    main()
