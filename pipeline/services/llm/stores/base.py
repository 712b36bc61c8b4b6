"""The cache table and the checks made before an entry is served, shared by both backends.

Every row is checked before it is served (the stored request must re-hash to its key and equal the
current request; the response must match its checksum); a bad row is a miss, never a wrong answer.
Hit and miss counters are buffered so that a hit is a pure read. A backend (pipeline.services.llm.stores.
sqlite, .postgres) supplies the connection and turns its storage errors into warnings.
"""
from __future__ import annotations

import atexit
import json
import re
import threading
import time
import weakref
from typing import Any, Callable, Sequence

from pipeline.core.errors import InputError, warn
from pipeline.core.hashing import sha256_text
from pipeline.services.llm.keys import Entry, entry_checksum, response_problem
from pipeline.services.llm.stats import DAY, TOP_PROMPTS, WINDOW_DAYS, PriceFn, summarize

Clock = Callable[[], float]
_TABLE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")
COLUMNS = "key, provider, model, request, response, usage, created_at, last_hit_at, hit_count, checksum"


def ddl(table: str) -> list[str]:
    """The statements that create the cache table, its index and its daily hit/miss counts."""
    return [
        f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, "
        f"request TEXT NOT NULL, response TEXT NOT NULL, usage TEXT NOT NULL, created_at BIGINT NOT NULL, "
        f"last_hit_at BIGINT, hit_count BIGINT NOT NULL DEFAULT 0, checksum TEXT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {table}_created_idx ON {table} (created_at)",
        # one row per UTC day (days since the epoch) for the 7-day hit rate
        f"CREATE TABLE IF NOT EXISTS {table}_daily (day BIGINT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
        f"misses BIGINT NOT NULL DEFAULT 0)",
    ]


