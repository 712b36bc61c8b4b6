"""Running a user's cache apart from the scorer: the parent's side of pipeline.harness.worker.

`Worker(module, class)` starts `python -m pipeline.harness.worker` in the bubblewrap jail
(pipeline.harness.jail) where bwrap works, else as a plain child process (`isolation` says which:
"bubblewrap" or "process"), loads the cache there, and `decide(pairs, protocol)` streams Pairs in and
verdicts out: the pairs are read from the benchmark as the worker takes them (at most OUT_WINDOW
bytes ahead of its decisions), so neither process holds every request. The parent alone holds the
rows, reads the labels, computes the metrics and writes the reports, so nothing the cache does
(monkeypatching the harness, printing, writing files) can reach them. What the worker sends back
is checked again here: it is data, never trusted code.

Every decision has `timeout` seconds (storing every A of the shared protocol gets `timeout` per
entry). A worker that hangs past it, exits, or sends something that is not the protocol is killed;
that pair is scored MISS in the error tier and a new worker goes on with the next one. After
MAX_FAILURES failures in a row the remaining pairs are scored in the error tier without asking.
Standard library only.
"""
from __future__ import annotations

import json
import math
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from pipeline.core.errors import CacheEvalError, InputError, warn
from pipeline.harness.evaluation import Decisions, PairStream
from pipeline.harness.interface import Pair

DEFAULT_TIMEOUT = 30.0
LOAD_TIMEOUT = 120.0          # importing a cache (and its libraries) before the first decision
MAX_FAILURES = 3
EXIT_WAIT = 2.0               # seconds to wait for the exit code of a worker whose output closed
OUT_WINDOW = 1 << 20          # bytes of pairs queued for the worker ahead of its decisions, at most
BUBBLEWRAP, PROCESS, IN_PROCESS = "bubblewrap", "process", "in-process"
_SERVED = (None, "own", "other", "none")


class WorkerFailed(Exception):
    """The worker hung past its time, exited, or broke the protocol."""


class CacheRaised(Exception):
    """A cache in a worker raised (with --on-error raise): named after the worker's exception."""


def _raised(text: str, row_id: str) -> Exception:
    name, _, message = text.partition(": ")
    cls = type(name if name.isidentifier() else "CacheRaised", (CacheRaised,), {})
    exc = cls(message)
    exc.cacheeval_row_id = row_id  # type: ignore[attr-defined]  # for the CLI's one line
    return exc


