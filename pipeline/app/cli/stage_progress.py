"""Stage progress for `cacheeval build`: a line as each step of a run ends, with counts and the time
left estimated from the previous build's step times (kept in <cache root>/build_times.json).

The run executes in this thread; a watcher thread reads the run's events from the (in-memory)
instance every half second. It only reads and prints: it can never change what the build does.
"""
from __future__ import annotations

import json
import threading
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
    """`with StageWatcher(instance, steps, previous, progress):` around one in-process run."""

    def __init__(self, instance, steps: list[str], previous: dict[str, float], progress: Callable[[str], None]) -> None:
        self.instance, self.steps, self.previous, self.progress = instance, list(steps), previous, progress
        self.known_runs = {r.run_id for r in instance.get_runs()}
        self.seen: set[str] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="cacheeval-stage-progress", daemon=True)
        self.t0 = time.perf_counter()

    def __enter__(self) -> "StageWatcher":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        if exc[0] is None:
            self._poll()  # steps that ended after the last poll

    def _watch(self) -> None:
        while not self.stop.wait(0.5):
            try:
                self._poll()
            except Exception:  # noqa: BLE001 - a progress line is never worth a failed build
                return

    def _poll(self) -> None:
        from dagster import DagsterEventType

        runs = [r for r in self.instance.get_runs() if r.run_id not in self.known_runs]
        for run in runs:
            for rec in self.instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_SUCCESS):
                step = rec.dagster_event.step_key.split("[")[0]
                if step in self.seen or step not in self.steps:  # asset checks are not counted as stages
                    continue
                self.seen.add(step)
                done = [s for s in self.steps if s in self.seen]
                left = [s for s in self.steps if s not in self.seen]
                estimate = ""
                if left and all(s in self.previous for s in left):
                    estimate = f", ~{_fmt(sum(self.previous[s] for s in left))} left (last build's times)"
                self.progress(f"  [{len(done)}/{len(self.steps)}] {step} done, "
                              f"{_fmt(time.perf_counter() - self.t0)} elapsed{estimate}")