class CacheStore:
    """The cache table and the checks made before serving; subclasses provide the connection.

    Every public method is fail-safe: a storage error is a one-line warning and a miss (or a
    skipped write), never an exception into the build.
    """

    where = "LLM cache"

    def __init__(self, table: str = "llm_cache", clock: Clock = time.time) -> None:
        if not _TABLE_RE.match(table):
            raise InputError(f"LLM cache table name '{table}' is not a plain lower-case identifier. Use e.g. llm_cache")
        self.table = table
        self.clock = clock
        self._lock = threading.Lock()
        # Hit and miss counters are buffered and written in batches (at most FLUSH_EVERY lookups or
        # FLUSH_SECONDS late, and on stats, evict, close and exit), so that a hit is a pure read.
        self._pending_hits: dict[str, list[int]] = {}   # key → [hits, last_hit_at]
        self._pending_days: dict[int, list[int]] = {}   # day → [hits, misses]
        self._pending = 0
        self._last_flush = time.monotonic()
        _OPEN_STORES.add(self)

    # subclasses: _query(sql, args) -> rows, _execute(sql, args) -> rowcount, _batches([(sql, rows), ...]) in
    # one transaction, and _guard(fallback, fn) which turns a storage error into a warning and the fallback.
    FLUSH_EVERY = 256
    FLUSH_SECONDS = 5.0
    _conn: Any = None  # the subclass's connection

    def close(self) -> None:
        """Write buffered counters, then close the connection."""
        self.flush()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _now(self) -> int:
        return int(self.clock())

    def get(self, key: str, request_text: str | None = None) -> Entry | None:
        """The checked entry for `key` (recording a hit), or None on a miss or a bad row."""
        rows = self._guard(None, lambda: self._query(f"SELECT {COLUMNS} FROM {self.table} WHERE key = ?", (key,)))
        if rows is None:
            return None
        if not rows:
            self._record(None)
            return None
        entry = Entry(*rows[0][:9])
        problem = self._row_problem(entry, rows[0][9], request_text)
        if problem:
            warn(f"{self.where}: entry {key[:12]} {problem}; not served, dropped, the request runs again")
            self._guard(None, lambda: self._execute(f"DELETE FROM {self.table} WHERE key = ?", (key,)))
            self._record(None)
            return None
        self._record(key)
        return entry

    def put(self, entry: Entry) -> bool:
        """Store an entry unless its key is already there; False when it was not written."""
        if response_problem(json.loads(entry.response)) is not None:
            return False  # defence in depth: never store an error or an empty response
        sql = (f"INSERT INTO {self.table} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               f"ON CONFLICT (key) DO NOTHING")
        args = (entry.key, entry.provider, entry.model, entry.request, entry.response, entry.usage,
                entry.created_at, None, 0, entry.checksum)
        return bool(self._guard(0, lambda: self._execute(sql, args)))

    def put_many(self, entries: Sequence[Entry]) -> int:
        """Store many entries in one transaction (imports, benchmarks); errors and empties skipped."""
        sql = (f"INSERT INTO {self.table} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               f"ON CONFLICT (key) DO NOTHING")
        rows = [(e.key, e.provider, e.model, e.request, e.response, e.usage, e.created_at, None, 0, e.checksum)
                for e in entries if response_problem(json.loads(e.response)) is None]
        before = self._guard(None, lambda: self._query(f"SELECT COUNT(*) FROM {self.table}", ()))
        self._guard(None, lambda: self._batches([(sql, rows)]))
        after = self._guard(None, lambda: self._query(f"SELECT COUNT(*) FROM {self.table}", ()))
        return int(after[0][0] - before[0][0]) if before and after else 0

    def evict(self, older_than_days: float) -> int:
        """Delete entries created more than `older_than_days` ago that were never hit; return how many."""
        self.flush()  # a hit still in the buffer must protect its entry
        cutoff = self._now() - int(older_than_days * DAY)
        sql = f"DELETE FROM {self.table} WHERE created_at < ? AND hit_count = 0"
        return int(self._guard(0, lambda: self._execute(sql, (cutoff,))))

    def stats(self, price: PriceFn | None = None) -> dict:
        """Entries, bytes, 7-day hit rate, top 10 most-hit prompts and estimated USD saved."""
        self.flush()
        today = self._now() // DAY
        t = self.table
        count = self._guard([(0, 0)], lambda: self._query(
            f"SELECT COUNT(*), COALESCE(SUM({self._bytes_expr}), 0) FROM {t}", ()))[0]
        window = self._guard([(0, 0)], lambda: self._query(
            f"SELECT COALESCE(SUM(hits), 0), COALESCE(SUM(misses), 0) FROM {t}_daily WHERE day > ?",
            (today - WINDOW_DAYS,)))[0]
        top = self._guard([], lambda: self._query(
            f"SELECT key, hit_count, request FROM {t} WHERE hit_count > 0 ORDER BY hit_count DESC, key ASC "
            f"LIMIT {TOP_PROMPTS}", ()))
        hit_rows = self._guard([], lambda: self._query(
            f"SELECT provider, model, usage, hit_count FROM {t} WHERE hit_count > 0 ORDER BY key", ()))
        return summarize(self.where, count, window, top, hit_rows, price)

    def _row_problem(self, entry: Entry, checksum: str, request_text: str | None) -> str | None:
        if sha256_text(entry.request) != entry.key:
            return "has a stored request that does not re-hash to its key"
        if request_text is not None and entry.request != request_text:
            return "has a stored request that differs from the current one"
        if entry_checksum(entry.key, entry.response, entry.usage) != checksum:
            return "has a response that fails its checksum"
        try:
            request, raw = json.loads(entry.request), json.loads(entry.response)
        except ValueError:
            return "is not valid JSON"
        if request.get("provider") != entry.provider or request.get("model") != entry.model:
            return "names a provider or model that differs from its request"
        if response_problem(raw) is not None:
            return "holds an error or empty response"
        return None

    def _record(self, key: str | None) -> None:
        """Count a hit (bumping the entry's hit count) or a miss; written by the next flush."""
        now = self._now()
        with self._lock:
            day = self._pending_days.setdefault(now // DAY, [0, 0])
            day[0 if key else 1] += 1
            if key:
                self._pending_hits.setdefault(key, [0, now])[0] += 1
                self._pending_hits[key][1] = now
            self._pending += 1
            due = self._pending >= self.FLUSH_EVERY or time.monotonic() - self._last_flush >= self.FLUSH_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        """Write the buffered hit and miss counters in one transaction."""
        with self._lock:
            hits, days = self._pending_hits, self._pending_days
            self._pending_hits, self._pending_days, self._pending = {}, {}, 0
            self._last_flush = time.monotonic()
        if not hits and not days:
            return
        t = self.table
        self._guard(None, lambda: self._batches([
            (f"UPDATE {t} SET hit_count = hit_count + ?, last_hit_at = ? WHERE key = ?",
             [(n, last, key) for key, (n, last) in sorted(hits.items())]),
            (f"INSERT INTO {t}_daily (day, hits, misses) VALUES (?, ?, ?) ON CONFLICT (day) DO UPDATE "
             f"SET hits = {t}_daily.hits + excluded.hits, misses = {t}_daily.misses + excluded.misses",
             [(day, h, m) for day, (h, m) in sorted(days.items())]),
        ]))


_OPEN_STORES: "weakref.WeakSet[CacheStore]" = weakref.WeakSet()


@atexit.register
def _flush_open_stores() -> None:
    for store in list(_OPEN_STORES):
        try:
            store.flush()
        except Exception:  # noqa: BLE001  (exit must not fail over statistics)
            pass
