"""Opening the project's SQLite caches (LLM responses, embeddings, sandbox verdicts): WAL mode, a
busy timeout, the tables created in one immediate transaction, all retried while the file is locked;
and failing safe, one way, when a cache file is damaged.

SQLite answers "database is locked" at once, without calling the busy handler, when two processes
switch a new file to WAL at the same moment, so the busy timeout alone does not cover set-up.

Fail safe: a cache only saves time, so a damaged file must never stop the work or serve a wrong
answer. `open_cache` checks a file before use (a directory or other non-file in its place, an
unreadable file, a header that is not SQLite's, a file shorter than its header says, a schema the
probes cannot read); a damaged file is moved aside as `<name>.corrupt-<n>` (with its -wal/-shm) with
one warning, and a fresh cache takes its place. `CacheDB.run` does the same for damage that shows
only on a later read. A lock is never taken for damage: it is waited for, and if it outlasts the
wait the step goes on without the cache. The checks are cheap on purpose: `PRAGMA quick_check`
reads every page (about 20 ms for a 37 MB embedding cache with the pages in memory, growing with
the file), so it only confirms a header that says the file is truncated.

One process, many connections: closing any descriptor of a file drops every POSIX lock the process
holds on that file, SQLite's included (SQLite's "How To Corrupt An SQLite Database File", 2.2). The
header check reads the file with its own descriptor, so it skips a file this process already has open
(`held`: any of its descriptors is on the file; SQLite's own probes still run). Reading it anyway, as it
did, let a second cache opened on a file drop the first one's locks: another process closing its
connection then found itself alone, checkpointed and deleted the WAL under the open connections
(tests/core/test_cache_integrity.py reproduces it), the way SQLite files get corrupted; a CI run had
left an embeddings.sqlite whose first page was an index page.
"""
from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from pipeline.core.errors import warn

T = TypeVar("T")
COMPANIONS = ("", "-wal", "-shm")  # the database file and the files SQLite keeps beside it in WAL mode


