"""The test suite's time as CI sees it (a clean clone: every cache cold), in one process and on two
pytest-xdist workers, in one session; printed: the wall time of each run, the slowest tests of the
first run with the second's time beside them, and each worker's busy time.

    .venv/bin/python benchmarks/ci_time.py run [--keep DIR] [-- PYTEST_ARGS...]
    .venv/bin/python benchmarks/ci_time.py report SERIAL.xml[:LOG] XDIST.xml[:LOG] [--wall-a S] [--wall-b S]

`run` starts each run on an empty cache root and an empty HF_HOME of its own (what CI has), with
PostgreSQL as .ci/test has it ($CACHEEVAL_TEST_PG_URL, start it with `eval "$(bash .ci/postgres.sh)"`);
the xdist run takes .ci/test's options. A test's time is JUnit's (set-up, call and tear-down, so a
module fixture counts in the first test that uses it). The worker of each test is read from pytest's
`-v` lines ("[gw0] PASSED ..."), so the xdist run is made with -v. `report` prints the same from
files of earlier runs. The figures depend on the machine's load: run both modes in one session.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
XDIST = ["-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder"]  # as .ci/test runs it
WORKER_LINE = re.compile(r"^\[(gw\d+)\] (?:\[\s*\d+%\] )?(?:PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (\S+)")


def durations(xml: Path) -> dict[str, tuple[float, str]]:
    """test id (classname::name) -> (seconds, outcome) from a JUnit file."""
    found = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        key = f"{case.get('classname')}::{case.get('name')}"
        found[key] = (float(case.get("time") or 0), outcome)
    return found


def workers(log: Path) -> dict[str, str]:
    """test id -> xdist worker, from a -v log."""
    out = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = WORKER_LINE.match(line)
        if m:
            path, _, rest = m.group(2).partition("::")
            out[f"{path.removesuffix('.py').replace('/', '.')}::{rest}"] = m.group(1)
    return out


def run_suite(label: str, extra: list[str], args: list[str], keep: Path) -> float:
    cache, hf = keep / f"{label}-cache", keep / f"{label}-hf"
    cache.mkdir(parents=True)
    hf.mkdir()
    env = {**os.environ, "CACHEEVAL_CACHE_DIR": str(cache), "HF_HOME": str(hf), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "CACHEEVAL_TEST_REQUIRE_PG": "1"}
    cmd = [sys.executable, "-m", "pytest", "-v", *extra, f"--junitxml={keep / f'{label}.xml'}", *args]
    print(f"{label}: {' '.join(cmd[2:])}", flush=True)
    t0 = time.perf_counter()
    with open(keep / f"{label}.log", "wb") as log:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    print(f"{label}: exit {code}, {wall:,.0f} s", flush=True)
    return wall


def report(a: tuple[Path, Path | None], b: tuple[Path, Path | None], wall_a: float | None, wall_b: float | None,
           top: int) -> None:
    da, db = durations(a[0]), durations(b[0])
    for name, d, wall in (("serial", da, wall_a), ("xdist", db, wall_b)):
        counts = defaultdict(int)
        for _, outcome in d.values():
            counts[outcome] += 1
        shown = f"{wall:,.0f} s wall, " if wall else ""
        print(f"{name}: {shown}{sum(s for s, _ in d.values()):,.0f} s summed over {len(d)} tests "
              f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})")
    if b[1] is not None:
        busy = defaultdict(float)
        for key, worker in workers(b[1]).items():
            busy[worker] += db.get(key, (0.0, ""))[0]
        print("xdist busy time per worker: " + ", ".join(f"{w} {s:,.0f} s" for w, s in sorted(busy.items())))
    where = workers(b[1]) if b[1] is not None else {}
    print(f"\n{'serial s':>9} {'xdist s':>8} {'worker':>6}  test (the {top} slowest of the serial run)")
    for key, (sec, _) in sorted(da.items(), key=lambda kv: -kv[1][0])[:top]:
        other = db.get(key)
        print(f"{sec:9.1f} {other[0] if other else float('nan'):8.1f} {where.get(key, '-'):>6}  {key}")


def split(spec: str) -> tuple[Path, Path | None]:
    xml, _, log = spec.partition(":")
    return Path(xml), Path(log) if log else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--keep", type=Path, help="folder for the logs, JUnit files and caches (default: a temporary one)")
    run.add_argument("--top", type=int, default=20)
    run.add_argument("pytest_args", nargs="*")
    rep = sub.add_parser("report")
    rep.add_argument("serial")
    rep.add_argument("xdist")
    rep.add_argument("--wall-a", type=float)
    rep.add_argument("--wall-b", type=float)
    rep.add_argument("--top", type=int, default=20)
    ns = parser.parse_args()
    if ns.command == "report":
        report(split(ns.serial), split(ns.xdist), ns.wall_a, ns.wall_b, ns.top)
        return
    keep = ns.keep or Path(tempfile.mkdtemp(prefix="cacheeval-ci-time-"))
    walls = [run_suite(label, extra, ns.pytest_args, keep) for label, extra in (("serial", []), ("xdist", XDIST))]
    report((keep / "serial.xml", keep / "serial.log"), (keep / "xdist.xml", keep / "xdist.log"), *walls, ns.top)


if __name__ == "__main__":
    main()
