"""What `cacheeval build` does around the Dagster run so that bad input is one line: the input
check before Dagster starts, and the Dagster log kept in a file instead of on the console.

- `check_inputs` loads every corpus the datasets dir holds, as `cacheeval sources` does (the build
  reads every corpus it finds), so a malformed or empty file stops the build before any step runs,
  with the one-line error that names the file and record.
- `BuildLog` names a file under the cache root's `logs/` before the build starts, and `write` puts
  every event of every run of the build's Dagster instance in it (the stack of a failed step
  included). The console shows none of Dagster's lines; a failure's one line names the file. The
  newest `KEEP` logs are kept.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

KEEP = 20


def check_inputs(datasets_dir: Path | None) -> None:
    """Load every corpus found in the datasets dir; the first problem raises InputError (one line)."""
    if datasets_dir is None:
        return
    from pipeline.app.cli.sources import survey

    survey(str(datasets_dir))


class BuildLog:
    """The Dagster log file of one build: `<cache root>/logs/build-<UTC time>-<pid>.log`."""

    def __init__(self, cache_dir: Path | str | None) -> None:
        from pipeline.core import settings

        self.folder = settings.logs_dir(cache_dir)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.path = self.folder / f"build-{stamp}-{os.getpid()}.log"

    def write(self, instance) -> Path | None:
        """Every run's events, oldest first; then only the newest KEEP logs stay. None if the
        folder cannot be written (the log is an aid; its absence must not fail a build)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.path, "w", encoding="utf-8") as f:
                for run in reversed(list(instance.get_runs())):
                    f.write(f"=== run {run.run_id} ({run.job_name}) {run.status.value}\n")
                    for rec in instance.all_logs(run.run_id):
                        f.write(_line(rec))
            for old in sorted(self.folder.glob("build-*.log"))[:-KEEP]:
                old.unlink(missing_ok=True)
            return self.path
        except OSError:
            return None


def _line(rec) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(rec.timestamp))
    ev = rec.dagster_event
    what = ev.event_type_value if ev is not None else "LOG"
    text = f"{when} {logging.getLevelName(rec.level)} {rec.step_key or '-'} {what} {rec.user_message or ''}\n"
    failure = ev.step_failure_data if ev is not None and ev.is_step_failure else None
    if failure is not None and failure.error is not None:
        text += "".join("    " + ln + "\n" for ln in failure.error.to_string().splitlines())
    return text
