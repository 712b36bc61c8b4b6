"""The cache in one SQLite file (WAL), safe with several processes reading and writing at once.

It opens through `pipeline.core.sqlite.CacheDB`, like every SQLite cache of the project: a damaged
file (a folder in its place, random bytes, a truncated file, tables of another shape) is moved aside
with one warning and an empty cache started in its place; the requests run again, the build never
crashes over its cache. The path `MEMORY` keeps the cache in this process's memory (the replay
store of the embedded build: nothing on disk to leave behind).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from pipeline.core.sqlite import CacheDB
from pipeline.services.llm.stats import PriceFn
from pipeline.services.llm.stores.base import COLUMNS, CacheStore, Clock, ddl

MEMORY = ":memory:"


class SQLiteStore(CacheStore):
    """The cache in one SQLite file (WAL): several processes may read and write it at once."""

    _bytes_expr = "LENGTH(CAST(request AS BLOB)) + LENGTH(CAST(response AS BLOB)) + LENGTH(CAST(usage AS BLOB))"

    def __init__(self, path: str | Path, table: str = "llm_cache", clock: Clock = time.time) -> None:
        super().__init__(table, clock)
        self.path = Path(path)
        self.where = "LLM cache (in memory)" if str(path) == MEMORY else str(self.path)
        self._db = CacheDB(
            self.path, ddl(table), what="LLM cache",
            # the schema check: every column this store reads, in both tables
            probes=(f"SELECT {COLUMNS} FROM {table} LIMIT 0", f"SELECT day, hits, misses FROM {table}_daily LIMIT 0"),
            isolation_level=None, check_same_thread=False,
            pragmas=("synchronous = NORMAL",              # WAL + NORMAL: durable across app crashes, fast commits
                     "journal_size_limit = 67108864"))    # shrink the WAL to 64 MiB after a checkpoint

    @property
    def _conn(self) -> sqlite3.Connection:  # the current connection (CacheDB replaces it after damage)
        return self._db.conn

    def close(self) -> None:
        """Write buffered counters, then close the file."""
        self.flush()
        self._db.close()

    def _guard(self, fallback, fn):
        return self._db.run(lambda _conn: fn(), fallback)

    def _query(self, sql: str, args: tuple) -> list[tuple]:
        return self._conn.execute(sql, args).fetchall()

    def _execute(self, sql: str, args: tuple) -> int:
        return self._conn.execute(sql, args).rowcount

    def _batches(self, batches: list[tuple[str, list[tuple]]]) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        for sql, rows in batches:
            if rows:
                self._conn.executemany(sql, rows)
        self._conn.execute("COMMIT")

    def file_bytes(self) -> int:
        """Bytes on disk: the database file plus its WAL (0 in memory)."""
        if str(self.path) == MEMORY:
            return 0
        return sum(Path(f"{self.path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{self.path}{s}").exists())

    def stats(self, price: PriceFn | None = None) -> dict:
        """The store's stats (see CacheStore.stats), plus the bytes the file and its WAL take on disk."""
        out = super().stats(price)
        out["file_bytes"] = self.file_bytes()
        return out
