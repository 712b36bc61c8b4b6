"""The LLM response cache as a reviewable JSONL file, and the replay provider of the embedded build.

``sources/curated/llm_replay.jsonl`` holds the responses the LM-generated rows were made from, one
entry per line, sorted by key: ``{"key", "provider", "model", "created_at", "prompt", "text",
"request", "response", "usage"}``. ``request``, ``response`` and ``usage`` are the stored JSON as
objects (so a diff shows what the model was asked and what it said); ``prompt`` and ``text`` are
read-only previews for reviewers and are checked, not trusted, on import.

The embedded build replays these entries: ``replay_llm()`` imports the file into a private SQLite
store and opens the configured provider over it in ``replay`` mode, so a rebuild needs no model
(the provider's snapshot is pinned in configs/llm.yaml) and a request that is not in the file fails
with ``ReplayMissError``. Recording the entries needs the model:

    CACHEEVAL_LLM_CACHE_MODE=both python -m domains.lm.record
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from pipeline.core.errors import InputError
from pipeline.core.hashing import canonical_json, sha256_text
from pipeline.services.llm.cached_provider import CachedProvider
from pipeline.services.llm.keys import Entry, response_problem, response_text
from pipeline.services.llm.stats import prompt_preview
from pipeline.services.llm.stores import CacheStore, SQLiteStore
from pipeline.services.llm.stores.sqlite import MEMORY
from pipeline.core.paths import CURATED, PROJECT_ROOT

REPLAY_FILE = CURATED / "llm_replay.jsonl"
_FIELDS = ("key", "provider", "model", "created_at", "prompt", "text", "request", "response", "usage")


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def entry_line(entry: Entry) -> str:
    """One JSONL line for an entry (keys in a fixed order, UTF-8 kept)."""
    obj = {
        "key": entry.key, "provider": entry.provider, "model": entry.model, "created_at": entry.created_at,
        "prompt": prompt_preview(entry.request, width=200), "text": response_text(json.loads(entry.response)),
        "request": json.loads(entry.request), "response": json.loads(entry.response),
        "usage": json.loads(entry.usage),
    }
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def dump_entries(entries: Iterable[Entry], path: Path) -> int:
    """Write entries to `path` as JSONL sorted by key; return how many were written."""
    ordered = sorted(entries, key=lambda e: e.key)
    text = "".join(entry_line(e) + "\n" for e in ordered)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a file
    return len(ordered)


def store_entries(store: CacheStore) -> list[Entry]:
    """Every entry of a store, sorted by key (hit counters are not exported)."""
    store.flush()
    rows = store._guard([], lambda: store._query(
        "SELECT key, provider, model, request, response, usage, created_at FROM "
        f"{store.table} ORDER BY key", ()))
    return [Entry(key=r[0], provider=r[1], model=r[2], request=r[3], response=r[4], usage=r[5],
                  created_at=int(r[6])) for r in rows]


def export_store(store: CacheStore, path: Path = REPLAY_FILE) -> int:
    """Export a whole store as the replay JSONL."""
    return dump_entries(store_entries(store), path)


def parse_line(line: str, where: str) -> Entry:
    """An Entry from one JSONL line, checked: the request re-hashes to the key, previews agree."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg}). Re-export the file with `python -m pipeline.services.llm.replay "
                         f"export`") from None
    if not isinstance(obj, dict) or set(obj) != set(_FIELDS):
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise InputError(f"{where}: needs exactly the fields {', '.join(_FIELDS)} (got {got}). Re-export the file")
    request, response = canonical_json(obj["request"]), canonical_json(obj["response"])
    if sha256_text(request) != obj["key"]:
        raise InputError(f"{where}: the request does not hash to key {str(obj['key'])[:12]} (edited by hand?). "
                         f"Restore the line or re-record it")
    if obj["request"].get("provider") != obj["provider"] or obj["request"].get("model") != obj["model"]:
        raise InputError(f"{where}: provider/model differ from the request's. Restore the line or re-record it")
    problem = response_problem(obj["response"])
    if problem:
        raise InputError(f"{where}: {problem}. Remove the line and re-record it")
    if response_text(obj["response"]) != obj["text"]:
        raise InputError(f"{where}: 'text' differs from the response's text (edited by hand?). Edit neither; "
                         f"re-record the entry instead")
    return Entry(key=obj["key"], provider=obj["provider"], model=obj["model"], request=request, response=response,
                 usage=canonical_json(obj["usage"]), created_at=int(obj["created_at"]))


def load_entries(path: Path = REPLAY_FILE) -> list[Entry]:
    """Parse and check a replay JSONL file; keys must be unique and sorted."""
    rel = _rel(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{rel}: file not found. Restore it from git or record it with "
                         f"`python -m domains.lm.record`") from None
    entries: list[Entry] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        entry = parse_line(line, f"{rel}:{n}")
        if entries and entry.key <= entries[-1].key:
            raise InputError(f"{rel}:{n}: key {entry.key[:12]} is duplicated or out of order. Re-export the file "
                             f"(entries are sorted by key)")
        entries.append(entry)
    return entries


def import_entries(store: CacheStore, path: Path = REPLAY_FILE) -> int:
    """Load a replay JSONL file into a store; return how many entries were new."""
    return store.put_many(load_entries(path))


@lru_cache(maxsize=4)
def _replay_store(path: str, size: int, mtime_ns: int) -> SQLiteStore:
    # A private store per file version and process: the committed file is the only truth, and a
    # user's own cache can never leak an entry into the embedded build. It lives in memory (the
    # file is ~0.5 MB), so no process, finished, failed or killed, leaves a folder behind; every
    # entry it serves is checked like any store's (CacheStore.get).
    store = SQLiteStore(MEMORY, clock=lambda: 0)
    import_entries(store, Path(path))
    return store


def replay_store(path: Path = REPLAY_FILE) -> SQLiteStore:
    """A store holding exactly the entries of a replay file (imported once per process and file version)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(f"{_rel(path)}: file not found. Restore it from git or record it with "
                         f"`python -m domains.lm.record`") from None
    return _replay_store(str(path.resolve()), st.st_size, st.st_mtime_ns)


def replay_llm(path: Path = REPLAY_FILE, provider: str | None = None) -> CachedProvider:
    """The configured provider in replay mode over the committed entries (needs no model)."""
    from pipeline.services.llm.providers import open_llm

    return open_llm("replay", provider=provider, store=replay_store(path))


def main(argv: list[str] | None = None) -> int:
    """`python -m pipeline.services.llm.replay export|check` (recording: `python -m domains.lm.record`)."""
    ap = argparse.ArgumentParser(description="Export or check the LLM replay entries (record them with "
                                             "`python -m domains.lm.record`).")
    ap.add_argument("action", choices=("export", "check"))
    ap.add_argument("--file", type=Path, default=REPLAY_FILE, help="the replay JSONL (default: %(default)s)")
    ap.add_argument("--db", type=Path, help="export: the SQLite cache to export")
    args = ap.parse_args(argv)
    try:
        if args.action == "export":
            if args.db is None:
                raise InputError("export needs --db <sqlite file>. Pass the cache to export")
            print(f"{export_store(SQLiteStore(args.db), args.file)} entries -> {args.file}")
        else:
            print(f"{len(load_entries(args.file))} entries ok in {args.file}")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
