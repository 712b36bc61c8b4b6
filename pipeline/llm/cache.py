"""Content-addressed LLM response cache with deterministic replay.

The key is the sha256 of the canonical JSON (sorted keys at every level, separators ``(",", ":")``)
of the semantic request: provider, resolved model snapshot, provider settings that change the
output, system prompt, messages, tools and every sampling parameter, plus ``SCHEMA``. Operational
settings (threads, batch size, timeouts) never enter the key.

Modes (argument, else ``CACHEEVAL_LLM_CACHE_MODE``, else the configured default):
``off`` bypasses the cache; ``read`` serves hits and calls the model on a miss without storing;
``write`` always calls the model and stores; ``both`` serves hits and stores misses; ``replay``
serves hits only and raises ``ReplayMissError`` on a miss, so a build never needs a model.

Never stored: errors, empty responses, and any request whose system prompt or messages contain the
marker ``CACHEEVAL_NOCACHE`` (such a request is not looked up either: it always reaches the model).

Two stores with the same table: ``SQLiteStore`` (WAL, one file, safe with several processes) and
``PostgresStore`` (psycopg 3). Every row is checked before it is served (the stored request must
re-hash to its key and equal the current request; the response must match its checksum); a bad row
or a corrupt file is a miss, never a wrong answer, and never crashes the build.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import sqlite3
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from pipeline.core.errors import CacheEvalError, InputError, warn
from pipeline.core.hashing import canonical_json, sha256_text
from pipeline.core.sqlite import open_wal

SCHEMA = 1
NOCACHE_MARKER = "CACHEEVAL_NOCACHE"
MODES = ("off", "read", "write", "both", "replay")
MODE_ENV = "CACHEEVAL_LLM_CACHE_MODE"
# Settings that change how fast a call runs, never what it returns: kept out of the key.
OPERATIONAL_PARAMS = frozenset({"timeout", "request_timeout", "n_threads", "n_batch", "n_threads_batch"})
# Written as 0 or 0.0 by different callers; normalised to float so both give one key.
FLOAT_PARAMS = frozenset({"temperature", "top_p", "min_p", "typical_p", "presence_penalty",
                          "frequency_penalty", "repeat_penalty", "tfs_z", "mirostat_tau", "mirostat_eta"})
DAY = 86400
Clock = Callable[[], float]


class LLMError(CacheEvalError):
    """The model or endpoint answered with an error; nothing was stored."""


class ReplayMissError(CacheEvalError):
    """Replay mode found no cached response for a request."""



def resolve_mode(mode: str | None = None, default: str = "both") -> str:
    """The cache mode: the argument, else $CACHEEVAL_LLM_CACHE_MODE, else `default`."""
    value = mode if mode is not None else os.environ.get(MODE_ENV) or default
    if value not in MODES:
        source = "mode argument" if mode is not None else (MODE_ENV if os.environ.get(MODE_ENV) else "default mode")
        raise InputError(f"{source}: unknown LLM cache mode '{value}'. Use one of: {', '.join(MODES)}")
    return value


def build_request(provider: str, model: str, messages: Sequence[Mapping[str, Any]], *,
                  system: str | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                  settings: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None) -> dict:
    """The normalised semantic request that the key hashes (operational params removed)."""
    if not model:
        raise InputError(f"provider {provider}: no resolved model snapshot. Resolve the alias before calling")
    clean: dict[str, Any] = {}
    for name, value in (params or {}).items():
        if name in OPERATIONAL_PARAMS:
            continue
        if name == "stream" and value:
            raise InputError("stream=True cannot go through the LLM cache. Drop the stream parameter")
        if name in FLOAT_PARAMS and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        clean[name] = value
    return {
        "schema": SCHEMA,
        "provider": provider,
        "model": model,
        "settings": dict(settings or {}),
        "system": system,
        "messages": [dict(m) for m in messages],
        "tools": [dict(t) for t in tools] if tools is not None else None,
        "params": clean,
    }


def request_key(request: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a normalised request."""
    return sha256_text(canonical_json(request))


def has_nocache_marker(request: Mapping[str, Any]) -> bool:
    """True when the system prompt or any message carries CACHEEVAL_NOCACHE."""
    return NOCACHE_MARKER in canonical_json([request.get("system"), request.get("messages")])


def response_problem(raw: Any) -> str | None:
    """Why a raw chat-completion response must not be cached (error or empty), or None."""
    if not isinstance(raw, Mapping):
        return "response is not a JSON object"
    if raw.get("error"):
        return f"response carries an error: {str(raw['error'])[:200]}"
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return "response has no choices"
    if choices[0].get("finish_reason") == "error":
        return "finish_reason is error"
    if not response_text(raw).strip() and not (choices[0].get("message") or {}).get("tool_calls"):
        return "response is empty"
    return None


