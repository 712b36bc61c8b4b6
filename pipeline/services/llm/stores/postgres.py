"""The cache in a PostgreSQL table (psycopg 3, imported only when a PostgreSQL store is opened), for
several machines sharing one cache. Unreachable or failing servers are warnings and misses."""
from __future__ import annotations

import re
import time
from typing import Any, Callable

from pipeline.core.errors import warn
from pipeline.services.llm.stores.base import CacheStore, Clock, ddl


class PostgresStore(CacheStore):
    """The cache in a PostgreSQL table (psycopg 3), for several machines sharing one cache."""

    _bytes_expr = "OCTET_LENGTH(request) + OCTET_LENGTH(response) + OCTET_LENGTH(usage)"

    def __init__(self, url: str, table: str = "llm_cache", clock: Clock = time.time) -> None:
        super().__init__(table, clock)
        self.url = url
        self.where = "postgresql " + re.sub(r"//[^@/]*@", "//", url)  # never print a password
        self._conn = None
        self._guard(None, lambda: None)  # connect and create the table now, warning if unreachable

    def _connect(self) -> None:
        import psycopg

        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        # A cache row lost in a server crash is only a later miss: do not wait for the WAL fsync.
        conn.execute("SET synchronous_commit TO off")
        with conn.transaction():
            # concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog; serialise it
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
            for stmt in ddl(self.table):
                conn.execute(stmt)
        self._conn = conn

    def _guard(self, fallback: Any, fn: Callable[[], Any]) -> Any:
        import psycopg

        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._connect()
                return fn()
            except psycopg.Error as exc:
                warn(f"{self.where}: LLM cache error ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}); "
                     f"treated as a miss")
                if self._conn is not None and (self._conn.closed or self._conn.broken):
                    self._conn = None
                return fallback

    @staticmethod
    def _pg(sql: str) -> str:
        return sql.replace("?", "%s")

    def _query(self, sql: str, args: tuple) -> list[tuple]:
        return self._conn.execute(self._pg(sql), args).fetchall()

    def _execute(self, sql: str, args: tuple) -> int:
        return self._conn.execute(self._pg(sql), args).rowcount

    def _batches(self, batches: list[tuple[str, list[tuple]]]) -> None:
        with self._conn.transaction():
            for sql, rows in batches:
                if rows:
                    self._conn.cursor().executemany(self._pg(sql), rows)

    def drop(self) -> None:
        """Drop the table (tests and benchmarks use throw-away tables)."""
        self.flush()
        self._guard(None, lambda: [self._conn.execute(f"DROP TABLE IF EXISTS {t}")
                                   for t in (self.table, f"{self.table}_daily")])
