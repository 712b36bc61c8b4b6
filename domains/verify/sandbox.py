"""Run untrusted reference code and its tests in a separate, fenced process.

Layers (each recorded in `SandboxResult.isolation`, so a report shows what held):
- a separate process (`python -I -B` or `node`), in a fresh temporary folder used as cwd, with a
  minimal environment;
- resource limits set in the child before exec (`resource.setrlimit`): CPU seconds, address
  space, file size, open files, number of processes, no core files;
- operating-system isolation that does not depend on the code's good will (domains.verify.isolation,
  bubblewrap): a private mount namespace in which only /usr (read-only), the interpreter and the
  work folder exist, so the project, the corpora and every home directory are not there to read
  or write; an empty /tmp it cannot write; a network namespace with loopback only; a PID
  namespace whose death kills every descendant; and, as root, user `nobody` with no capabilities,
  so RLIMIT_NPROC is enforced (root ignores it);
- inside Python, an audit hook (installed before the code runs) that blocks sockets, process
  creation, ctypes and writes outside the folder; inside Node, the permission model (no child
  processes, writes only inside the folder). Code can switch these off (a frame walk reaches the
  hook's globals); the layers above still hold, and a test does exactly that;
- a wall-clock timeout that kills the whole process group, and output captured and truncated.

`run()` never raises for anything the code does: every escape attempt, crash or timeout comes back
as a `SandboxResult` with a status. It raises SandboxUnavailable, before running anything, when
the machine cannot provide the isolation (no bwrap, no namespaces): fail closed. Results are
memoised in-process by sha256 of (code, tests, language, SANDBOX_VERSION, limits), because the same
reference pair is checked by many candidates; across processes by that key, the interpreter's and
Node's versions and the jail's identity. A stored verdict carries sha256(its key, its value) and is
served only when that checksum holds and the value is a definite verdict (passed with exit 0, failed
with a nonzero exit): a verdict flipped, edited or moved under another key is a miss with one warning
line, the code runs again and the entry is overwritten.
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Mapping

from domains.verify import isolation
from domains.verify.isolation import NOBODY, SandboxUnavailable

SANDBOX_VERSION = "2"  # 2: bubblewrap jail (mount, PID, network namespaces), fail closed without it
LANGUAGES = ("python", "javascript")
BLOCK_MARK = "SANDBOX-BLOCKED"
__all__ = ["LANGUAGES", "Limits", "SandboxResult", "SandboxUnavailable", "cache_key", "clear_cache", "run"]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. Node reserves a large virtual address space at start, so it
    gets a larger RLIMIT_AS than Python."""

    cpu_seconds: int = 2
    wall_seconds: float = 5.0
    memory_bytes: int = 512 * 1024 * 1024
    node_memory_bytes: int = 4 * 1024 * 1024 * 1024
    file_bytes: int = 1024 * 1024
    max_processes: int = 32
    open_files: int = 64
    output_chars: int = 4000


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one run. status: passed (exit 0), failed (nonzero exit), timeout (wall
    clock), limit (a resource limit stopped it: CPU, memory, file size, processes), blocked (the
    guard stopped an escape), error (the sandbox itself could not start the run)."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    isolation: tuple[str, ...] = ()
    blocked: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def summary(self) -> dict:
        return {"status": self.status, "returncode": self.returncode, "seconds": round(self.seconds, 3),
                "blocked": list(self.blocked), "isolation": list(self.isolation),
                "stdout_tail": self.stdout[-300:], "stderr_tail": self.stderr[-300:]}


