"""`cacheeval ui`: the Dagster UI (`dagster dev`), DAGSTER_HOME defaulting to the git-ignored .dagster_home/.

`dagster dev` runs as a child in a process group of its own (webserver, daemon, code servers and run
workers all join it). SIGTERM, SIGINT or SIGHUP to `cacheeval ui` asks it to shut down the way Ctrl-C
does; whatever is left of the group afterwards is terminated, then killed. Started with a plain
`nohup ... &` a shell leaves SIGINT ignored, and `dagster dev` maps SIGTERM onto SIGINT's handler, so
without this it ignored both and left its processes behind.

The instance settings (configs/dagster.yaml: telemetry and the welcome dialog off) are copied into
DAGSTER_HOME when it has none. There is no dagster.yaml in the project root, because `dagster dev`
warns that one there is not used; and `dagster dev`'s "superseded, use `dg dev`" FutureWarning is
filtered (dg needs a project layout this repository does not have).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipeline.core import settings
from pipeline.core.paths import CONFIGS, PROJECT_ROOT

INSTANCE_SETTINGS = CONFIGS / "dagster.yaml"
# PYTHONWARNINGS entry: action:message-start:category (the message must hold no colon).
SUPERSEDED_NOTICE = "ignore:Function `dev_command` is superseded:FutureWarning"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_SECONDS = 20  # for the services to shut down after the first signal, and for leftovers after that


def dagster_home(resolved: settings.Settings) -> Path:
    """$DAGSTER_HOME, else <project>/.dagster_home; holds configs/dagster.yaml unless it has its own."""
    home = resolved.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists():
        shutil.copyfile(INSTANCE_SETTINGS, target)
    return home


def command(host: str, port: str) -> list[str]:
    dagster = str(Path(sys.executable).parent / "dagster")
    return [dagster, "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "-h", host, "-p", str(port)]


def environment(resolved: settings.Settings, home: Path) -> dict[str, str]:
    """The environment of `dagster dev`: ours, with its instance folder, offline, and the notice filtered."""
    warnings = ",".join(w for w in (resolved.variable(settings.PYTHON_WARNINGS), SUPERSEDED_NOTICE) if w)
    return settings.child_environment(resolved, {settings.DAGSTER_HOME: str(home), settings.HF_HUB_OFFLINE: "1",
                                                 settings.HF_DATASETS_OFFLINE: "1", settings.PYTHON_WARNINGS: warnings})


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = ("Build the dataset from the UI: Jobs -> build_dataset -> Materialize all: one run, no dialog, v1.1 into "
                "build/ui-outputs/ ($CACHEEVAL_UI_PROFILE and $CACHEEVAL_UI_OUT_DIR change them; the launchpad, by "
                "the arrow, takes a launch config). README, The Dagster UI.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", default="3000")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal still counts as alive
        return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _reap_group(pgid: int, deadline: float) -> None:
    """Wait until no process of the group is left, terminating it, then killing it at `deadline`."""
    _signal_group(pgid, signal.SIGTERM)
    while _group_alive(pgid):
        _reap_orphans()
        if time.monotonic() > deadline:
            _signal_group(pgid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.2)


def _reap_orphans() -> None:
    """Collect exited children (orphans of the group reparented to us as subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _become_subreaper() -> None:
    """On Linux, become the parent of the group's orphans, so that they are reaped (a container's
    PID 1 may never reap them, and a zombie still counts as a member of its group)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        PR_SET_CHILD_SUBREAPER = 36
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run(args) -> int:
    resolved = settings.resolve()
    home = dagster_home(resolved)
    stopping: dict[str, float] = {}  # "at": when the first stop signal came
    child: dict[str, int] = {}

    def on_signal(_signum, _frame):
        first = "at" not in stopping
        stopping.setdefault("at", time.monotonic())
        if "pid" in child:
            _forward(child["pid"], first)

    # Set before the child starts, so that it does not inherit an ignored SIGINT either.
    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)
    _become_subreaper()
    proc = subprocess.Popen(command(args.host, args.port), cwd=PROJECT_ROOT, env=environment(resolved, home),
                            start_new_session=True)
    child["pid"] = proc.pid
    if "at" in stopping:  # a signal came while it was starting
        _forward(proc.pid, True)
    try:
        while proc.poll() is None:
            if "at" in stopping and time.monotonic() - stopping["at"] > GRACE_SECONDS:
                break  # slow to shut down: the group is terminated below
            time.sleep(0.5)
    finally:
        _reap_group(proc.pid, time.monotonic() + GRACE_SECONDS)
    return 0 if "at" in stopping else (proc.returncode or 0)


def _forward(pid: int, first: bool) -> None:
    """First stop signal: SIGINT to dagster dev (its own clean shutdown, as on Ctrl-C); a second one:
    SIGTERM to the whole group."""
    try:
        if first:
            os.kill(pid, signal.SIGINT)
        else:
            os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
