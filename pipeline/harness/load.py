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

A file is read as a stream and checked one row at a time (every problem is still reported), so
memory follows the row count, not the file's size: `load_scored` (what `cacheeval eval` and the
result-cache path use) keeps per row only what scoring needs (`Scored`: the id and the fields the
metrics group and join by) in a `Bench`, whose `pairs()` reads the requests again from the file,
as the cache decides, checking that the file is still the one checked. `load_bench` keeps a Row
per row, for callers that want them. A labels file is indexed by id and byte offset and its
records read again when their rows are joined. Parquet input is the exception: pyarrow reads a
split (or the outputs/hf folder) whole, and a Bench read from it holds the requests in memory.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from pipeline.core.errors import InputError
from pipeline.harness.contract import Problem, RowChecker, ScoringChecker, scoring_row
from pipeline.harness.interface import OPTIONAL_FIELDS, REQUEST_FIELDS, ROW_FIELDS, Pair, Row
from pipeline.harness.jsonl import _LineProblem, iter_jsonl, iter_lines, open_regular, parse_raw, read_jsonl

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


class _Labels:
    """A labels file indexed by id without holding it: JSONL records are read again, by byte offset,
    when their row is joined (a labels file can be as large as the benchmark); Parquet records (read
    whole by pyarrow) are held. `requests`: some record holds a request field (query_*, context_*,
    ...), which the request pass must then join too."""

    def __init__(self, path: Any) -> None:
        self.path, self.name = path, str(path)
        self.index: dict[str, tuple[int, int, int]] = {}      # id -> (line, offset, length): JSONL
        self.held: dict[str, tuple[int, dict]] = {}           # id -> (line, record): Parquet
        self.requests = False
        self.problems: list[str] = []
        self._stack = contextlib.ExitStack()
        self._fh: Any = None

    def read(self) -> "_Labels":
        """Index the file: one problem line per record that cannot be joined (see _index_labels)."""
        if self.name.endswith(".parquet"):
            values, unreadable = _read(self.path)
            self.problems += [f"{self.name}:{line}: {text}." for line, text in unreadable]
            for lineno, obj in values:
                if self._take(lineno, obj):
                    self.held[obj["id"]] = (lineno, obj)
            return self
        # kept open until __exit__: records are read again from it when their rows are joined
        self._fh = fh = self._stack.enter_context(open_regular(self.path, "labels JSONL file"))
        empty = True
        try:
            for lineno, offset, raw in iter_lines(fh):
                empty = False
                try:
                    obj = parse_raw(raw)
                except _LineProblem as exc:
                    self.problems.append(f"{self.name}:{lineno}: {exc}.")
                    continue
                if self._take(lineno, obj):
                    self.index[obj["id"]] = (lineno, offset, len(raw))
        except OSError as exc:
            self._stack.close()
            raise InputError(f"{self.name}: cannot read ({exc.strerror or exc}). Pass a readable labels JSONL "
                             "file") from None
        if empty:
            self.problems.append(f"{self.name}:1: <json>: no rows. Write one JSON object per line.")
        return self

    def _take(self, lineno: int, obj: Any) -> bool:
        rid = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(obj, dict):
            self.problems.append(f"{self.name}:{lineno}: <json>: expected a JSON object. Write one labels record "
                                 "per line.")
        elif not isinstance(rid, str):
            self.problems.append(f"{self.name}:{lineno}: id: labels record has no string 'id'. "
                                 "Give every labels record the id of its row.")
        elif rid in self.index or rid in self.held:
            first = (self.index.get(rid) or self.held[rid])[0]
            self.problems.append(f"{self.name}:{lineno}: id: duplicate id '{rid}' (first on line {first}). "
                                 "Keep one labels record per id.")
        else:
            self.requests = self.requests or any(k in obj for k in REQUEST_FIELDS)
            return True
        return False

    def __contains__(self, rid: str) -> bool:
        return rid in self.index or rid in self.held

    def __enter__(self) -> "_Labels":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._fh = None
        self._stack.close()

    def record(self, rid: str) -> tuple[int, dict]:
        """(line, record) of the id's labels record, read again from the file."""
        if rid in self.held:
            return self.held[rid]
        lineno, offset, length = self.index[rid]
        self._fh.seek(offset)
        raw = self._fh.read(length)
        try:
            obj = parse_raw(raw)
        except _LineProblem:
            obj = None
        if not isinstance(obj, dict) or obj.get("id") != rid:
            raise InputError(f"{self.name}: changed while it was being read (line {lineno}). Run again once the file "
                             "is written")
        return lineno, obj


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


class Scored(NamedTuple):
    """What the scorer keeps of a row: its id and the fields the metrics group and join by. The
    requests are not kept: they are read again from the file when a cache is asked (Bench.pairs)."""

    id: str
    domain: str
    subcategory: str
    label: str | None
    binary_label: str
    difficulty: str
    construction_method: str