def response_text(raw: Mapping[str, Any]) -> str:
    """The first choice's text (chat message content, or completion text)."""
    try:
        choice = raw["choices"][0]
    except (KeyError, IndexError, TypeError):
        return ""
    message = choice.get("message") or {}
    content = message.get("content") if isinstance(message, Mapping) else None
    if content is None:
        content = choice.get("text")
    return content if isinstance(content, str) else ""


@dataclass(frozen=True)
class Entry:
    """One cached response as stored (request and response are canonical JSON text)."""

    key: str
    provider: str
    model: str
    request: str
    response: str
    usage: str
    created_at: int
    last_hit_at: int | None = None
    hit_count: int = 0

    @property
    def checksum(self) -> str:
        return entry_checksum(self.key, self.response, self.usage)


def entry_checksum(key: str, response: str, usage: str) -> str:
    return sha256_text(f"{key}\x00{response}\x00{usage}")


def make_entry(request: Mapping[str, Any], raw: Mapping[str, Any], created_at: int) -> Entry:
    """An Entry for a request and its raw response (usage taken from the response)."""
    text = canonical_json(request)
    return Entry(key=sha256_text(text), provider=str(request["provider"]), model=str(request["model"]),
                 request=text, response=canonical_json(raw), usage=canonical_json(raw.get("usage") or {}),
                 created_at=created_at)


# ---------------------------------------------------------------- stores (same table either way)

_TABLE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")
_COLUMNS = "key, provider, model, request, response, usage, created_at, last_hit_at, hit_count, checksum"


def _ddl(table: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, "
        f"request TEXT NOT NULL, response TEXT NOT NULL, usage TEXT NOT NULL, created_at BIGINT NOT NULL, "
        f"last_hit_at BIGINT, hit_count BIGINT NOT NULL DEFAULT 0, checksum TEXT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {table}_created_idx ON {table} (created_at)",
        # one row per UTC day (days since the epoch) for the 7-day hit rate
        f"CREATE TABLE IF NOT EXISTS {table}_daily (day BIGINT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
        f"misses BIGINT NOT NULL DEFAULT 0)",
    ]


def prompt_preview(request_text: str, width: int = 80) -> str:
    """The last user message of a stored request, on one line, cut to `width` characters."""
    try:
        messages = json.loads(request_text).get("messages") or []
    except (ValueError, AttributeError):
        return "(unreadable request)"
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"] or messages[-1:]
    content = users[-1].get("content", "") if users and isinstance(users[-1], dict) else ""
    if isinstance(content, list):  # OpenAI content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = " ".join(str(content).split())
    return text if len(text) <= width else text[: width - 1] + "…"


