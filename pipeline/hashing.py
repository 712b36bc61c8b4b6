"""sha256 of files: plain (inputs whose bytes may change at any moment) and memoised per process
on (path, size, mtime) for large model weights that are installed, never edited in place."""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path


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


def weights_file_sha256(path: str | Path) -> str:
    """sha256 hex of a model file, hashed once per process per (path, size, mtime); every new
    process re-hashes the bytes."""
    st = os.stat(path)
    return _by_stat(str(path), st.st_size, st.st_mtime_ns)
