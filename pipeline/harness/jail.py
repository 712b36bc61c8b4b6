"""The bubblewrap jail of a scored cache's worker (pipeline.harness.isolated): what it can see.

Inside, the worker has a root file system of its own (bwrap):
- /usr and the system links read-only, /etc/ld.so.cache, and the few /etc files a network client
  needs (resolv.conf, hosts, ssl certificates): a cache may call a remote model;
- the interpreter and the virtualenv read-only at their own paths (so installed packages import);
- the project's `pipeline` package read-only (the published interface: Pair, Request, Verdict);
- the user's module folder read-only (a .py file's folder; for a dotted module, the current
  directory) and any `--readable` folder;
- never writable, and hidden even inside those folders: the project's outputs/, the benchmark and
  labels files, the train file, every cache root (with its signing key) and the evaluation cache
  (an empty read-only folder, or /dev/null for a file, is mounted over each);
- a private /tmp (writable, gone after the run), its own /proc (PID namespace) and a minimal /dev.
As root, `setpriv` drops every capability (and to user nobody when nobody can read the bound
folders; a module under a 0700 folder keeps root's uid, with no capability it cannot write a
read-only bind or read past the masks); as an ordinary user a user namespace maps it to nobody. The network is shared (a cache may call an API); IPC, UTS and PID
namespaces are not. Standard library only.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

NOBODY = 65534
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("/etc/ld.so.cache", "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates")


def bwrap_path() -> str | None:
    """bwrap's path on a Linux machine, else None."""
    return shutil.which("bwrap") if sys.platform.startswith("linux") else None


def _as_root() -> bool:
    return os.geteuid() == 0


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts
    return [str(Path(*parts[:i])) for i in range(2, len(parts))]


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def argv(readable: Iterable[str | Path], hidden: Iterable[str | Path], chdir: str | None) -> list[str]:
    """bwrap and its options, ending with `--` (the program follows). `readable` folders are bound
    read-only at their own paths; every `hidden` path inside one of them is masked."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise OSError("bwrap not found")
    opts = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
            "--new-session", "--ro-bind", "/usr", "/usr"]
    for link in _SYSTEM_LINKS:
        if os.path.islink(link):
            opts += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            opts += ["--ro-bind", link, link]
    opts += ["--perms", "0755", "--dir", "/etc"]
    for etc in _ETC:
        opts += ["--ro-bind-try", etc, etc]
    opts += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    folders = sorted({os.path.realpath(p) for p in readable if p and os.path.exists(p)}, key=lambda p: (p.count(os.sep), p))
    folders = [f for f in folders if not f.startswith("/usr/") and f not in ("/", "/usr")]
    folders = [f for f in folders if not any(g != f and _under(f, g) for g in folders)]  # inside another: there already
    made: set[str] = {"/etc", "/tmp", "/proc", "/dev", "/usr"}
    for folder in folders:
        for parent in _ancestors(folder):
            if parent not in made:
                opts += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        opts += ["--ro-bind", folder, folder]
    for path in sorted({os.path.realpath(p) for p in hidden if p}, key=lambda p: (p.count(os.sep), p)):
        if not any(_under(path, f) for f in folders) or not os.path.exists(path):
            continue  # outside every bound folder: not there at all
        if os.path.isdir(path):
            opts += ["--tmpfs", path, "--remount-ro", path]
        else:
            opts += ["--ro-bind", "/dev/null", path]
    opts += ["--remount-ro", "/", "--chdir", chdir if chdir and any(_under(chdir, f) for f in folders) else "/tmp"]
    if _as_root():
        # nobody when it can read every bound folder; else root's own uid with no capability at all
        # (no DAC override: it reads what root owns, writes nothing, since every bind is read-only)
        drop = ([f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if all(map(_world_readable, folders))
                else [])
        opts += ["--setenv", "HOME", "/tmp", "--", "setpriv", *drop, "--inh-caps=-all", "--bounding-set=-all",
                 "--no-new-privs", "--"]
    else:
        opts[1:1] = ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        opts += ["--setenv", "HOME", "/tmp", "--"]
    return opts


def _world_readable(folder: str) -> bool:
    """True when any user can reach `folder` (x on every ancestor) and list and read it (r-x)."""
    try:
        for parent in [*_ancestors(folder), folder]:
            mode = os.stat(parent).st_mode
            if not mode & 0o001 or (parent == folder and not mode & 0o004):
                return False
    except OSError:
        return False
    return True


def interpreter_folders() -> list[str]:
    """What the interpreter needs to run and import installed packages: the virtualenv, the base
    installation it points to, and the folders of sys.path outside both (site-packages elsewhere)."""
    out = {sys.prefix, os.path.realpath(sys.prefix), sys.base_prefix, os.path.realpath(sys.base_prefix),
           os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry) and os.path.isdir(entry):
            out.add(os.path.realpath(entry))
    return sorted(out)


@functools.lru_cache(maxsize=4)
def probe(python: str) -> str | None:
    """None when the jail starts the interpreter here, else why not (one phrase)."""
    if bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed"
    if _as_root() and shutil.which("setpriv") is None:
        return "running as root, the jail drops to user nobody with setpriv (util-linux), which is not installed"
    try:
        cmd = [*argv(interpreter_folders(), [], None), python, "-c", "pass"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start ({exc})"
    if out.returncode != 0:
        return "bwrap: " + " ".join((out.stderr or out.stdout).split())[:200]
    return None
