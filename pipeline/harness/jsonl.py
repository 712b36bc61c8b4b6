"""Reading a JSONL file that anyone may have written: the one reader of benchmark and labels files
(for `cacheeval eval`, `cacheeval validate` and the build's contract check).

Only a regular file is read (a FIFO, a device or a folder is refused without blocking). Each line
must be UTF-8 and one JSON value with unique keys, finite numbers and at most MAX_DEPTH levels of
nesting; a blank line is a problem. Problems are reported per line, never as a traceback, as
`(line, "<json>: what. How to fix")`; a file that cannot be read at all raises InputError.
"""
from __future__ import annotations

import json
import math
import os
import stat
from typing import Any

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


def read_bytes(path: Any, what: str = "benchmark JSONL file") -> bytes:
    """The bytes of a regular file; InputError (one line) for anything else."""
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
            return fh.read()
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror or exc}). Pass a readable {what}") from None
    finally:
        os.close(fd)


def read_jsonl(path: Any, what: str = "benchmark JSONL file") -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """((line, value) for every line that parsed, (line, problem) for every other line, in line
    order). An empty file is one problem on line 1; a file that cannot be read raises InputError."""
    data = read_bytes(path, what)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    values: list[tuple[int, Any]] = []
    problems: list[tuple[int, str]] = []
    if not lines:
        problems.append((1, "<json>: no rows. Write one JSON object per line"))
    for lineno, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append((lineno, f"<json>: not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of "
                                     "the line). Save the file as UTF-8"))
            continue
        if not line.strip():
            problems.append((lineno, "<json>: blank line. Remove it"))
            continue
        try:
            values.append((lineno, parse_line(line)))
        except _LineProblem as exc:
            problems.append((lineno, f"<json>: {exc}"))
    return values, problems
