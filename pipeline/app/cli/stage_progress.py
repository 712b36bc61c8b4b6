"""Stage progress for `cacheeval build`: a line as each step of a run ends, with counts and the time
left estimated from the previous build's step times (kept in <cache root>/build_times.json).

The line is printed as the run's IO manager stores the step's value, in the run's thread; it only
prints, so it can never change what the build does.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from pipeline.core.writer import atomic_write

FILE = "build_times.json"


def load_times(cache_root: Path, profile: str) -> dict[str, float]:
    try:
        data = json.loads((cache_root / FILE).read_text(encoding="utf-8"))
        times = data.get(profile, {})
        return {str(k): float(v) for k, v in times.items()} if isinstance(times, dict) else {}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}  # no history (or a damaged file): no estimate, never an error


def save_times(cache_root: Path, profile: str, times: dict[str, float]) -> None:
    try:
        path = cache_root / FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[profile] = {k: round(v, 2) for k, v in sorted(times.items())}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    except OSError:
        pass  # an estimate for next time is not worth failing a build over


def _fmt(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.1f} min"


class StageWatcher:
    """`with StageWatcher(io_manager, steps, previous, progress):` around one in-process run: a line as
    the run's IO manager (pipeline/orchestration/memory_io.py) stores each step's asset value, in the
    run's own thread. It reads nothing of Dagster's: a watcher thread that read the run's events from
    the in-memory instance while the run wrote them made the run's last write fail now and then
    ("database table is locked: runs"; in-memory SQLite does not wait for a lock)."""

    def __init__(self, io_manager, steps: list[str], previous: dict[str, float], progress: Callable[[str], None]) -> None:
        self.io_manager, self.steps, self.previous, self.progress = io_manager, list(steps), previous, progress
        self.seen: set[str] = set()
        self.t0 = time.perf_counter()

    def __enter__(self) -> "StageWatcher":
        self.io_manager.on_output = self.stored
        return self

    def __exit__(self, *exc) -> None:
        self.io_manager.on_output = None

    def stored(self, step: str) -> None:
        """A step's value was stored: its line (asset checks and ops inside graph assets are not stages)."""
        if step in self.seen or step not in self.steps:
            return
        self.seen.add(step)
        done = [s for s in self.steps if s in self.seen]
        left = [s for s in self.steps if s not in self.seen]
        estimate = ""
        if left and all(s in self.previous for s in left):
            estimate = f", ~{_fmt(sum(self.previous[s] for s in left))} left (last build's times)"
        try:
            self.progress(f"  [{len(done)}/{len(self.steps)}] {step} done, "
                          f"{_fmt(time.perf_counter() - self.t0)} elapsed{estimate}")
        except Exception:  # noqa: BLE001 - a progress line is never worth a failed build
            pass
