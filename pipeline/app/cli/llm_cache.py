"""`cacheeval llm-cache stats [--json]` and `cacheeval llm-cache evict [--older-than DAYS]`.

The store is `--url` (PostgreSQL), else `--db` (an existing SQLite file: a folder or a missing
path is a one-line error), else configs/llm.yaml (PostgreSQL when its `postgres_url_env`
variable is set, else `cache.sqlite_path`).
"""
from __future__ import annotations

import argparse
import json


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the `stats` and `evict` subcommands and the store options."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="PATH", help="SQLite cache file (default: cache.sqlite_path in configs/llm.yaml)")
    common.add_argument("--url", metavar="URL", help="PostgreSQL URL (default: $CACHEEVAL_LLM_CACHE_URL if set)")
    sub = parser.add_subparsers(dest="llm_cache_command", metavar="ACTION", required=True)
    stats = sub.add_parser("stats", parents=[common], help="entries, 7-day hit rate, top prompts, bytes, USD saved")
    stats.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    evict = sub.add_parser("evict", parents=[common], help="drop entries older than DAYS that were never hit")
    evict.add_argument("--older-than", type=float, default=30.0, metavar="DAYS",
                       help="age in days (default 30); entries hit at least once are kept")


def _format(stats: dict) -> str:
    rate = "n/a (no lookups)" if stats["hit_rate_7d"] is None else f"{stats['hit_rate_7d']:.1%}"
    lines = [
        f"store:               {stats['store']}",
        f"entries:             {stats['entries']}",
        f"bytes (payload):     {stats['bytes']}",
    ]
    if "file_bytes" in stats:
        lines.append(f"bytes (on disk):     {stats['file_bytes']}")
    lines += [
        f"hit rate (7 days):   {rate}  ({stats['hits_7d']} hits, {stats['misses_7d']} misses)",
        f"estimated saved:     ${stats['estimated_usd_saved']:.4f}",
        "top prompts by hits:" if stats["top_prompts"] else "top prompts by hits: (none yet)",
    ]
    lines += [f"  {p['hits']:>7}  {p['key']}  {p['prompt']}" for p in stats["top_prompts"]]
    return "\n".join(lines)


def _check_db(db: str, default: object) -> None:
    """A --db the user names must be an existing regular file: inspecting a cache must neither create
    one at a mistyped path nor set a folder (or a FIFO) aside as a damaged cache."""
    import os
    import stat

    from pipeline.core.errors import InputError

    fix = f"Pass the LLM cache's SQLite file (configured: {default})"
    try:
        mode = os.stat(db).st_mode
    except FileNotFoundError:
        raise InputError(f"--db {db}: no such file. {fix}") from None
    except OSError as exc:
        raise InputError(f"--db {db}: cannot read ({exc.strerror or exc}). {fix}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"--db {db}: is a folder, not an SQLite file. {fix}")
    if not stat.S_ISREG(mode):
        raise InputError(f"--db {db}: is not a regular file. {fix}")


def run(args: argparse.Namespace) -> int:
    """Open the store, then print its stats or evict old entries."""
    from pipeline.core import settings
    from pipeline.core.errors import InputError
    from pipeline.services.llm.stores import open_store
    from pipeline.services.llm.providers import load_llm_config

    config = load_llm_config()
    url = args.url or (None if args.db else config.postgres_url(settings.resolve()))
    if args.db and not args.url:
        _check_db(args.db, config.sqlite_path)
    store = open_store(args.db or config.sqlite_path, url)
    try:
        if args.llm_cache_command == "stats":
            stats = store.stats(config.price)
            print(json.dumps(stats, sort_keys=True, ensure_ascii=False) if args.json else _format(stats))
            return 0
        if args.older_than < 0:
            raise InputError(f"--older-than {args.older_than}: negative age. Give a number of days >= 0")
        removed = store.evict(args.older_than)
        print(f"evicted {removed} entries older than {args.older_than:g} days that were never hit")
        return 0
    finally:
        store.close()