# The Python guard runs first in the child: it installs the audit hook, then runs main.py.
# Audit hooks cannot be removed once added, so the code under test runs entirely behind it.
_PY_GUARD = r'''
import os, sys
_ROOT = os.path.realpath(os.getcwd())
_MARK = "SANDBOX-BLOCKED"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
                "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree",
                "shutil.copyfile", "shutil.move"}
_DENY_PREFIXES = ("socket.", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec",
                  "os.system", "os.popen", "subprocess.", "ctypes.", "os.kill", "os.killpg",
                  "pty.", "os.setuid")
_stderr = sys.__stderr__

def _inside(path):
    try:
        p = os.path.realpath(os.fsdecode(path))
    except Exception:
        return False
    return p == _ROOT or p.startswith(_ROOT + os.sep)

def _deny(event, detail):
    _stderr.write(_MARK + " " + event + " " + detail[:200] + "\n")
    _stderr.flush()
    raise PermissionError(_MARK + ": " + event + " is not allowed in the sandbox")

def _hook(event, args):
    if event == "open":
        path, mode, flags = (list(args) + [None, None, None])[:3]
        if isinstance(path, int):
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and mode is None and flags & _WRITE_FLAGS)
        if writing and not _inside(path):
            _deny(event, repr(path))
        return
    if event in _PATH_EVENTS:
        paths = [a for a in args if isinstance(a, (str, bytes, os.PathLike))]
        if not paths or not all(_inside(p) for p in paths):
            _deny(event, repr(paths))
        return
    if event.startswith(_DENY_PREFIXES):
        _deny(event, repr(args)[:120])

sys.addaudithook(_hook)
sys.argv[:] = ["main.py"]
import runpy
runpy.run_path("main.py", run_name="__main__")
'''

# Node's permission model: reads anywhere (its own runtime), writes only in the folder, no child
# processes or workers (denied by default once the model is on).
_NODE_FLAGS = ("--experimental-permission", "--allow-fs-read=*", "--no-warnings")

_CACHE: dict[str, SandboxResult] = {}


def _preexec(limits: Limits, memory: int):
    def apply() -> None:
        # Runs in the child between fork and exec: only async-signal-safe-ish work here.
        os.setsid()  # its own process group, so the timeout kills every descendant
        for res, value in ((resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds)),
                           (resource.RLIMIT_AS, (memory, memory)),
                           (resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes)),
                           (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
                           (resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes)),
                           (resource.RLIMIT_CORE, (0, 0))):
            resource.setrlimit(res, value)
    return apply


def _command(language: str, workdir: str, guard: bool) -> tuple[list[str], tuple[str, ...], dict[str, str]]:
    """The jailed command for `language`, the layers that hold, and environment it needs."""
    layers = ["process", "tmp_cwd", "rlimits", "wall_timeout"]
    if language == "python":
        # The base interpreter: the sandbox needs the standard library only, never the venv.
        exe = getattr(sys, "_base_executable", None) or sys.executable
        args = ["-I", "-B", "guard.py" if guard else "main.py"]
        layers += ["audit_hook"] if guard else []
    elif language == "javascript":
        exe = shutil.which("node")
        if exe is None:
            raise FileNotFoundError("node")
        flags = [*_NODE_FLAGS, f"--allow-fs-write={workdir}"] if guard else []
        args = [*flags, "--max-old-space-size=256", "main.js"]
        layers += ["node_permissions"] if guard else []
    else:
        raise ValueError(f"unsupported language {language!r}; use one of {', '.join(LANGUAGES)}")
    jail = isolation.jail(workdir, exe)
    return [*jail.argv, *args], tuple(layers) + jail.layers, jail.env


def _truncate(data: bytes, limit: int) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + f"\n...[truncated {len(text) - limit} chars]"