def _file_id(path: str | Path) -> tuple[int, int] | None:
    """The file at `path` (device, inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def held(path: str | Path) -> bool:
    """Whether this process has the file at `path` open: one of its descriptors is on it (an open
    SQLite connection keeps its descriptors). Then nothing may open and close the file outside SQLite
    (see the module docstring). Where the descriptors cannot be listed, every file counts as held."""
    key = _file_id(path)
    if key is None:
        return False
    try:
        fds = os.listdir("/dev/fd")
    except OSError:
        return True
    for fd in fds:
        try:
            st = os.fstat(int(fd))
        except (OSError, ValueError):
            continue  # the listing's own descriptor, closed by now
        if (st.st_dev, st.st_ino) == key:
            return True
    return False


def retry_locked(open_fn: Callable[[], Any], wait_s: float = 30.0) -> Any:
    """Call `open_fn` until it stops failing with "locked"/"busy" or `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    delay = 0.01
    while True:
        try:
            return open_fn()
        except sqlite3.OperationalError as exc:
            if not is_locked(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def open_wal(path: str | Path, ddl: Sequence[str] = (), *, pragmas: Sequence[str] = (), wait_s: float = 30.0,
             **connect: Any) -> sqlite3.Connection:
    """A connection to `path` in WAL mode with `pragmas` set and the `ddl` statements run (in one
    BEGIN IMMEDIATE transaction), retried while the file is locked. `connect` goes to sqlite3.connect.
    No damage checks: `open_cache` adds them."""
    def once() -> sqlite3.Connection:
        conn = sqlite3.connect(str(path), timeout=wait_s, **connect)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":  # persistent: set once per file
                conn.execute("PRAGMA journal_mode = WAL")
            for pragma in pragmas:
                conn.execute(f"PRAGMA {pragma}")
            if ddl:
                conn.execute("BEGIN IMMEDIATE")
                for stmt in ddl:
                    conn.execute(stmt)
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        return conn
    return retry_locked(once, wait_s)


def is_locked(exc: BaseException) -> bool:
    """Another connection holds the file: wait, never treat it as damage."""
    message = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in message or "busy" in message)


def is_corruption(exc: BaseException) -> bool:
    """A damaged file (as opposed to a busy, unwritable or missing one)."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in text or "not a database" in text


def file_problem(path: str | Path) -> str | None:
    """What is wrong with the file, found without SQLite: not a regular file, unreadable, not an
    SQLite header, or shorter than its header says ("is truncated"). None for a sound header, a
    missing file or an empty one (SQLite makes an empty file a new database), and for a file this
    process has open (`held`): reading it here would drop the locks of its connections (the module
    docstring)."""
    path = Path(path)
    if held(path):
        return None
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            return "is a directory"
        if not stat.S_ISREG(st.st_mode):
            return "is not a regular file"
        with path.open("rb") as fh:
            header = fh.read(100)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if st.st_size == 0:
        return None
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return "is not an SQLite database"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counter_valid = header[24:28] == header[92:96]  # else the header's page count is stale by design
    if counter_valid and pages and st.st_size < pages * page_size:
        return "is truncated"
    return None


def set_aside(path: str | Path, problem: str, what: str = "cache", expect_inode: tuple[int, int] | None = None) -> Path | None:
    """Move a damaged `path` (file or folder) and its -wal/-shm to `<name>.corrupt-<n>` with one
    warning. With `expect_inode`, a file that another process has already replaced is left alone
    (None is returned): it is that process's fresh cache, not the damaged one."""
    path = Path(path)
    if expect_inode is not None and _file_id(path) not in (expect_inode, None):
        return None
    n = 1
    while any(Path(f"{path}.corrupt-{n}{s}").exists() for s in COMPANIONS):
        n += 1
    aside = path.with_name(f"{path.name}.corrupt-{n}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return None  # another process moved it first
    for suffix in COMPANIONS[1:]:
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        except FileNotFoundError:
            pass  # no such companion
    warn(f"{path}: {what} file {problem}; moved it to {aside.name} and started an empty cache (the work runs again)")
    return aside


def _memory(ddl: Sequence[str], **connect: Any) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", **connect)
    for stmt in ddl:
        conn.execute(stmt)
    return conn


def _open_checked(path: Path, ddl: Sequence[str], probes: Sequence[str], confirm: bool,
                  **kw: Any) -> tuple[sqlite3.Connection | None, str | None]:
    """(connection, None) when the file passes, else (None, what is wrong with it). Errors that are
    not the file's fault (a lock that outlasts the wait, a read-only folder, a full disk) are raised."""
    conn = None
    try:
        conn = open_wal(path, ddl, **kw)
        for probe in probes:
            conn.execute(probe).fetchall()
        if confirm:  # the header may be mid-checkpoint in another process: let SQLite look at every page
            if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                conn.close()
                return None, "is truncated"
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        first = str(exc).splitlines()[0]
        if is_corruption(exc):
            return None, f"is corrupt ({first})"
        # a plain SQL error from our own DDL or probes: the file holds tables of another shape
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_ERROR" and not is_locked(exc):
            return None, f"has an unexpected schema ({first})"
        raise
    return conn, None


def open_cache(path: str | Path, ddl: Sequence[str] = (), *, what: str = "cache", probes: Sequence[str] = (),
               **kw: Any) -> tuple[sqlite3.Connection, bool]:
    """(connection, on_disk): `path` opened by `open_wal` after the checks in the module docstring;
    a damaged file is set aside and a fresh one made. `probes` are the schema check: queries that
    must compile on a sound file and read no rows (`SELECT <columns read> FROM <table> LIMIT 0`).
    If no file can be used at all (a folder that cannot be written, a lock that outlasts the wait)
    the cache lives in memory for this connection (on_disk False), with one warning: the work goes
    on, only slower. `path` ":memory:" is a private in-memory cache by choice (on_disk False, no warning)."""
    connect = {k: v for k, v in kw.items() if k not in ("pragmas", "wait_s")}
    if str(path) == ":memory:":  # asked for by name: nothing on disk to check or set aside
        return _memory(ddl, **connect), False
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        inode = _file_id(path)
        problem = file_problem(path)
        if problem in (None, "is truncated"):
            conn, problem = _open_checked(path, ddl, probes, problem == "is truncated", **kw)
            if conn is not None:
                return conn, True
        set_aside(path, problem, what, expect_inode=inode)
        return open_wal(path, ddl, **kw), True
    except (sqlite3.Error, OSError) as exc:
        warn(f"{path}: cannot use the {what} ({str(exc).splitlines()[0]}); running without it (the work runs again)")
        return _memory(ddl, **connect), False


class CacheDB:
    """One cache connection that never stops the work: opened by `open_cache`, and every use goes
    through `run`, which turns a storage error into `fallback` (a miss, a skipped write). Damage
    found on a read sets the file aside and continues with a fresh one; any other error is warned
    about once per connection. Safe to share between threads."""

    def __init__(self, path: str | Path, ddl: Sequence[str] = (), *, what: str = "cache",
                 probes: Sequence[str] = (), **kw: Any) -> None:
        self.path = Path(path)
        self.what = what
        self._open_args = (tuple(ddl), tuple(probes), kw)
        self._lock = threading.Lock()
        self._warned = False
        self.conn, self.on_disk = open_cache(self.path, ddl, what=what, probes=probes, **kw)
        self._inode = _file_id(self.path) if self.on_disk else None

    def run(self, fn: Callable[[sqlite3.Connection], T], fallback: T) -> T:
        """`fn(connection)`, or `fallback` when the storage fails."""
        with self._lock:
            try:
                return fn(self.conn)
            except sqlite3.DatabaseError as exc:
                if self.conn.in_transaction:
                    try:
                        self.conn.rollback()
                    except sqlite3.Error:
                        pass  # the connection is replaced or reported below anyway
                first = str(exc).splitlines()[0]
                if is_corruption(exc) and self.on_disk:
                    self.conn.close()
                    set_aside(self.path, f"is corrupt ({first})", self.what, expect_inode=self._inode)
                    ddl, probes, kw = self._open_args
                    self.conn, self.on_disk = open_cache(self.path, ddl, what=self.what, probes=probes, **kw)
                    self._inode = _file_id(self.path) if self.on_disk else None
                elif not self._warned:
                    self._warned = True
                    warn(f"{self.path}: {self.what} error ({first}); treated as a miss "
                         f"(later errors of this cache are not shown)")
                return fallback

    def close(self) -> None:
        with self._lock:
            self.conn.close()
