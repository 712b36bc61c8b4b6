"""The Hugging Face `datasets` cache of the corpus reader, verified before it serves.

`datasets` parses a corpus file once into Arrow files in a folder of its cache (by default
<cache root>/hf-datasets, see `pipeline.core.settings.hf_datasets_cache`), keyed by the file's path
and modification time, and trusts that folder on every later read: random bytes over an Arrow file
crash the read (or change rows without a word), a folder in a file's place crashes it, and a file
whose bytes changed under an unchanged time is served stale.

So each folder gets a record (`cacheeval.sha256.json`): the sha256 of the source file it was made
from and of every file in the folder. Before `datasets` opens a folder the record is checked; a
folder that fails it (a file edited, truncated or replaced by a folder, a file missing or added, no
record, made from other bytes of the source) or that `datasets` cannot open is deleted with one
warning line and the file parsed again: the rows are those of a clean read. A damaged cache root
(a file in its place) is moved aside the same way. Checks and rebuilds of one folder hold a lock,
so processes reading the same corpus at once never delete each other's fresh folder.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pipeline.core.errors import warn
from pipeline.core.hashing import file_sha256

RECORD = "cacheeval.sha256.json"


def datasets_module():
    """Import `datasets` offline and quiet (the offline variables are set before the import: it
    reads them then)."""
    from pipeline.core.settings import ensure_offline

    ensure_offline()
    import datasets

    datasets.disable_progress_bars()
    # Its builders log a parse failure (with traceback) before raising; the reader reports it
    # as one line, so only CRITICAL messages may reach stderr.
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    return datasets


def load(kind: str, path: Path, source_sha256: str, cache_dir: Path, **kwargs: Any):
    """`load_dataset(kind, data_files=path)` as one `datasets.Dataset`, from a verified cache
    folder under `cache_dir` (made afresh when the folder fails its record). Errors of the
    source file itself (bad syntax, say) are raised as `datasets` raises them."""
    cache_dir = Path(cache_dir)
    if cache_dir.is_symlink() or (cache_dir.exists() and not cache_dir.is_dir()):
        from pipeline.core.sqlite import set_aside

        set_aside(cache_dir, "is not a folder", "datasets cache")
    builder = _builder(kind, path, source_sha256, cache_dir, kwargs)
    folder = Path(builder.cache_dir)
    with _locked(folder):
        if os.path.lexists(folder):
            problem = folder_problem(folder, source_sha256)
            if problem:
                _discard(folder, problem, path)
                builder = _make(kind, path, cache_dir, kwargs)  # its info must not come from the deleted folder
        fresh = not os.path.lexists(folder)
        builder.download_and_prepare()
        if fresh:
            _write_record(folder, source_sha256)
    return builder.as_dataset(split="rows")


def folder_problem(folder: Path, source_sha256: str) -> str | None:
    """What is wrong with a cache folder, judged by its record; None when every file matches."""
    if not folder.is_dir() or folder.is_symlink():
        return "is not a folder"
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        files, made_from = dict(record["files"]), record["source_sha256"]
    except FileNotFoundError:
        return "has no checksum record (made by an older version or an interrupted read)"
    except (OSError, ValueError, KeyError, TypeError):
        return "has a damaged checksum record"
    if made_from != source_sha256:
        return "was made from other bytes of its source file"
    present = sorted(p.name for p in folder.iterdir() if p.name != RECORD)
    if present != sorted(files):
        return f"holds other files than it recorded ({', '.join(sorted(set(present) ^ set(files)))})"
    for name, digest in sorted(files.items()):
        item = folder / name
        if not item.is_file() or item.is_symlink():
            return f"holds something other than a file in place of {name}"
        try:
            if file_sha256(item) != digest:
                return f"has {name} failing its checksum"
        except OSError as exc:
            return f"cannot read {name} ({exc.strerror or exc})"
    return None


def _make(kind: str, path: Path, cache_dir: Path, kwargs: dict):
    return datasets_module().load_dataset_builder(kind, data_files={"rows": str(path)}, cache_dir=str(cache_dir),
                                                  **kwargs)


def _builder(kind: str, path: Path, source_sha256: str, cache_dir: Path, kwargs: dict):
    """The builder; `datasets` reads an existing folder's dataset_info.json while making it, so a
    damaged one fails here: the folder is found with an empty cache root, deleted, and made anew."""
    try:
        return _make(kind, path, cache_dir, kwargs)
    except Exception as exc:  # noqa: BLE001 - the cache's fault only if a clean cache root works
        with tempfile.TemporaryDirectory(prefix="cacheeval-hf-probe-") as empty:
            try:
                relative = Path(_make(kind, path, Path(empty), kwargs).cache_dir).relative_to(empty)
            except Exception:  # noqa: BLE001 - fails without a cache too: the input's fault, raise the first
                raise exc from None
        folder = cache_dir / relative
        if not os.path.lexists(folder):
            raise
        with _locked(folder):  # another process may have remade it meanwhile: then it passes its record
            if os.path.lexists(folder) and folder_problem(folder, source_sha256):
                _discard(folder, f"cannot be opened ({type(exc).__name__})", path)
        return _make(kind, path, cache_dir, kwargs)


def _discard(folder: Path, problem: str, source: Path) -> None:
    warn(f"{folder}: datasets cache {problem}; deleted it and read {source} again")
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    else:
        folder.unlink()


def _write_record(folder: Path, source_sha256: str) -> None:
    files = {p.name: file_sha256(p) for p in sorted(folder.iterdir()) if p.name != RECORD}
    text = json.dumps({"source_sha256": source_sha256, "files": files}, indent=1, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".record.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, folder / RECORD)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on `<folder>.cacheeval.lock` (beside the folder) for the block."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.cacheeval.lock", "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
