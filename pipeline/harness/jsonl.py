"""Reading a JSONL file that anyone may have written: the one reader of benchmark and labels files
(for `cacheeval eval`, `cacheeval validate` and the build's contract check).

Only a regular file is read (a FIFO, a device or a folder is refused without blocking), as a
stream: `iter_jsonl` holds one line at a time (read_jsonl collects it). Each line
must be UTF-8 and one JSON value with unique keys, finite numbers and at most MAX_DEPTH levels of
nesting; a blank line is a problem. Problems are reported per line, never as a traceback, as
`(line, "<json>: what. How to fix")`; a file that cannot be read at all raises InputError.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import stat
from typing import Any, BinaryIO, Iterator

from pipeline.core.errors import InputError

# Rows nest at most 7 levels today (a tool call's arguments inside a payload); far deeper is an attack
# or a mistake, and Python's parser would overflow its stack near 1,000.
MAX_DEPTH = 32
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class _LineProblem(ValueError):
    """Raised inside the parser's hooks; becomes one problem line."""


def _unique(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _LineProblem(f"duplicate key '{key}' in one object. Keep one of them")
            seen.add(key)
    return out


def _constant(name: str) -> Any:
    raise _LineProblem(f"{name} is not a JSON number. Write a finite number, or null")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _LineProblem(f"number {text[:40]} is out of range. Write a finite number")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # Python refuses integers of more than 4,300 digits
        raise _LineProblem(f"integer of {len(text)} digits is too long. Write a shorter number") from None


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, d)
        if d <= MAX_DEPTH:
            stack.extend((child, d + 1) for child in node)
    return deepest


def parse_line(line: str) -> Any:
    """One JSON value from one line, strictly (see the module docstring); _LineProblem otherwise."""
    try:
        value = json.loads(line, object_pairs_hook=_unique, parse_constant=_constant, parse_float=_float,
                           parse_int=_int)
    except json.JSONDecodeError as exc:
        raise _LineProblem(f"invalid JSON: {exc.msg} (column {exc.colno}). Write one JSON object per line") from None
    except RecursionError:
        raise _LineProblem(f"nested too deeply to parse (at most {MAX_DEPTH} levels). Flatten the value") from None
    # only a line with more brackets than the limit can nest past it (str.count is cheap)
    if line.count("{") + line.count("[") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise _LineProblem(f"nested more than {MAX_DEPTH} levels deep. Flatten the value")
    if "\\u" in line:  # only an escape can make a lone surrogate, which is not text
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _LineProblem("a \\u escape makes a lone surrogate, which is not text. Fix the string") from None
    return value


@contextlib.contextmanager
def open_regular(path: Any, what: str = "benchmark JSONL file") -> Iterator[BinaryIO]:
    """A regular file opened for reading in binary; InputError (one line) for anything else, and
    for a read that fails while it is open."""
    name = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{name}: file not found. Pass the path of a {what}") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot open ({exc.strerror or exc}). Pass a readable {what}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
            raise InputError(f"{name}: is {kind}, not a regular file. Pass the path of a {what}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            yield fh
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror or exc}). Pass a readable {what}") from None
    finally:
        os.close(fd)


def read_bytes(path: Any, what: str = "benchmark JSONL file") -> bytes:
    """The bytes of a regular file; InputError (one line) for anything else."""
    with open_regular(path, what) as fh:
        return fh.read()


def file_sha256(path: Any, what: str = "benchmark JSONL file") -> str:
    """sha256 hex of a regular file's bytes, read as a stream; InputError (one line) for anything else."""
    import hashlib

    digest = hashlib.sha256()
    with open_regular(path, what) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def iter_lines(fh: BinaryIO, digest: Any = None) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line without its newline) of every line of an open file, as
    `bytes.split(b"\n")` cuts them (the newline that ends the last line makes no line of its own);
    `digest` (a hashlib object), when given, is updated with every byte read."""
    offset = 0
    for lineno, raw in enumerate(fh, 1):
        if digest is not None:
            digest.update(raw)
        size = len(raw)
        yield lineno, offset, raw[:-1] if raw.endswith(b"\n") else raw
        offset += size


def parse_raw(raw: bytes) -> Any:
    """One line's value (see parse_line), from its bytes; _LineProblem for every problem, whose
    text is the `<json>: what. How to fix` of read_jsonl."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _LineProblem(f"<json>: not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of "
                           "the line). Save the file as UTF-8") from None
    if not line.strip():
        raise _LineProblem("<json>: blank line. Remove it")
    try:
        return parse_line(line)
    except _LineProblem as exc:
        raise _LineProblem(f"<json>: {exc}") from None


def iter_jsonl(path: Any, what: str = "benchmark JSONL file",
               digest: Any = None) -> Iterator[tuple[int, Any, str | None]]:
    """(line, value, None) for every line that parsed and (line, None, problem) for every other line,
    in line order, read as a stream (one line in memory at a time). An empty file is one problem on
    line 1; a file that cannot be read raises InputError. `digest` (a hashlib object) is updated
    with the file's bytes as they are read."""
    with open_regular(path, what) as fh:
        empty = True
        for lineno, _, raw in iter_lines(fh, digest):
            empty = False
            try:
                yield lineno, parse_raw(raw), None
            except _LineProblem as exc:
                yield lineno, None, str(exc)
        if empty:
            yield 1, None, "<json>: no rows. Write one JSON object per line"


def read_jsonl(path: Any, what: str = "benchmark JSONL file") -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """((line, value) for every line that parsed, (line, problem) for every other line, in line
    order). An empty file is one problem on line 1; a file that cannot be read raises InputError."""
    values: list[tuple[int, Any]] = []
    problems: list[tuple[int, str]] = []
    for lineno, value, problem in iter_jsonl(path, what):
        if problem is None:
            values.append((lineno, value))
        else:
            problems.append((lineno, problem))
    return values, problems
