"""Reading a benchmark file into Rows, joining a withheld-labels file, and refusing anything that
breaks the contract, with every problem on its own line.

Two contracts (pipeline.harness.contract), over the same reader (pipeline.harness.jsonl: regular
files, UTF-8 by line, unique keys, finite numbers, a depth limit):
- strict (the default; the build's output, `cacheeval validate`, the build's reference reports):
  the schema, the enums, the binary rule, unique ids, key order;
- scoring (`strict=False`, `cacheeval eval`): what scoring needs, so a pair file published by
  anyone is scored: an id, query_a, query_b, a label or binary_label; the rest optional and free.
Problems raise BenchmarkInvalid, which the CLI prints as one `error: <file>:<line>: <what>. <how to
fix>.` line per problem.
"""
from __future__ import annotations

from typing import Any, Sequence

from pipeline.core.errors import InputError
from pipeline.harness.contract import Problem, all_problems, scoring_problems, scoring_row
from pipeline.harness.interface import ROW_FIELDS, Row
from pipeline.harness.jsonl import read_jsonl

MAX_SHOWN = 50
# What a split published without labels leaves out; their absence means "pass --labels".
LABEL_FIELDS = ("label", "binary_label")
_RANK = {name: i for i, name in enumerate(ROW_FIELDS)}


class BenchmarkInvalid(InputError):
    """A benchmark (or labels) file breaks the contract. `problems` holds one line per problem,
    `<file>:<line>: <what>. <how to fix>.`; the message is those lines (at most MAX_SHOWN), each
    after the first prefixed `error: ` as the CLI prefixes the first."""

    def __init__(self, problems: Sequence[str], path: str) -> None:
        self.problems = list(problems)
        shown = self.problems[:MAX_SHOWN]
        if len(self.problems) > MAX_SHOWN:
            shown.append(f"{path}: {len(self.problems) - MAX_SHOWN} more problems not shown. "
                         f"Run `cacheeval validate {path}` to list them all.")
        super().__init__("\nerror: ".join(shown))


def _lines(filename: str, problems: list[Problem]) -> list[str]:
    return [p.render(filename)[len("error: "):] for p in problems]


def _index_labels(labels_path: Any) -> tuple[dict[str, tuple[int, dict]], list[str]]:
    """(id -> (line, record), problems) of a labels file: JSONL records holding `id` and withheld fields."""
    name = str(labels_path)
    values, unreadable = _read(labels_path) if str(labels_path).endswith(".parquet") else read_jsonl(labels_path, "labels JSONL file")
    problems = [f"{name}:{line}: {text}." for line, text in unreadable]
    by_id: dict[str, tuple[int, dict]] = {}
    for lineno, obj in values:
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(obj, dict):
            problems.append(f"{name}:{lineno}: <json>: expected a JSON object. Write one labels record per line.")
        elif not isinstance(rid, str):
            problems.append(f"{name}:{lineno}: id: labels record has no string 'id'. "
                            "Give every labels record the id of its row.")
        elif rid in by_id:
            problems.append(f"{name}:{lineno}: id: duplicate id '{rid}' (first on line {by_id[rid][0]}). "
                            "Keep one labels record per id.")
        else:
            by_id[rid] = (lineno, obj)
    return by_id, problems


def _join(row: dict, found: tuple[int, dict], where: str, labels_path: Any) -> tuple[dict, list[str]]:
    """The row with the labels record's fields put in their contract position, and a problem per
    field both files hold with different values."""
    lab_line, lab = found
    conflicts = [f"{where}: {k}: {row[k]!r} here but {v!r} in {labels_path}:{lab_line}. "
                 "Use the labels file of the same benchmark version." for k, v in lab.items() if k in row and row[k] != v]
    # Each withheld field goes before the first row field that follows it in the contract order, so an
    # in-order row stays in order (and a row out of order is still reported as such).
    pending = sorted((k for k in lab if k not in row), key=lambda k: _RANK.get(k, len(_RANK)))
    merged: dict = {}
    for key, value in row.items():
        while pending and _RANK.get(pending[0], len(_RANK)) < _RANK.get(key, len(_RANK)):
            withheld = pending.pop(0)
            merged[withheld] = lab[withheld]
        merged[key] = value
    for key in pending:
        merged[key] = lab[key]
    return merged, conflicts