SCORED_FIELDS = Scored._fields


class Bench:
    """A checked benchmark as the scorer holds it: a Scored per row (`rows`, by position), and the
    way back to the requests, which a cache receives and nobody keeps: `pairs(run_key)` is a fresh
    pass over the file (JSONL), so a benchmark of any size is scored in memory proportional to its
    row count, not its bytes. A pass checks that the file still is the one checked (each row's id, the
    sha256 of its bytes), else InputError. Parquet input is read whole by pyarrow, so its requests
    are held in memory (`requests`)."""

    def __init__(self, path: Any, rows: list[Scored], sha256: str | None, requests: list[tuple] | None = None,
                 labels_path: Any = None, labels_requests: bool = False) -> None:
        self.path, self.rows, self.sha256, self.requests = path, rows, sha256, requests
        self.labels_path, self.labels_requests = labels_path, labels_requests

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        return self.rows[i]

    def __iter__(self) -> Iterator[Scored]:
        return iter(self.rows)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rows]

    def pairs(self, run_key: str, start: int = 0) -> Iterator[Pair]:
        """The Pair of every row from position `start`, under keys `<run_key>-<position>`, read again."""
        if self.requests is not None:
            for i in range(start, len(self.requests)):
                yield Pair(f"{run_key}-{i:06d}", *self.requests[i])
            return
        name, n, digest = str(self.path), len(self.rows), hashlib.sha256()
        changed = InputError(f"{name}: changed while it was being scored. Run again once the file is written")
        with contextlib.ExitStack() as stack:
            labels = stack.enter_context(_Labels(self.labels_path).read()) if self.labels_requests else None
            fh = stack.enter_context(open_regular(self.path))
            i = -1
            for lineno, _, raw in iter_lines(fh, digest):
                i = lineno - 1   # a checked file holds one row a line
                if i < start:
                    continue
                try:
                    obj = json.loads(raw)   # checked already, so the plain parser reads it the same way
                except (ValueError, RecursionError):
                    obj = None
                if i >= n or not isinstance(obj, dict) or obj.get("id") != self.rows[i].id:
                    raise changed
                if labels is not None and obj["id"] in labels:
                    lab = labels.record(obj["id"])[1]
                    obj = {**{k: lab[k] for k in REQUEST_FIELDS + OPTIONAL_FIELDS if k in lab}, **obj}
                yield Pair(f"{run_key}-{i:06d}", *[obj.get(k) for k in _PAIR_FIELDS])
            if i + 1 != n or (self.sha256 is not None and digest.hexdigest() != self.sha256):
                raise changed


_PAIR_FIELDS = ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a",
                "tools_b") + OPTIONAL_FIELDS   # Pair's positional order after the key


class _Shared(dict):
    """One string object per distinct value (domains, labels, ...): 200,000 rows hold a few dozen."""

    def __missing__(self, key: Any) -> Any:
        self[key] = key
        return key


def _scored_of(obj: dict, strict: bool, shared: _Shared) -> Scored:
    row = obj if strict else scoring_row(obj)
    return Scored(row["id"], *[shared[row[k]] for k in SCORED_FIELDS[1:]])


def _scan(path: Any, labels_path: Any, *, domains: Sequence[str] | None, strict: bool,
          keep: Callable[[dict], Any], digest: Any = None) -> tuple[list, int, bool]:
    """One streamed pass over a benchmark: every line read, joined with its labels record, checked
    against the contract and, while no problem has been seen, passed to `keep`. Returns (what keep
    returned, in file order; rows read; some labels record holds a request field); BenchmarkInvalid
    lists every problem (file:line each) in the order load_bench always gave them."""
    name = str(path)
    checker = RowChecker(domains) if strict else ScoringChecker()
    found: list[Problem] = []
    kept: list = []
    n = 0
    unmatched_n, unmatched_first = 0, None          # rows a labels file of another split has no record for
    lacking_n, lacking_first, withheld = 0, 0, set()  # rows without labels when no labels file is given
    labels = _Labels(labels_path).read() if labels_path is not None else None
    problems = list(labels.problems) if labels is not None else []
    with contextlib.ExitStack() as stack:
        if labels is not None:
            stack.enter_context(labels)
        for lineno, obj, bad in _values(path, digest):
            if bad is not None:
                found.append(Problem(lineno, "<json>", "json", bad))
                kept = []
                continue
            n += 1
            unmatched = False
            if labels is not None:
                rid = obj.get("id") if isinstance(obj, dict) else None
                if isinstance(rid, str) and rid in labels:
                    obj, conflicts = _join(obj, labels.record(rid), f"{name}:{lineno}", labels_path)
                    problems += conflicts
                elif isinstance(rid, str) and not (all if strict else any)(k in obj for k in LABEL_FIELDS):
                    unmatched = True
                    unmatched_n += 1
                    unmatched_first = unmatched_first or (lineno, rid)
            row_found = checker.check(lineno, obj)
            if labels is None and any(p.kind == "required" and p.field in LABEL_FIELDS for p in row_found):
                # a split published without labels: one line for them all, not one per missing field per row
                lacking_n += 1
                lacking_first = lacking_first or lineno
                withheld.update(p.field for p in row_found if p.kind == "required")
                row_found = [p for p in row_found if p.kind != "required"]
                kept = []
            elif row_found and unmatched:
                row_found = [p for p in row_found if not (p.kind == "required" and p.field in LABEL_FIELDS)]
            if row_found or unmatched:
                found += row_found
                kept = []
            elif not (found or problems or lacking_n or unmatched_n):
                kept.append(keep(obj))
    if lacking_n:
        fields = ", ".join(f for f in ROW_FIELDS if f in withheld)
        s = "s" if lacking_n != 1 else ""
        summary = Problem(lacking_first, fields, "required", f"{fields}: missing on {lacking_n} row{s} (first on line "
                                                             f"{lacking_first}): a split published without labels. "
                                                             "Pass --labels with the labels file of this split")
        found = sorted([summary, *found], key=lambda p: p.line)
    if unmatched_n:
        first_line, first_id = unmatched_first
        problems.append(f"{labels_path}: no labels for {unmatched_n} of {n} rows of {name} (the first: {first_id} on "
                        f"line {first_line}). Pass the labels file of this split")
    problems += _lines(name, found)
    if problems:
        raise BenchmarkInvalid(problems, name)
    return kept, n, labels is not None and labels.requests


