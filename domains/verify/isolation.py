"""Operating-system isolation of the code sandbox: bubblewrap namespaces that hold even when the
in-language guard (the Python audit hook, Node's permission model) has been switched off from inside.

The sandboxed program gets a root file system of its own, built by `bwrap`:
- /usr read-only, with /bin, /lib, /lib64 and /sbin as on the host (links into /usr or read-only
  binds), and /etc/ld.so.cache so the loader finds the libraries; nothing else of /etc;
- the interpreter's installation read-only at /opt/runtime/<name> when it lives outside /usr
  (a pyenv Python under /root, say): the program sees the interpreter, not the home around it;
- its work folder read-write at the same path, an empty /tmp it cannot write, a fresh /proc of
  its own PID namespace and a minimal /dev; the root itself read-only;
- not the project, not the corpora, not any home directory.
Namespaces: mount, PID (every descendant dies with the run), network (loopback only), IPC, UTS,
and cgroup where the kernel allows. As root, `setpriv` then drops to user `nobody` with no
capabilities, so RLIMIT_NPROC holds; as an ordinary user a user namespace maps the program to
nobody instead.

Fail closed: when bwrap is missing or cannot build this jail here, `jail()` raises
SandboxUnavailable (one line: what failed and how to fix it); code is never run with less
isolation than this module promises.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from pipeline.core.errors import BuildError

NOBODY = 65534
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_RUNTIME_ROOT = "/opt/runtime"


class SandboxUnavailable(BuildError):
    """The operating-system isolation cannot be set up on this machine; nothing was run."""


@dataclass(frozen=True)
class Jail:
    """How to start a program in the jail: `argv` (bwrap and its options, then the program as
    seen inside), the `layers` that hold, and `env` to add to the program's environment."""

    argv: list[str]
    layers: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


def _as_root() -> bool:
    return os.geteuid() == 0


@functools.lru_cache(maxsize=1)
def _bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None or not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            "the code sandbox needs bubblewrap (bwrap) for its mount, PID and network namespaces, and it is not "
            "installed. Install it (apt-get install bubblewrap; .ci/install does)")
    return path


@functools.lru_cache(maxsize=1)
def identity() -> str:
    """What the jail is made of, for the verdict cache key: bwrap's version and the user mode."""
    out = subprocess.run([_bwrap(), "--version"], capture_output=True, text=True, timeout=10)
    return f"{out.stdout.strip()}|{'root+setpriv' if _as_root() else 'userns'}"


def _program_mount(program: str) -> tuple[list[str], str, dict[str, str]]:
    """bwrap options that make `program` runnable inside, the path it has there, and the
    environment it needs. A program under /usr is already there; one elsewhere brings its
    installation (the folder holding bin/) read-only to /opt/runtime/<name>."""
    real = os.path.realpath(program)
    if real.startswith("/usr/"):
        return [], real, {}
    prefix = os.path.dirname(os.path.dirname(real))
    if program == sys.executable or real == os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable):
        base = os.path.realpath(sys.base_prefix)
        prefix = base if real.startswith(base + os.sep) else prefix
    inside = f"{_RUNTIME_ROOT}/{os.path.basename(real)}"
    # the interpreter's own libraries (libpython): its RUNPATH names the host path, gone inside
    env = {"LD_LIBRARY_PATH": f"{inside}/lib"}
    mkdirs = ["--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", _RUNTIME_ROOT]
    return [*mkdirs, "--ro-bind", prefix, inside], inside + real[len(prefix):], env


def _system_mounts() -> list[str]:
    opts = ["--ro-bind", "/usr", "/usr"]
    for path in _SYSTEM_LINKS:
        if os.path.islink(path):
            opts += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            opts += ["--ro-bind", path, path]
    # bwrap makes the parents of a mount point 0700: /etc must be 0755 for nobody to reach the cache
    return opts + ["--perms", "0755", "--dir", "/etc", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]


def _argv(workdir: str, program: str) -> tuple[list[str], str, dict[str, str], tuple[str, ...]]:
    mount, inside, env = _program_mount(program)
    opts = [_bwrap(), "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", *_system_mounts(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            *mount, "--bind", workdir, workdir, "--remount-ro", "/", "--chdir", workdir]
    layers = ["mountns", "private_tmp", "ro_system", "netns", "pidns", "ipcns"]
    if _as_root():
        # Root in no user namespace: the program drops to nobody, so RLIMIT_NPROC counts it.
        opts += ["--", "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--"]
        layers.append("uid_nobody")
    else:
        opts[1:1] = ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        opts.append("--")
        layers.append("userns")
    return opts, inside, env, tuple(layers)


@functools.lru_cache(maxsize=8)
def _probe(program: str) -> None:
    """Start the jail once per program and process (a few ms): a kernel without unprivileged user
    namespaces, a seccomp profile that forbids them or a missing setpriv shows here, as one error."""
    import tempfile

    _bwrap()
    if _as_root() and shutil.which("setpriv") is None:
        raise SandboxUnavailable("running as root, the code sandbox drops to user nobody with setpriv (util-linux), "
                                 "which is not installed. Install util-linux")
    with tempfile.TemporaryDirectory(prefix="cacheeval-sbx-probe-") as folder:
        if _as_root():
            os.chown(folder, NOBODY, NOBODY)
        opts, inside, env, _ = _argv(folder, program)
        cmd = [*opts, inside, "-c", "pass"] if "python" in os.path.basename(inside) else [*opts, inside, "--version"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                                 env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **env})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"the code sandbox could not start bwrap: {exc}. "
                                     "Check the bubblewrap install") from exc
    if out.returncode != 0:
        detail = " ".join((out.stderr or out.stdout).split())[:300]
        raise SandboxUnavailable(f"the code sandbox cannot isolate a run on this machine (bwrap: {detail}). Allow "
                                 "user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root")


def jail(workdir: str, program: str) -> Jail:
    """The command prefix that runs `program` (its host path) jailed, with `workdir` as its only
    writable folder; raises SandboxUnavailable when this machine cannot isolate it."""
    _probe(program)
    opts, inside, env, layers = _argv(workdir, program)
    return Jail([*opts, inside], layers, env)
