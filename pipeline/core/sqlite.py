"""Opening the project's SQLite caches (LLM responses, embeddings, sandbox verdicts): WAL mode, a
busy timeout, the tables created in one immediate transaction, all retried while the file is locked.

SQLite answers "database is locked" at once, without calling the busy handler, when two processes
switch a new file to WAL at the same moment, so the busy timeout alone does not cover set-up.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Sequence


def retry_locked(open_fn: Callable[[], Any], wait_s: float = 30.0) -> Any:
    """Call `open_fn` until it stops failing with "locked"/"busy" or `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    delay = 0.01
    while True:
        try:
            return open_fn()
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if ("locked" not in message and "busy" not in message) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def open_wal(path: str | Path, ddl: Sequence[str] = (), *, pragmas: Sequence[str] = (), wait_s: float = 30.0,
             **connect: Any) -> sqlite3.Connection:
    """A connection to `path` in WAL mode with `pragmas` set and the `ddl` statements run (in one
    BEGIN IMMEDIATE transaction), retried while the file is locked. `connect` goes to sqlite3.connect."""
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
