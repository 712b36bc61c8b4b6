"""Byte-stable output: one JSON object per line, schema key order, fixed separators,
`ensure_ascii=False`, `allow_nan=False`, Python types only, rows sorted by id; every file is
written to a temporary name beside its target and renamed, so a reader never sees half a file."""
from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterable


def dumps_line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _check_plain(value: Any, where: str) -> None:
    """Only plain Python JSON types may reach a committed output (numpy scalars change bytes)."""
    if value is None or type(value) in (str, bool, int, float):
        return
    if type(value) is list:
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]")
        return
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError(f"{where}: non-string key {k!r}")
            _check_plain(v, f"{where}.{k}")
        return
    raise TypeError(f"{where}: {type(value).__name__} is not a plain JSON type")



def jsonl_bytes(rows: Iterable[dict], sort_by_id: bool = True) -> bytes:
    rows = list(rows)
    if sort_by_id:
        rows.sort(key=lambda r: r["id"])
    lines = []
    for r in rows:
        _check_plain(r, r.get("id", "row"))
        lines.append(dumps_line(r))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (os.umask can only be read
    by setting it, which races with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """What open(path, "wb") would leave: an existing file keeps its mode, a new one gets 0666 less
    the umask (mkstemp creates its file 0600, readable by the owner only)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def not_a_regular_file(path: str | Path) -> str | None:
    """What `path` is when it exists and is not a regular file (following symlinks; a symlink to
    nothing counts), else None: such a path never receives an output file."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return "a symlink to nothing" if os.path.islink(p) else None
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{kind} (through a symlink)" if os.path.islink(p) else kind


def output_problem(path: str | Path, inputs: dict[str, str | Path | None] | None = None) -> str | None:
    """Why `path` may not be an output of this run, or None: it must be a new or existing regular file
    (not a device, FIFO, socket or folder, nor a symlink to one), in an existing folder, and none of
    the run's `inputs` (option -> path: the benchmark, the labels, the cache module...)."""
    p = Path(path)
    kind = not_a_regular_file(p)
    if kind:
        return f"is {kind}, not a regular file"
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        return f"folder {folder} does not exist"
    for option, given in (inputs or {}).items():
        try:
            if given is not None and os.path.exists(given) and p.exists() and os.path.samefile(p, given):
                return f"is the run's input {option} {given}"
        except OSError:
            continue
    return None


def folder_problem(path: str | Path, min_free_mb: int) -> str | None:
    """Why files cannot be written into the folder `path` (made when missing), or None: it, or the
    nearest folder that exists above it, is a file, is not writable (a probe file is made and removed:
    a read-only filesystem or missing permission shows only then), or has less than `min_free_mb` MB
    free. Asked before any work, so that a build never fails late on a place the user named."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        return "is a file, not a folder"
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    try:
        fd, name = tempfile.mkstemp(prefix=".cacheeval-probe-", dir=str(probe))
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    free_mb = shutil.disk_usage(probe).free // 2**20
    if free_mb < min_free_mb:
        return f"has {free_mb} MB free on its filesystem, under the {min_free_mb} MB this needs"
    return None


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all: a temporary file beside it, renamed over it. Only
    a regular file (or a new name) is ever replaced; a symlink to a regular file is written through
    (its target is replaced, the link kept); anything else is refused before a byte is written."""
    kind = not_a_regular_file(path)
    if kind:
        raise OSError(f"{path}: refusing to replace {kind} with a file")
    path = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    atomic_write(path, jsonl_bytes(rows))


def write_json(path: Path, obj: Any) -> None:
    _check_plain(obj, path.name)
    atomic_write(path, (json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
