"""`cacheeval ui`: the Dagster UI with DAGSTER_HOME defaulting to the git-ignored .dagster_home/."""
from __future__ import annotations

import argparse
import os
import shutil
import sys

from pipeline.core.paths import PROJECT_ROOT


def dagster_home() -> str:
    """$DAGSTER_HOME, else <project>/.dagster_home holding a copy of the project's dagster.yaml."""
    home = os.environ.get("DAGSTER_HOME") or str(PROJECT_ROOT / ".dagster_home")
    os.makedirs(home, exist_ok=True)
    target = os.path.join(home, "dagster.yaml")
    if not os.path.exists(target):
        shutil.copyfile(PROJECT_ROOT / "dagster.yaml", target)
    return home


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", default="3000")


def run(args) -> int:
    env = {**os.environ, "DAGSTER_HOME": dagster_home(), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    dagster = os.path.join(os.path.dirname(sys.executable), "dagster")
    cmd = [dagster, "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "-h", args.host, "-p", str(args.port)]
    os.chdir(PROJECT_ROOT)
    os.execve(dagster, cmd, env)
    return 0  # pragma: no cover - execve does not return
