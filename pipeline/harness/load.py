"""Reading a benchmark file into Rows, joining a withheld-labels file, and saying exactly which
line is wrong when the input is not a benchmark."""
from __future__ import annotations

import json
from typing import Any

from pipeline.core.errors import InputError
from pipeline.harness.interface import ROW_FIELDS, Row


def _read_jsonl(path: Any) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line; InputError naming file:line otherwise."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found. Pass the path of a benchmark JSONL file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc}). Pass a UTF-8 JSONL file") from None
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno}). "
                             "Write one JSON object per line") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}. "
                             "Write one JSON object per line")
        out.append((lineno, obj))
    return out


def _index_labels(labels_path: Any) -> dict[str, dict]:
    by_id: dict[str, dict] = {}
    for lineno, obj in _read_jsonl(labels_path):
        rid = obj.get("id")
        if not isinstance(rid, str):
            raise InputError(f"{labels_path}:{lineno}: labels record has no string 'id'. "
                             "Give every labels record the id of its row")
        if rid in by_id:
            raise InputError(f"{labels_path}:{lineno}: duplicate id '{rid}'. Keep one labels record per id")
        by_id[rid] = obj
    return by_id


def load_bench(path: Any, labels_path: Any = None) -> list[Row]:
    """Read a benchmark JSONL file into Rows, in file order.

    A test split published without labels is joined with `labels_path` (JSONL records holding
    `id` and the withheld fields) by id; a field present in both files must agree. Every row needs
    all 22 fields after the join; problems raise InputError naming file:line."""
    labels = _index_labels(labels_path) if labels_path is not None else None
    rows: list[Row] = []
    seen: dict[str, int] = {}
    for lineno, obj in _read_jsonl(path):
        where = f"{path}:{lineno}"
        rid = obj.get("id")
        if not isinstance(rid, str) or not rid:
            raise InputError(f"{where}: row has no string 'id'. Give every row its id")
        if rid in seen:
            raise InputError(f"{where}: duplicate id '{rid}' (first on line {seen[rid]}). Give every row its own id")
        seen[rid] = lineno
        if labels is not None and rid in labels:
            obj = _join(obj, labels[rid], where, labels_path)
        missing = [k for k in ROW_FIELDS if k not in obj]
        if missing:
            fix = ("Pass --labels with the labels file of this split" if labels is None and
                   ("label" in missing or "binary_label" in missing) else
                   "Add the fields (see configs/row.schema.json)")
            raise InputError(f"{where}: row '{rid}' is missing {', '.join(missing)}. {fix}")
        if obj["binary_label"] not in ("HIT", "MISS"):
            raise InputError(f"{where}: binary_label is {obj['binary_label']!r}, expected 'HIT' or 'MISS'. "
                             "Fix the row")
        rows.append(Row.from_dict(obj))
    if not rows:
        raise InputError(f"{path}: no rows. Pass a benchmark JSONL file with at least one row")
    return rows


def _join(row: dict, lab: dict, where: str, labels_path: Any) -> dict:
    merged = dict(row)
    for k, v in lab.items():
        if k in merged and merged[k] != v:
            raise InputError(f"{where}: {k} is {merged[k]!r} here but {v!r} in {labels_path}. "
                             "Use the labels file of the same benchmark version")
        merged[k] = v
    return merged