def _values(path: Any, digest: Any = None) -> Iterator[tuple[int, Any, str | None]]:
    """(line, value, None) or (line, None, problem) of every row: JSONL streamed, Parquet read whole."""
    if _is_parquet(path):
        values, unreadable = _read(path)
        # by line, an unreadable value's problem before the row problems of the same number (the hf
        # folder numbers each file's rows apart), as the contract check has always listed them
        merged = [(line, None, text) for line, text in unreadable] + [(line, value, None) for line, value in values]
        merged.sort(key=lambda t: t[0])
        yield from merged
        return
    yield from iter_jsonl(path, digest=digest)


def load_bench(path: Any, labels_path: Any = None, *, domains: Sequence[str] | None = None,
               strict: bool = True) -> list[Row]:
    """Read a benchmark JSONL file into Rows, in file order, after checking it against the row
    contract with the registered `domains` (None: any lowercase domain name), or with strict=False
    against the scoring contract (see the module docstring; absent fields become "unspecified" or None).

    A test split published without labels is joined with `labels_path` (JSONL records holding `id`
    and the withheld fields) by id; a field present in both files must agree. BenchmarkInvalid
    lists every problem (file:line each); InputError when a file cannot be read at all. The file
    is read as a stream (`load_scored` keeps only what scoring needs; this keeps every Row)."""
    def keep(obj: dict) -> Row:
        return Row.from_dict(obj if strict else scoring_row(obj))

    return _scan(path, labels_path, domains=domains, strict=strict, keep=keep)[0]


def load_scored(path: Any, labels_path: Any = None, *, domains: Sequence[str] | None = None, strict: bool = True,
                sha256: str | None = None) -> Bench:
    """The benchmark checked as `load_bench` checks it, read as a stream and held as a Bench: per
    row only what scoring needs (Scored), the requests read again from the file when a cache is
    asked. `sha256`: what the caller keyed on (the file's sha256); a file whose bytes, read here,
    hash to something else changed meanwhile (InputError)."""
    shared = _Shared()
    if _is_parquet(path):
        requests: list[tuple] = []

        def keep_parquet(obj: dict) -> Scored:
            requests.append(tuple(obj.get(k) for k in _PAIR_FIELDS))
            return _scored_of(obj, strict, shared)

        rows = _scan(path, labels_path, domains=domains, strict=strict, keep=keep_parquet)[0]
        return Bench(path, rows, None, requests)
    digest = hashlib.sha256()
    rows, _, labels_requests = _scan(path, labels_path, domains=domains, strict=strict, digest=digest,
                                     keep=lambda obj: _scored_of(obj, strict, shared))
    if sha256 is not None and digest.hexdigest() != sha256:
        raise InputError(f"{path}: changed while it was being read. Run again once the file is written")
    return Bench(path, rows, digest.hexdigest(), None, labels_path, labels_requests)


def _is_parquet(path: Any) -> bool:
    from pipeline.harness.parquet import is_parquet_input

    return is_parquet_input(path)


def _read(path: Any) -> tuple[list, list]:
    """JSONL, or the published Parquet form (one split, or the outputs/hf folder)."""
    from pathlib import Path

    from pipeline.harness.parquet import is_parquet_input, read_hf_folder, read_parquet_rows

    if is_parquet_input(path):
        return read_hf_folder(Path(path)) if Path(path).is_dir() else read_parquet_rows(Path(path))
    return read_jsonl(path)
