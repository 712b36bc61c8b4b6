"""The folders a command writes into (its --out, the cache root), checked before any work."""
from __future__ import annotations

from pathlib import Path

from pipeline.core import settings
from pipeline.core.errors import InputError
from pipeline.core.writer import folder_problem

OUT_FREE_MB = 64      # a v1.1 build writes about 11 MB into its folder (and a staged copy beside it)
CACHE_FREE_MB = 256   # the embedding cache alone is about 130 MB after a cold v1.1 build


def check_places(resolved: settings.Settings, out: Path | None, cache_given: bool, out_option: str = "--out") -> None:
    """The output folder and the cache root, checked before any work: one line naming the path and the
    OS's reason (a file, read-only, out of space), and nothing written."""
    named = [(out_option, out, OUT_FREE_MB)] if out is not None else []
    cache_option = "--cache-dir" if cache_given else "the cache root"
    for option, path, need in [*named, (cache_option, resolved.cache_root, CACHE_FREE_MB)]:
        problem = folder_problem(path, need)
        if problem:
            raise InputError(f"{option} {path}: {problem}. Choose a writable folder with room")