def cache_key(code: str, tests: str, language: str, limits: Limits) -> str:
    blob = json.dumps([code, tests, language, SANDBOX_VERSION, limits.__dict__], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def run(code: str, tests: str, language: str, limits: Limits = Limits(), use_cache: bool = True,
        guard: bool = True) -> SandboxResult:
    """Run `code` followed by `tests` (one program; exit status 0 means the tests passed) in the
    sandbox and report what happened. Never raises for anything the code does; raises
    SandboxUnavailable when this machine cannot isolate the run (nothing is run then). `guard=False`
    leaves out the in-language guard (audit hook / Node permissions): only tests use it, to show
    that the operating-system layers hold on their own."""
    key = cache_key(code, tests, language, limits) + ("" if guard else ":noguard")
    if use_cache and key in _CACHE:
        return _CACHE[key]
    if use_cache and (stored := _persistent_get(key)) is not None:
        _CACHE[key] = stored
        return stored
    result = _run_uncached(code, tests, language, limits, guard)
    # Never cache a sandbox error: it says nothing about the code.
    if use_cache and result.status != "error":
        _CACHE[key] = result
    # Across processes only a definite verdict is kept: a timeout or limit may come from a loaded
    # machine, so it is always re-run for real.
    if use_cache and result.status in ("passed", "failed"):
        _persistent_put(key, result)
    return result


def _persistent_path() -> str:
    """sandbox.sqlite under the cache root (pipeline.core.settings), read at use time: the build
    makes its --cache-dir the root of the process while it runs (pipeline/orchestration/resources.py)."""
    from pipeline.core import settings

    return str(settings.sandbox_db())


def _persistent_key(key: str) -> str:
    # The interpreter, Node and the jail can change a verdict, so they are part of the key.
    return hashlib.sha256(f"{key}|{sys.version}|{_node_version()}|{isolation.identity()}".encode()).hexdigest()


_NODE: list[str] = []


def _node_version() -> str:
    if not _NODE:
        node = shutil.which("node")
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10) if node else None
            _NODE.append(f"{os.path.realpath(node)} {out.stdout.strip()}" if out else "")
        except (OSError, subprocess.SubprocessError):
            _NODE.append(node or "")
    return _NODE[0]


# One connection per process and file, opened (and checked) on first use; fail safe like every
# cache: a damaged file is moved aside with a warning and the code runs again.
_DB: dict[tuple[int, str], object] = {}
_DDL = ("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)",)
_PROBES = ("SELECT key, value, checksum FROM results LIMIT 0",)  # schema check: the columns read here exist


def _checksum(row_key: str, value: str) -> str:
    """sha256 over the entry's key (itself the digest of everything that produced the verdict) and
    its value: a verdict flipped in place, or another entry's value moved under this key, fails it."""
    return hashlib.sha256(f"{row_key}\0{value}".encode("utf-8")).hexdigest()


def _db():
    from pipeline.core.sqlite import CacheDB

    slot = (os.getpid(), _persistent_path())  # a forked child opens its own connection
    if slot not in _DB:
        _DB[slot] = CacheDB(slot[1], _DDL, what="sandbox verdict cache", probes=_PROBES, check_same_thread=False)
    return _DB[slot]


def _persistent_get(key: str) -> SandboxResult | None:
    row_key = _persistent_key(key)
    db = _db()
    row = db.run(lambda conn: conn.execute("SELECT value, checksum FROM results WHERE key = ?",
                                           (row_key,)).fetchone(), None)
    if row is None:
        return None
    result, problem = None, "fails its checksum"
    if row[1] == _checksum(row_key, row[0]):
        result, problem = _verdict(row[0]), "is not a definite verdict"
    if result is None:  # fail closed: run for real, and the fresh verdict overwrites this one
        from pipeline.core.errors import warn

        warn(f"{db.path}: sandbox verdict {row_key[:12]} {problem}; running the code again")
    return result


