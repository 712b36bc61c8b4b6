"""Reading the published Hugging Face form of the benchmark (outputs/hf/, pipeline/stages/hf_dataset.py):
one Parquet split, or the whole folder (train + validation + test joined with its labels).

Every column is a string; the fields that hold JSON values in the JSONL form are JSON text here
(JSON_TEXT_FIELDS) and are parsed back with the same strict parser as a JSONL line, so a row read
from Parquet is checked by the same contract as one read from JSONL. A row's "line" in a problem
is its 1-based position in its file. pyarrow is imported only when a Parquet input is given: the
harness itself stays standard-library.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.core.errors import InputError

JSON_TEXT_FIELDS = ("context_a", "context_b", "tools_a", "tools_b", "verification_payload", "provenance")
SPLIT_FILES = {"train": "data/train.parquet", "validation": "data/dev.parquet", "test": "data/test.parquet",
               "test_labels": "data/test_labels.parquet"}


def is_parquet_input(path: Any) -> bool:
    p = Path(path)
    return p.suffix == ".parquet" or (p.is_dir() and (p / SPLIT_FILES["train"]).is_file())


def read_parquet_rows(path: Path) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """(row number, dict) for every row, (row number, problem) for every value that is not valid."""
    from pipeline.harness.jsonl import _LineProblem, parse_line

    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow. Install it (pip install pyarrow) or pass the "
                         "JSONL form (outputs/cachebench.jsonl)") from None
    if not path.is_file():
        raise InputError(f"{path}: not a regular file. Pass a .parquet file or the outputs/hf folder")
    try:
        table = pq.read_table(str(path))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a damaged file
        raise InputError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {str(exc)[:120]}). "
                         "Rebuild it with `cacheeval build` or pass the JSONL form") from None
    values, problems = [], []
    for n, record in enumerate(table.to_pylist(), 1):
        row, bad = {}, False
        for key, value in record.items():
            if key in JSON_TEXT_FIELDS and isinstance(value, str):
                try:
                    value = parse_line(value)
                except _LineProblem as exc:
                    problems.append((n, f"{key}: not valid JSON text ({exc})"))
                    bad = True
                    continue
            row[key] = value
        if not bad:
            values.append((n, row))
    if not values and not problems:
        problems.append((1, "<parquet>: no rows. Pass a split that holds rows"))
    return values, problems


def read_hf_folder(folder: Path) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """Every row of the published dataset: train, validation, and test joined with its labels by id;
    rows sorted by id (the JSONL file's order); a row's number is its position in that order."""
    rows, problems = [], []
    for split in ("train", "validation"):
        values, bad = read_parquet_rows(folder / SPLIT_FILES[split])
        rows += [r for _, r in values]
        problems += [(n, f"{SPLIT_FILES[split]}: {p}") for n, p in bad]
    test, bad = read_parquet_rows(folder / SPLIT_FILES["test"])
    problems += [(n, f"{SPLIT_FILES['test']}: {p}") for n, p in bad]
    labels, bad = read_parquet_rows(folder / SPLIT_FILES["test_labels"])
    problems += [(n, f"{SPLIT_FILES['test_labels']}: {p}") for n, p in bad]
    by_id = {r.get("id"): r for _, r in labels}
    for n, row in test:
        found = by_id.get(row.get("id"))
        if found is None:
            problems.append((n, f"{SPLIT_FILES['test']}: id {row.get('id')!r} has no row in {SPLIT_FILES['test_labels']}. "
                                "Rebuild outputs/hf with `cacheeval build`"))
            continue
        rows.append({**row, **{k: v for k, v in found.items() if k != "id"}})
    from pipeline.harness.interface import ROW_FIELDS

    rank = {f: i for i, f in enumerate(ROW_FIELDS)}
    ordered = [dict(sorted(r.items(), key=lambda kv: rank.get(kv[0], len(rank)))) for r in rows]
    ordered.sort(key=lambda r: str(r.get("id")))
    return list(enumerate(ordered, 1)), problems
