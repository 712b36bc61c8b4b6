"""Checked reading of one corpus folder: every file read is hashed into the manifest, every problem
becomes a one-line `InputError` naming the file and the line or record.

Tables are read with Hugging Face `datasets` in offline mode (`load_dataset("json"|"csv"|
"parquet", data_files=...)`), through its cache under the one cache root (<root>/hf-datasets, or
$HF_DATASETS_CACHE when set), verified before it serves (sources.hf_cache).
Before a file reaches `datasets` we check the cheap things `datasets` reports badly or not at all
(missing, a folder, unreadable, empty, not UTF-8, a wrong header, a wrong field count), so the
user gets a line number instead of a pandas or Arrow traceback.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from pipeline.core import settings
from sources import hf_cache
from sources.base import bad

_READ_FIX = "Restore the file from its upstream release"


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


class Reader:
    """Reads the files of one corpus folder (`root`) and records each file's sha256 and size in
    `manifest` under `<corpus>/<relative path>`; tables go through the `datasets` cache
    `datasets_cache` (default: the one the process's settings name)."""

    def __init__(self, corpus: str, root: Path, manifest: dict[str, dict[str, Any]] | None = None,
                 datasets_cache: Path | None = None) -> None:
        self.corpus = corpus
        self.root = root
        self.manifest: dict[str, dict[str, Any]] = {} if manifest is None else manifest
        self.datasets_cache = datasets_cache

    def _hf_load(self, kind: str, path: Path, source_sha256: str, **kwargs: Any):
        """One file through `load_dataset`, as a `datasets.Dataset`, from the verified cache."""
        cache = self.datasets_cache or settings.hf_datasets_cache()
        return hf_cache.load(kind, path, source_sha256, cache, **kwargs)

    def path(self, rel: str) -> Path:
        return self.root / rel

    def count(self, rel: str, reason: str, n: int = 1) -> None:
        """Count an upstream quirk that a loader's documented rule resolved (a skipped or renamed
        record) under the file's manifest entry, so that it is reported, never silent."""
        entry = self.manifest.setdefault(f"{self.corpus}/{rel}", {})
        quirks = entry.setdefault("quirks", {})
        quirks[reason] = quirks.get(reason, 0) + n
        entry["quirks"] = dict(sorted(quirks.items()))

    def sha256(self, rel: str) -> str:
        """The sha256 that `raw` recorded for the file (what its `datasets` cache must be made from)."""
        return self.manifest[f"{self.corpus}/{rel}"]["sha256"]

    # ---- bytes and text ---------------------------------------------------------------------
    def raw(self, rel: str) -> bytes:
        """The file's bytes, after checking it is a readable, non-empty regular file."""
        path = self.path(rel)
        if path.is_symlink() and not path.exists():
            raise bad(path, "file", "cannot open: broken symbolic link", "Point the link at an existing file or copy the file in")
        if not path.exists():
            raise bad(path, "file", "file not found", _READ_FIX)
        if path.is_dir():
            raise bad(path, "file", "is a folder where a file is expected", "Replace the folder by the upstream file of that name")
        try:
            data = path.read_bytes()
        except PermissionError:
            raise bad(path, "file", "permission denied", f"Make it readable (chmod a+r {path})") from None
        except OSError as exc:
            raise bad(path, "file", f"cannot read: {exc.strerror or exc}", _READ_FIX) from None
        if not data.strip(b"\xef\xbb\xbf \t\r\n"):
            raise bad(path, "file", "file is empty", _READ_FIX)
        self.manifest[f"{self.corpus}/{rel}"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        return data

    def text(self, rel: str) -> str:
        """The file decoded as UTF-8 (a leading BOM is dropped: MRPC ships one)."""
        data = self.raw(rel)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise bad(self.path(rel), f"line {_line_of(data, exc.start)}",
                      f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                      "Re-encode the file as UTF-8 (e.g. iconv -t UTF-8)") from None
        return text[1:] if text.startswith("\ufeff") else text

    # ---- JSON --------------------------------------------------------------------------------
    def jsonl(self, rel: str) -> list[tuple[str, dict[str, Any]]]:
        """("line N", object) for every non-blank line of a JSON Lines file."""
        text = self.text(rel)
        path = self.path(rel)
        lines = [i for i, line in enumerate(text.split("\n"), 1) if line.strip()]
        try:
            rows = self._hf_load("json", path, self.sha256(rel)).to_list()
        except Exception:  # noqa: BLE001 - diagnosed below, line by line
            # `datasets` failed (bad syntax, or no single Arrow type fits a field across lines):
            # parse each line ourselves so the error names the line, and when every line is
            # valid JSON let the loader's field checks name the offending record.
            rows = [_json_line(path, n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
        if len(rows) != len(lines):
            rows = [_json_line(path, n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
        for n, row in zip(lines, rows):
            if not isinstance(row, dict):
                raise bad(path, f"line {n}", f"wrong JSON type: expected an object, got {_jtype(row)}",
                          "Each line of a JSON Lines file must be one JSON object")
        return [(f"line {n}", row) for n, row in zip(lines, rows)]

    def json_records(self, rel: str, field: str | None = None) -> list[dict[str, Any]]:
        """The objects of a JSON array file (or of the array under `field`), via `datasets`."""
        text = self.text(rel)
        path = self.path(rel)
        want = f"an object with a '{field}' array" if field else "an array of objects"
        # `datasets` reads any top-level object as a one-row table, so check the shape ourselves.
        if text.lstrip()[:1] != ("{" if field else "["):
            whole = self.json_value(rel, text)
            raise bad(path, "file", f"wrong JSON type: expected {want}, got {_jtype(whole)}", "Use the upstream file unchanged")
        try:
            rows = self._hf_load("json", path, self.sha256(rel), **({"field": field} if field else {})).to_list()
        except Exception:  # noqa: BLE001 - the json module names the line, or the record checks do
            whole = self.json_value(rel, text)
            rows = whole.get(field) if field else whole
        if not isinstance(rows, list):
            raise bad(path, "file", f"wrong JSON type: expected {want}", "Use the upstream file unchanged")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise bad(path, f"record {i}", f"wrong JSON type: expected an object, got {_jtype(row)}",
                          "Use the upstream file unchanged")
        return rows

    def json_value(self, rel: str, text: str | None = None) -> Any:
        """A whole JSON document parsed with the json module (for shapes `datasets` cannot
        represent as a table: a single object keyed by id, a mapping of lists)."""
        text = self.text(rel) if text is None else text
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise bad(self.path(rel), f"line {exc.lineno}", f"invalid JSON: {exc.msg}",
                      "Fix the syntax or restore the upstream file") from None

    # ---- delimited text ----------------------------------------------------------------------
    def table(self, rel: str, columns: Sequence[str], *, sep: str, header: bool,
              quoted: bool) -> list[tuple[str, dict[str, str]]]:
        """("line N", row) for each record of a CSV/TSV file with columns `columns` (N: the line
        where the record starts), every value a string. `header`: the file's first line must name exactly `columns`. `quoted`: fields
        may be quoted and hold newlines (BANKING77); otherwise quotes are text (MRPC, PAWS)."""
        text = self.text(rel)
        path = self.path(rel)
        quoting = csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE
        # Check header and field counts with the csv module first: it gives line numbers.
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quoting=quoting, strict=True)
        positions: list[int] = []
        header_seen = not header
        end = 0  # line where the previous record ended: a quoted record may span lines
        try:
            for fields in reader:
                start, end = end + 1, reader.line_num
                if not fields or fields == [""]:
                    continue  # a blank line (upstream files end with one)
                if not header_seen:
                    if [f.strip() for f in fields] != list(columns):
                        raise bad(path, f"line {reader.line_num}", f"wrong or missing header {sep.join(fields)[:80]!r}, "
                                  f"expected {sep.join(columns)!r}", "Restore the upstream header row")
                    header_seen = True
                    continue
                if len(fields) != len(columns):
                    raise bad(path, f"line {start}", f"{len(fields)} fields, expected {len(columns)} "
                              f"({', '.join(columns)})", "Give every row exactly these columns"
                              + (" (quote fields holding the separator)" if quoted else ""))
                positions.append(start)
        except csv.Error as exc:
            raise bad(path, f"line {reader.line_num}", f"malformed {'CSV' if sep == ',' else 'TSV'}: {exc}",
                      "Fix the quoting or restore the upstream file") from None
        if not positions:
            raise bad(path, "file", "no records", _READ_FIX)
        datasets = hf_cache.datasets_module()
        feats = datasets.Features({c: datasets.Value("string") for c in columns})
        ds = self._hf_load("csv", path, self.sha256(rel), sep=sep, header=0 if header else None,
                           column_names=None if header else list(columns), quoting=quoting, features=feats,
                           keep_default_na=False, na_filter=False, encoding="utf-8-sig")
        rows = ds.to_list()
        if len(rows) != len(positions):  # the two parsers disagree: trust neither, say so
            raise bad(path, "file", f"read {len(rows)} records with datasets but {len(positions)} with the csv module",
                      "Check the file for stray quotes or line breaks")
        return [(f"line {n}", row) for n, row in zip(positions, rows)]

    # ---- parquet -----------------------------------------------------------------------------
    def parquet(self, rel: str, columns: Sequence[str]) -> list[dict[str, Any]]:
        """The rows of a parquet file, which must hold at least `columns`."""
        data = self.raw(rel)
        path = self.path(rel)
        if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
            raise bad(path, "file", "not a parquet file (no PAR1 magic bytes)", "Restore the upstream parquet file")
        try:
            ds = self._hf_load("parquet", path, self.sha256(rel))
        except Exception as exc:  # noqa: BLE001
            raise bad(path, "file", f"unreadable parquet: {str(exc).splitlines()[0][:200]}",
                      "Restore the upstream parquet file") from None
        missing = [c for c in columns if c not in ds.column_names]
        if missing:
            raise bad(path, "file", f"missing column(s) {', '.join(missing)}",
                      f"The file must hold the upstream columns {', '.join(columns)}")
        return ds.to_list()


def _json_line(path: Path, n: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise bad(path, f"line {n}", f"invalid JSON (truncated or malformed line): {exc.msg}",
                  "Each line must be one complete JSON object; restore the line from upstream") from None


def _jtype(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


# ---- field checks shared by the loaders -----------------------------------------------------
def field(path: Path, where: str, row: dict[str, Any], name: str, kind: type | tuple[type, ...] = str,
          *, required: bool = True, nonempty: bool = False) -> Any:
    """`row[name]`, checked for presence and type; the error names the file and line/record."""
    value = row.get(name)
    if value is None:
        if required:
            raise bad(path, where, f"missing field '{name}'", f"Every record needs '{name}'")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise bad(path, where, f"field '{name}' has wrong type {_jtype(value)}, expected {want}",
                  "Use the upstream file unchanged")
    if nonempty and isinstance(value, str) and not value.strip():
        raise bad(path, where, f"field '{name}' is empty", f"Give every record a non-empty '{name}'")
    return value


def label01(path: Path, where: str, value: str) -> int:
    """A binary label written "0" or "1"."""
    if value.strip() not in ("0", "1"):
        raise bad(path, where, f"unknown label value {value!r}", "Labels must be 0 or 1 (a header row in a headerless file shows up here)")
    return int(value)


def files_matching(root: Path, patterns: Iterable[str]) -> list[str]:
    """Relative paths under `root` that match any glob pattern, sorted (symlinks included, even
    broken ones, so that reading them reports the problem)."""
    found: set[str] = set()
    for pattern in patterns:
        for p in root.glob(pattern):
            found.add(p.relative_to(root).as_posix())
    return sorted(found)
