"""Publishing a built output folder in one step: a reader (or a kill) sees the old folder or the new
one, never a mix.

A build stages its whole output in a work folder beside the target (same filesystem), named
`.<target>.build-<pid>-<random>`. On success the staged folder and the target are exchanged with one
`renameat2(RENAME_EXCHANGE)` system call (Linux); the old contents, now under the work folder's
name, are then deleted. Files in the target that no build wrote (not listed in its manifest, e.g. a
README of the user's) are copied into the staged folder first, so they survive. Where the exchange
is not supported, the fallback is two renames (target -> .<target>.old-<pid>, staged -> target):
a kill between them leaves no target, and the next build puts the `.old` folder back before it
starts (recover()). Work folders of builds that were killed (their process is gone) are removed
by the next build, and a build removes its own on success and on failure.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_WORK = re.compile(r"^\.(?P<name>.+)\.(?P<kind>build|old)-(?P<pid>\d+)(-[A-Za-z0-9_]+)?$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(target: Path) -> None:
    """Undo what a killed build left beside `target`: put a displaced old folder back when the
    target is missing, and delete work folders of processes that no longer run."""
    parent = target.parent
    if not parent.is_dir():
        return
    for entry in sorted(parent.iterdir()):
        m = _WORK.match(entry.name)
        if not m or m.group("name") != target.name or _alive(int(m.group("pid"))):
            continue
        if m.group("kind") == "old" and not target.exists():
            entry.rename(target)  # the fallback's first rename happened, its second did not
        else:
            shutil.rmtree(entry, ignore_errors=True)


def work_dir(target: Path) -> Path:
    """A fresh work folder beside `target` (created, with the target's parent, if needed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    recover(target)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.build-{os.getpid()}-", dir=target.parent))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False when the system cannot (then nothing changed)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: this filesystem or kernel cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(b))


def _foreign(target: Path, staged: Path) -> list[Path]:
    """Files in `target` that no build wrote: not listed in its manifest, not staged now."""
    try:
        listed = set(json.loads((target / "manifest.json").read_text(encoding="utf-8"))["outputs"]) | {"manifest.json"}
    except (OSError, ValueError, KeyError, TypeError):
        listed = {"manifest.json"}
    out = []
    for p in sorted(target.rglob("*")):
        rel = p.relative_to(target).as_posix()
        if p.is_file() and rel not in listed and not (staged / rel).exists():
            out.append(p)
    return out


def publish(staged: Path, target: Path) -> None:
    """Make `staged` (a folder beside `target`) the target, in one step."""
    if not target.exists():
        staged.rename(target)
        return
    if not target.is_dir():
        raise NotADirectoryError(f"{target}: exists and is not a folder")
    for p in _foreign(target, staged):
        dest = staged / p.relative_to(target)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dest)
    mode = target.stat().st_mode & 0o7777
    os.chmod(staged, mode)
    if _exchange(staged, target):
        shutil.rmtree(staged, ignore_errors=True)  # now the old contents
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    target.rename(old)
    staged.rename(target)
    shutil.rmtree(old, ignore_errors=True)