class Worker:
    """A user's cache (module and optional class, as for load_cache) in a worker process."""

    def __init__(self, module: str, class_name: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 hidden: Iterable[str | Path] = (), readable: Iterable[str | Path] = (), sandbox: bool = True,
                 python: str = sys.executable) -> None:
        from pipeline.core.paths import PROJECT_ROOT
        from pipeline.harness import jail

        self.module, self.class_name, self.timeout, self.python = module, class_name, float(timeout), python
        self.project = PROJECT_ROOT
        self.folder = self._folder(module)
        self.readable = [str(p) for p in readable]
        self.hidden = [str(p) for p in hidden]
        why = jail.probe(python) if sandbox else "not asked for"
        self.isolation = BUBBLEWRAP if why is None else PROCESS
        if sandbox and why is not None:
            warn(f"the cache runs in a plain worker process, not in bubblewrap ({why}): it cannot read the labels, "
                 "but it can read and write what your user can")
        self.proc: subprocess.Popen | None = None
        self._buf, self._lines, self._out, self._feed = b"", deque(), bytearray(), None
        self.hello: dict | None = None

    @staticmethod
    def _folder(module: str) -> str:
        """The folder the module is imported from: a .py file's own; for a dotted module, the import
        path entry holding its top-level package (found without importing anything), else the
        current directory."""
        import importlib.machinery

        if module.endswith(".py") or os.sep in module:
            return str(Path(module).resolve().parent)
        top = module.partition(".")[0]
        try:
            spec = importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path])
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or not os.path.isfile(spec.origin):
            return os.getcwd()
        origin = Path(spec.origin).resolve()
        return str(origin.parent.parent if spec.submodule_search_locations is not None else origin.parent)

    # ---- the process

    def _command(self) -> list[str]:
        cmd = [self.python, "-B", "-m", "pipeline.harness.worker"]
        if self.isolation != BUBBLEWRAP:
            return cmd
        from pipeline.harness import jail

        readable = [*jail.interpreter_folders(), str(self.project / "pipeline"), self.folder, *self.readable]
        hidden = [self.project / "outputs", *self.hidden]
        return [*jail.argv(readable, hidden, os.getcwd() if self.folder == os.getcwd() else self.folder), *cmd]

    def _env(self) -> dict[str, str]:
        from pipeline.core.settings import untrusted_environment

        env = untrusted_environment({"PYTHONPATH": os.pathsep.join([str(self.project), self.folder]),
                                     "PYTHONDONTWRITEBYTECODE": "1"})
        if self.isolation == BUBBLEWRAP:
            env["HOME"] = "/tmp"
        return env

    def _start(self) -> dict:
        self.proc = subprocess.Popen(self._command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self._env(),
                                     cwd=os.getcwd(), start_new_session=True)
        # the pipes are driven by _receive alone: what is queued for the worker is written as it reads
        os.set_blocking(self.proc.stdin.fileno(), False)
        self._buf, self._lines, self._out, self._feed = b"", deque(), bytearray(), None
        self._send({"load": {"module": self.module, "class": self.class_name}})
        msg = self._receive(max(LOAD_TIMEOUT, self.timeout), "loading the cache")
        if "error" in msg:
            self.close()
            raise InputError(str(msg["error"]))
        hello = msg.get("hello")
        if not isinstance(hello, dict) or not isinstance(hello.get("name"), str):
            raise WorkerFailed("the worker answered the load with something else")
        return hello

    def start(self) -> dict:
        """Load the cache in a worker: {"name", "store_lookup", "implementation"}; InputError when it cannot."""
        if self.hello is None:
            try:
                self.hello = self._start()
            except WorkerFailed as exc:
                self.close()
                raise CacheEvalError(f"--cache-module {self.module}: the worker process failed while loading it "
                                     f"({exc}). Run with --in-process to see the traceback") from None
        return self.hello

    def close(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            self.proc.wait()
            self.proc = None

    def _send(self, obj: Any) -> None:
        """Queue one message for the worker (written by _receive, as the worker reads)."""
        self._out += _line(obj)

    def _top_up(self) -> None:
        """Queue lines of the current feed (the pairs of a run) while less than OUT_WINDOW bytes wait:
        the worker reads them as it decides, and the scorer never holds more than that window."""
        while self._feed is not None and len(self._out) < OUT_WINDOW:
            line = next(self._feed, None)
            if line is None:
                self._feed = None
            else:
                self._out += line

    def _write(self, fd: int) -> None:
        try:
            written = os.write(fd, bytes(self._out[:1 << 16]))
        except BlockingIOError:
            return
        except OSError:
            # the worker stopped reading (it exited, most likely): what it sends, or its exit, says why
            self._out.clear()
            self._feed = None
            return
        del self._out[:written]

    def _receive(self, seconds: float, what: str) -> dict:
        """The worker's next message, writing what is queued for it meanwhile; WorkerFailed when none
        comes within `seconds`, the worker exits, or it sends something that is not the protocol."""
        if not self._lines:
            self._pump(seconds, what)
        line = self._lines.popleft()
        try:
            msg = json.loads(line)
        except ValueError:
            raise WorkerFailed(f"the worker sent something that is not the protocol {what}") from None
        if not isinstance(msg, dict):
            raise WorkerFailed(f"the worker sent something that is not the protocol {what}")
        return msg

    def _pump(self, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        into, out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            writing = False
            while not self._lines:
                self._top_up()
                if bool(self._out) != writing:
                    writing = not writing
                    if writing:
                        sel.register(into, selectors.EVENT_WRITE)
                    else:
                        sel.unregister(into)
                left = deadline - time.monotonic()
                events = sel.select(left) if left > 0 else []
                if not events:
                    raise WorkerFailed(f"timed out after {seconds:g} s {what}")
                for key, _ in events:
                    if key.fd == into:
                        self._write(into)
                        continue
                    chunk = os.read(out, 1 << 16)
                    if not chunk:
                        try:   # its output closed: it is exiting, so its code comes within moments
                            code = self.proc.wait(EXIT_WAIT)
                        except subprocess.TimeoutExpired:
                            code = None
                        raise WorkerFailed(f"the worker exited{'' if code is None else f' (code {code})'} {what}")
                    if b"\n" in chunk:
                        *lines, self._buf = (self._buf + chunk).split(b"\n")
                        self._lines.extend(lines)
                    else:
                        self._buf += chunk

    # ---- the evaluation-result cache's view

    def implementation(self) -> dict:
        """The identity the evaluation-result cache keys on: the worker's account of the cache (its
        declared model snapshot and settings, the modules it loaded), and this process's own reading
        of the code of the module's import closure (files hashed here, which the worker cannot fake)."""
        from pipeline.harness.closure import code_identity

        hello = self.start()
        reported = hello.get("implementation")
        root = Path(self.module).stem if self.module.endswith(".py") else self.module
        added = self.folder not in sys.path
        if added:
            sys.path.insert(0, self.folder)
        try:
            here = code_identity([root])
        finally:
            if added:
                sys.path.remove(self.folder)
        unknown = list(reported.get("unknown", [])) if isinstance(reported, dict) else [
            f"the identity of {self.module} (the worker could not read it)"]
        if root in here["absent"] or root in here["unknown"]:
            unknown.append(f"the code of {self.module}")
        from pipeline.core.hashing import file_sha256

        own = file_sha256(self.module) if self.module.endswith(".py") and Path(self.module).is_file() else None
        return {"worker": reported, "code_read_here": here, "module_file_sha256": own, "unknown": unknown}

    # ---- deciding

    def decide(self, pairs: Sequence[Pair] | PairStream, protocol: str, *, on_error: str = "miss",
               ids: Sequence[str] | None = None) -> Decisions:
        """The verdicts of the cache on `pairs` (a list, or a PairStream read as the worker decides:
        see the module docstring). on_error="raise" raises the cache's first exception, named after
        it, with the row id from `ids`."""
        from pipeline.harness.stateful import StoreFailed

        pairs = PairStream.of(pairs)
        n = len(pairs)
        d = Decisions.empty(n)
        d.served = [None] * n if protocol != "pair" else None
        meta = {"name": protocol, "stored": 0, "store_seconds": 0.0}
        i, failures = 0, 0
        while i < n:
            try:
                if self.proc is None:
                    self.hello = self._start()
                self._send({"run": {"protocol": protocol, "start": i, "n": n}})
                self._feed = _feed(pairs, protocol, i)
                if protocol != "pair":
                    msg = self._receive(self.timeout * max(1, n if protocol == "shared" else 1), "storing every A")
                    if "store_failed" in msg:
                        self.close()
                        failed = StoreFailed(str(msg["store_failed"])[:500])
                        position = msg.get("position")
                        failed.position = position if isinstance(position, int) and not isinstance(position, bool) else None
                        raise failed
                while i < n:
                    msg = self._receive(self.timeout, f"deciding pair {i + 1}")
                    if msg.get("i") != i:
                        raise WorkerFailed(f"the worker answered out of order at pair {i + 1}")
                    self._take(d, i, msg)
                    if d.served is not None and i not in d.errors:
                        d.served[i] = msg.get("s")
                    if on_error == "raise" and i in d.errors:
                        raise _raised(d.errors[i], ids[i] if ids else str(i))
                    failures = 0
                    i += 1
                done = self._receive(self.timeout, "finishing")
                if isinstance(done.get("done"), dict):
                    meta = _meta(done["done"], protocol, meta)
            except WorkerFailed as exc:
                self.close()
                if on_error == "raise":
                    raise _raised(f"WorkerFailed: {exc}", ids[i] if ids else str(i)) from None
                d.fail(i, f"WorkerFailed: {exc}", self.timeout * 1000.0 if "timed out" in str(exc) else 0.0)
                i += 1
                failures += 1
                if failures >= MAX_FAILURES:
                    for j in range(i, n):
                        d.fail(j, f"WorkerFailed: not asked: the worker failed {failures} times in a row")
                    break
            finally:
                self._close_feed()
        d.protocol = meta if protocol != "pair" else None
        return d

    def _close_feed(self) -> None:
        feed, self._feed = self._feed, None
        if feed is not None:
            feed.close()   # a pass over the benchmark file: closed now, not when collected

    def _take(self, d: Decisions, i: int, msg: dict) -> None:
        """Position i from the worker's message, checked as data: anything malformed is an error."""
        try:
            hit, conf, ms, tier, cost, own = msg["d"]
            err, served = msg.get("e"), msg.get("s")
            ok = (isinstance(hit, bool) and (conf is None or _finite(conf)) and _finite(ms) and ms >= 0
                  and (tier is None or isinstance(tier, str)) and _finite(cost) and cost >= 0
                  and isinstance(own, bool) and (err is None or isinstance(err, str)) and served in _SERVED)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            d.fail(i, "VerdictError: the worker sent a malformed verdict")
            return
        if err is not None:
            d.fail(i, err[:300], float(ms))
            return
        d.hits[i], d.confs[i], d.lats[i], d.tiers[i], d.costs[i], d.own[i] = (
            hit, None if conf is None else float(conf), float(ms), tier, float(cost), own)


def _line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"


def _feed(pairs: PairStream, protocol: str, start: int) -> Iterator[bytes]:
    """The lines a run sends after its header: under the shared protocol every pair's A first (one
    pass over the benchmark), then each pair from `start` (another pass)."""
    if protocol == "shared":
        for p in pairs.from_(0):
            a = p.a
            line: dict[str, Any] = {"a": [a.query, a.system_prompt, a.context, a.tools]}
            if a.scope():
                line["x"] = a.scope()
            if p.status_a is not None:
                line["s"] = p.status_a
            yield _line(line)
    for p in pairs.from_(start):
        yield _line({"p": p.to_dict()})


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _meta(done: dict, protocol: str, default: dict) -> dict:
    stored, seconds = done.get("stored"), done.get("store_seconds")
    if isinstance(stored, int) and not isinstance(stored, bool) and _finite(seconds):
        return {"name": protocol, "stored": stored, "store_seconds": float(seconds)}
    return default