def _verdict(value: str) -> SandboxResult | None:
    """The stored verdict, or None unless it is passed with exit 0 or failed with a nonzero exit."""
    try:
        d = json.loads(value)
        result = SandboxResult(d["status"], d["returncode"], d["stdout"], d["stderr"], d["seconds"],
                               tuple(d["isolation"]), tuple(d["blocked"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    definite = (result.status, result.returncode == 0) in (("passed", True), ("failed", False))
    return result if definite and isinstance(result.returncode, int) else None


def _persistent_put(key: str, result: SandboxResult) -> None:
    value = json.dumps({"status": result.status, "returncode": result.returncode, "stdout": result.stdout,
                        "stderr": result.stderr, "seconds": result.seconds, "isolation": list(result.isolation),
                        "blocked": list(result.blocked)}, sort_keys=True)

    row_key = _persistent_key(key)

    def write(db) -> None:
        db.execute("INSERT OR REPLACE INTO results (key, value, checksum) VALUES (?, ?, ?)",
                   (row_key, value, _checksum(row_key, value)))
        db.commit()
    _db().run(write, None)  # a cache that cannot be written only costs time


def _run_uncached(code: str, tests: str, language: str, limits: Limits, guard: bool) -> SandboxResult:
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="cacheeval-sbx-")
    try:
        try:
            cmd, layers, jail_env = _command(language, workdir, guard)
        except (FileNotFoundError, ValueError) as exc:
            return SandboxResult("error", None, "", f"cannot run {language}: {exc}", 0.0)
        main = "main.py" if language == "python" else "main.js"
        with open(os.path.join(workdir, main), "w", encoding="utf-8") as fh:
            fh.write(code.rstrip() + "\n\n" + tests.rstrip() + "\n")
        if language == "python":
            with open(os.path.join(workdir, "guard.py"), "w", encoding="utf-8") as fh:
                fh.write(_PY_GUARD)
        if "uid_nobody" in layers:
            for name in os.listdir(workdir) + [""]:
                os.chown(os.path.join(workdir, name), NOBODY, NOBODY)
        memory = limits.node_memory_bytes if language == "javascript" else limits.memory_bytes
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "HOME": workdir, "TMPDIR": workdir,
               **jail_env}
        return _execute(cmd, layers, workdir, env, limits, memory, started)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _execute(cmd: list[str], layers: tuple[str, ...], workdir: str, env: Mapping[str, str],
             limits: Limits, memory: int, started: float) -> SandboxResult:
    try:
        proc = subprocess.Popen(cmd, cwd=workdir, env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_preexec(limits, memory), close_fds=True)
    except OSError as exc:
        return SandboxResult("error", None, "", f"cannot start sandbox: {exc}", time.monotonic() - started, layers)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    finally:
        _kill_group(proc.pid)  # stray descendants of a finished run die with it
    stdout, stderr = _truncate(out, limits.output_chars), _truncate(err, limits.output_chars)
    blocked = tuple(sorted({line.split()[1] for line in err.decode("utf-8", "replace").splitlines()
                            if line.startswith(BLOCK_MARK) and len(line.split()) > 1}))
    if not blocked and "ERR_ACCESS_DENIED" in stderr:
        blocked = ("node_permission",)
    rc = proc.returncode
    # A line of the jail's own on stderr means the program died of a signal (a CPU or memory limit).
    wrapper_noise = any(line.startswith(("bwrap: ", "setpriv: ")) for line in stderr.splitlines())
    if timed_out:
        status = "timeout"
    elif blocked:
        status = "blocked"
    elif rc == 0:
        status = "passed"
    elif wrapper_noise or (rc is not None and (rc < 0 or rc >= 128 + 1)) or _limit_error(stderr):
        # A signal (negative, or 128 + signal behind a wrapper) or a limit error raised inside.
        status = "limit"
    else:
        status = "failed"
    return SandboxResult(status, rc, stdout, stderr, time.monotonic() - started, layers, blocked)


_LIMIT_ERRORS = ("MemoryError", "BlockingIOError: [Errno 11]", "File size limit exceeded",
                 "JavaScript heap out of memory")


def _limit_error(stderr: str) -> bool:
    tail = stderr[-1500:]
    return any(marker in tail for marker in _LIMIT_ERRORS)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def clear_cache() -> None:
    """Forget memoised results and close the verdict file, as a new process would start (tests use
    it to force a fresh run)."""
    _CACHE.clear()
    for db in _DB.values():
        db.close()
    _DB.clear()
