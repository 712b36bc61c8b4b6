"""Canonical JSON and the content hashes built from it; sha256 of files: plain (read now) and memoised
per process on (path, size, mtime) for large files one process asks about again and again (model
weights and exports, the corpora of a datasets dir): an edit changes the mtime, so it is hashed again."""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any


def file_sha256(path: str | Path) -> str:
    """sha256 hex of a file's bytes, read now."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _by_stat(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def memo_file_sha256(path: str | Path) -> str:
    """sha256 hex of a file, hashed once per process per (path, size, mtime); every new process
    re-hashes the bytes."""
    st = os.stat(path)
    return _by_stat(str(path), st.st_size, st.st_mtime_ns)


def canonical_json(obj: Any) -> str:
    """Sorted keys at every level, fixed separators, no NaN, UTF-8 kept: the form every content
    key is hashed from."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_hash(*parts: Any) -> str:
    """sha256 hex of the canonical JSON of `parts`."""
    return sha256_text(canonical_json(list(parts)))
