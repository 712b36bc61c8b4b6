"""Where cached LLM responses live: one table, two backends.

``SQLiteStore`` (WAL, one file, safe with several processes) and ``PostgresStore`` (psycopg 3) share
the table and the serve-time checks of ``CacheStore``; ``open_store`` picks one from the config.
"""
from __future__ import annotations

import time
from pathlib import Path

from pipeline.core.errors import InputError
from pipeline.services.llm.stores.base import COLUMNS, CacheStore, Clock, ddl
from pipeline.services.llm.stores.postgres import PostgresStore
from pipeline.services.llm.stores.sqlite import SQLiteStore

__all__ = ["COLUMNS", "CacheStore", "Clock", "PostgresStore", "SQLiteStore", "ddl", "open_store"]


def open_store(sqlite_path: str | Path | None = None, url: str | None = None, table: str = "llm_cache",
               clock: Clock = time.time) -> CacheStore:
    """PostgreSQL when a URL is given, else the SQLite file."""
    if url:
        return PostgresStore(url, table=table, clock=clock)
    if sqlite_path is None:
        raise InputError("no LLM cache store configured. Set cache.sqlite_path in configs/llm.yaml or pass --db")
    return SQLiteStore(sqlite_path, table=table, clock=clock)