def load_bench(path: Any, labels_path: Any = None, *, domains: Sequence[str] | None = None,
               strict: bool = True) -> list[Row]:
    """Read a benchmark JSONL file into Rows, in file order, after checking it against the row
    contract with the registered `domains` (None: any lowercase domain name), or with strict=False
    against the scoring contract (see the module docstring; absent fields become "unspecified" or None).

    A test split published without labels is joined with `labels_path` (JSONL records holding `id`
    and the withheld fields) by id; a field present in both files must agree. BenchmarkInvalid
    lists every problem (file:line each); InputError when a file cannot be read at all."""
    name = str(path)
    labels, problems = _index_labels(labels_path) if labels_path is not None else (None, [])
    values, unreadable = _read(path)
    unmatched: list[tuple[int, str]] = []
    if labels is not None:
        joined = []
        for lineno, obj in values:
            rid = obj.get("id") if isinstance(obj, dict) else None
            if isinstance(rid, str) and rid in labels:
                obj, conflicts = _join(obj, labels[rid], f"{name}:{lineno}", labels_path)
                problems += conflicts
            elif isinstance(rid, str) and not (all if strict else any)(k in obj for k in LABEL_FIELDS):
                unmatched.append((lineno, rid))
            joined.append((lineno, obj))
        values = joined
    if strict:
        found = all_problems(values, unreadable, domains)
    else:
        found = sorted([Problem(line, "<json>", "json", text) for line, text in unreadable] + scoring_problems(values),
                       key=lambda p: p.line)
    if labels is None:
        found = _unlabelled(found)
    elif unmatched:
        # A labels file of another split: one line with the count, not a missing field per row.
        lines = {n for n, _ in unmatched}
        found = [p for p in found if not (p.kind == "required" and p.field in LABEL_FIELDS and p.line in lines)]
        n, (first_line, first_id) = len(unmatched), unmatched[0]
        problems.append(f"{labels_path}: no labels for {n} of {len(values)} rows of {name} (the first: {first_id} on "
                        f"line {first_line}). Pass the labels file of this split")
    problems += _lines(name, found)
    if problems:
        raise BenchmarkInvalid(problems, name)
    return [Row.from_dict(obj if strict else scoring_row(obj)) for _, obj in values]


def _read(path: Any) -> tuple[list, list]:
    """JSONL, or the published Parquet form (one split, or the outputs/hf folder)."""
    from pathlib import Path

    from pipeline.harness.parquet import is_parquet_input, read_hf_folder, read_parquet_rows

    if is_parquet_input(path):
        return read_hf_folder(Path(path)) if Path(path).is_dir() else read_parquet_rows(Path(path))
    return read_jsonl(path)


def _unlabelled(problems: list[Problem]) -> list[Problem]:
    """Without a labels file, rows lacking a label field are a split published without labels: one
    line says so (naming every field they lack) instead of one per missing field per row."""
    lacking = {p.line for p in problems if p.kind == "required" and p.field in LABEL_FIELDS}
    if not lacking:
        return problems
    withheld = {p.field for p in problems if p.kind == "required" and p.line in lacking}
    fields = ", ".join(f for f in ROW_FIELDS if f in withheld)
    first, n = min(lacking), len(lacking)
    summary = Problem(first, fields, "required", f"{fields}: missing on {n} row{'s' if n != 1 else ''} (first on "
                                                  f"line {first}): a split published without labels. Pass --labels "
                                                  "with the labels file of this split")
    kept = [p for p in problems if not (p.kind == "required" and p.line in lacking)]
    return sorted([summary, *kept], key=lambda p: p.line)