PriceFn = Callable[[str, str], "tuple[float, float]"]  # (provider, model) → USD per 1M (input, output) tokens


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
        rows = self._guard(None, lambda: self._query(f"SELECT {_COLUMNS} FROM {self.table} WHERE key = ?", (key,)))
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
        sql = (f"INSERT INTO {self.table} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               f"ON CONFLICT (key) DO NOTHING")
        args = (entry.key, entry.provider, entry.model, entry.request, entry.response, entry.usage,
                entry.created_at, None, 0, entry.checksum)
        return bool(self._guard(0, lambda: self._execute(sql, args)))

    def put_many(self, entries: Sequence[Entry]) -> int:
        """Store many entries in one transaction (imports, benchmarks); errors and empties skipped."""
        sql = (f"INSERT INTO {self.table} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
        daily = self._guard([(0, 0)], lambda: self._query(
            f"SELECT COALESCE(SUM(hits), 0), COALESCE(SUM(misses), 0) FROM {t}_daily WHERE day > ?",
            (today - 7,)))[0]
        top = self._guard([], lambda: self._query(
            f"SELECT key, hit_count, request FROM {t} WHERE hit_count > 0 ORDER BY hit_count DESC, key ASC LIMIT 10", ()))
        hit_rows = self._guard([], lambda: self._query(
            f"SELECT provider, model, usage, hit_count FROM {t} WHERE hit_count > 0 ORDER BY key", ()))
        saved = 0.0
        for provider, model, usage_text, hits in hit_rows:
            try:
                usage = json.loads(usage_text)
                tokens_in, tokens_out = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
            except (ValueError, TypeError, AttributeError):
                continue
            p_in, p_out = price(provider, model) if price else (0.0, 0.0)
            saved += hits * (tokens_in * p_in + tokens_out * p_out) / 1_000_000
        hits, misses = int(daily[0]), int(daily[1])
        return {
            "store": self.where,
            "entries": int(count[0]),
            "bytes": int(count[1]),
            "hits_7d": hits,
            "misses_7d": misses,
            "hit_rate_7d": round(hits / (hits + misses), 4) if hits + misses else None,
            "top_prompts": [{"key": k[:12], "hits": int(h), "prompt": prompt_preview(r)} for k, h, r in top],
            "estimated_usd_saved": round(saved, 6),
        }

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


def _sqlite_file_problem(path: Path) -> str | None:
    """A cheap header check: not an SQLite file, or shorter than its header says (truncated)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            header = fh.read(100)
    except FileNotFoundError:
        return None
    if size == 0:
        return None  # SQLite treats an empty file as a new database
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return "is not an SQLite database"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counter_valid = header[24:28] == header[92:96]
    if counter_valid and pages and size < pages * page_size:
        return "is truncated"
    return None


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """A damaged file (as opposed to a busy or unwritable one)."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in text or "not a database" in text


class SQLiteStore(CacheStore):
    """The cache in one SQLite file (WAL): several processes may read and write it at once."""

    _bytes_expr = "LENGTH(CAST(request AS BLOB)) + LENGTH(CAST(response AS BLOB)) + LENGTH(CAST(usage AS BLOB))"

    def __init__(self, path: str | Path, table: str = "llm_cache", clock: Clock = time.time) -> None:
        super().__init__(table, clock)
        self.path = Path(path)
        self.where = str(self.path)
        self._conn: sqlite3.Connection | None = None
        self._open()

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        problem = _sqlite_file_problem(self.path)
        try:
            self._connect()
            if problem == "is truncated":
                # the header may be mid-checkpoint from another process: let SQLite confirm
                check = self._conn.execute("PRAGMA quick_check").fetchone()[0]
                problem = None if check == "ok" else problem
            elif problem is None:
                return
        except sqlite3.DatabaseError as exc:
            if not problem and not _is_corruption(exc):  # e.g. locked or unwritable: not the file's fault
                warn(f"{self.path}: cannot open the LLM cache ({str(exc).splitlines()[0]}); treated as misses")
                return
            problem = problem or f"is corrupt ({str(exc).splitlines()[0]})"
        if problem:
            try:
                self._quarantine(problem)
            except (sqlite3.Error, OSError) as exc:
                warn(f"{self.path}: could not rebuild the LLM cache ({exc}); running without it")

    def _connect(self) -> None:
        self._conn = open_wal(self.path, _ddl(self.table), isolation_level=None, check_same_thread=False,
                              pragmas=("synchronous = NORMAL",  # WAL + NORMAL: durable across app crashes, fast commits
                                       "journal_size_limit = 67108864"))  # shrink the WAL to 64 MiB after a checkpoint

    def _quarantine(self, problem: str) -> None:
        """Move a corrupt file (and its WAL) aside and start an empty cache in its place."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        aside = self.path.with_name(f"{self.path.name}.corrupt-{self._now()}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            try:
                os.replace(src, Path(f"{aside}{suffix}"))
            except FileNotFoundError:
                pass  # no such companion file, or another process moved it first
        warn(f"{self.path}: LLM cache file {problem}; moved it to {aside.name} and started an empty cache "
             f"(requests run again)")
        self._connect()

    def _guard(self, fallback: Any, fn: Callable[[], Any]) -> Any:
        with self._lock:
            try:
                if self._conn is None:
                    self._connect()
                return fn()
            except sqlite3.DatabaseError as exc:
                if self._conn is not None and self._conn.in_transaction:
                    try:
                        self._conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # the connection is being replaced or reported below anyway
                if _is_corruption(exc):
                    try:
                        self._quarantine(f"is corrupt ({str(exc).splitlines()[0]})")
                    except (sqlite3.Error, OSError) as again:
                        warn(f"{self.path}: could not rebuild the LLM cache ({again}); running without it")
                else:
                    warn(f"{self.path}: LLM cache error ({str(exc).splitlines()[0]}); treated as a miss")
                return fallback

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
        """Bytes on disk: the database file plus its WAL."""
        return sum(Path(f"{self.path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{self.path}{s}").exists())

    def stats(self, price: PriceFn | None = None) -> dict:
        out = super().stats(price)
        out["file_bytes"] = self.file_bytes()
        return out



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
            for stmt in _ddl(self.table):
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



def open_store(sqlite_path: str | Path | None = None, url: str | None = None, table: str = "llm_cache",
               clock: Clock = time.time) -> CacheStore:
    """PostgreSQL when a URL is given, else the SQLite file."""
    if url:
        return PostgresStore(url, table=table, clock=clock)
    if sqlite_path is None:
        raise InputError("no LLM cache store configured. Set cache.sqlite_path in configs/llm.yaml or pass --db")
    return SQLiteStore(sqlite_path, table=table, clock=clock)


@dataclass(frozen=True)
class Completion:
    """A chat completion as returned to callers, whether it came from the cache or the model."""

    text: str
    raw: Mapping[str, Any]
    usage: Mapping[str, Any]
    key: str
    cached: bool


class Provider(Protocol):
    """What a provider gives the cache: its kind, its resolved snapshot, and one raw call."""

    name: str
    model_snapshot: str

    def key_settings(self) -> dict:
        """Provider settings that change the output (e.g. chat format); they enter the key."""

    def complete_raw(self, messages: list[dict], tools: list[dict] | None, params: dict) -> dict:
        """Call the model; return an OpenAI-shaped chat-completion dict. Raise LLMError on failure."""


class CachedProvider:
    """A provider seen through the response cache: `complete(messages, **params)` like any provider.

    A request whose system prompt or messages contain ``CACHEEVAL_NOCACHE`` bypasses the cache
    entirely (never looked up, never stored); in replay mode it raises ReplayMissError.
    """

    def __init__(self, provider: Provider, store: CacheStore | None, mode: str | None = None,
                 clock: Clock = time.time, default_mode: str = "both") -> None:
        self.provider = provider
        self.mode = resolve_mode(mode, default_mode)
        if store is None and self.mode != "off":
            raise InputError(f"LLM cache mode {self.mode} needs a store. Configure one or use mode off")
        self.store = store
        self.clock = clock
        self.name = provider.name
        self.model_snapshot = provider.model_snapshot

    def complete(self, messages: Sequence[Mapping[str, Any]], *, system: str | None = None,
                 tools: Sequence[Mapping[str, Any]] | None = None, **params: Any) -> Completion:
        """Answer a chat request from the cache or the model, following the mode."""
        request = build_request(self.name, self.model_snapshot, messages, system=system, tools=tools,
                                settings=self.provider.key_settings(), params=params)
        try:
            key = request_key(request)
        except (TypeError, ValueError) as exc:
            raise InputError(f"LLM request is not JSON-serialisable ({exc}). Pass only strings, numbers, "
                             f"booleans, None, lists and dicts") from None
        nocache = has_nocache_marker(request)
        if self.mode == "replay":
            if nocache:
                raise ReplayMissError(f"LLM request {key[:12]} carries {NOCACHE_MARKER} and cannot be replayed. "
                                      f"Remove the marker or run with {MODE_ENV}=both and a model")
            hit = self._lookup(key, request)
            if hit is None:
                raise ReplayMissError(
                    f"LLM cache miss in replay mode for key {key[:12]} (provider {self.name}, model "
                    f"{self.model_snapshot[:40]}). Run with {MODE_ENV}=both and the model installed to record it")
            return hit
        if self.mode in ("read", "both") and not nocache:
            hit = self._lookup(key, request)
            if hit is not None:
                return hit
        wire = ([{"role": "system", "content": system}] if system is not None else []) + [dict(m) for m in messages]
        raw = self.provider.complete_raw(wire, [dict(t) for t in tools] if tools is not None else None, dict(params))
        problem = response_problem(raw)
        if problem and problem != "response is empty":
            raise LLMError(f"provider {self.name} ({self.model_snapshot[:40]}): {problem}. Check the model or endpoint")
        if problem is None:
            try:
                # callers see the same JSON-normalised answer whether it is fresh or replayed
                raw = json.loads(canonical_json(raw))
            except (TypeError, ValueError) as exc:
                warn(f"provider {self.name}: response for {key[:12]} is not plain JSON ({exc}); not cached")
                nocache = True
        if problem is None and not nocache and self.mode in ("write", "both"):
            self.store.put(make_entry(request, raw, int(self.clock())))
        return Completion(response_text(raw), raw, raw.get("usage") or {}, key, cached=False)

    def _lookup(self, key: str, request: Mapping[str, Any]) -> Completion | None:
        entry = self.store.get(key, canonical_json(request))
        if entry is None:
            return None
        raw = json.loads(entry.response)
        return Completion(response_text(raw), raw, json.loads(entry.usage), key, cached=True)
