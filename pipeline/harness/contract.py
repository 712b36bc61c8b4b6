"""The row contract: every row of a benchmark file against configs/row.schema.json, plus what a
schema cannot say (key order, the binary label's derivation, id uniqueness, id matching domain).
Ids are cb-<domain>-<4 digits>, or cb-<domain>-<YYYY>q<N>-<4 digits> for the rows of a quarterly
adversarial slice (outputs/evolving/), so the two can never collide.

Every problem of a file is reported, one line each: `error: <file>:<line>: <field>: <problem>.
<how to fix>`; a line that is not JSON uses the field `<json>`. Standard library only: the schema is
applied by pipeline.harness.schema and files are read by pipeline.harness.jsonl (regular files,
UTF-8 by line, unique keys, finite numbers, a depth limit), so `cacheeval eval` checks a benchmark
with exactly the rules the build and `cacheeval validate` use.

The domains are not written in the schema file: they come from the domain registry, which this
module does not import (the harness runs without the pipeline). Each entry point takes `domains`:
the pipeline passes the registry's names (`domains.domain_names()`), and the schema's `domain`
becomes an enum of them and its `id` pattern `cb-(<them>)-<4 digits>`. Without names (the harness
used alone, on a benchmark file from anywhere) any lowercase domain name `[a-z][a-z0-9_]*` is
accepted, as the schema file says, and the id must still name the row's own domain.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from pipeline.core.paths import ROW_SCHEMA
from pipeline.core.taxonomy import binary_label
from pipeline.harness.interface import ROW_FIELDS
from pipeline.harness.jsonl import read_jsonl
from pipeline.harness.schema import Validator

_RANK = {name: i for i, name in enumerate(ROW_FIELDS)}
_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
               bool: "boolean", type(None): "null"}
_ID_PREFIX = "cb-"
DOMAIN_NAME = re.compile(r"[a-z][a-z0-9_]*")
QUARTER_ID = "[0-9]{4}q[1-4]"  # the quarter in the ids of a quarterly adversarial slice: cb-math-2026q4-0001


def row_schema(domains: Sequence[str] | None = None) -> dict:
    """configs/row.schema.json, with `domain` an enum of `domains` and `id` the pattern
    cb-(<domains>)-<4 digits>; None keeps the file's rule (any lowercase domain name)."""
    schema = json.loads(ROW_SCHEMA.read_text(encoding="utf-8"))
    if domains is not None:
        bad = [d for d in domains if not DOMAIN_NAME.fullmatch(d)]
        if bad or not domains:
            raise ValueError(f"domain names must match {DOMAIN_NAME.pattern}, got {list(domains)!r}")
        props = schema["properties"]
        props["domain"] = {"enum": list(domains)}
        props["id"] = {"type": "string", "pattern": f"^cb-({'|'.join(domains)})-({QUARTER_ID}-)?[0-9]{{4}}$"}
    return schema


@lru_cache(maxsize=8)
def _validator(domains: tuple[str, ...] | None) -> Validator:
    return Validator(row_schema(domains))


class Problem(NamedTuple):
    """One contract problem of one line: `field` is a field path or `<json>`, `kind` the schema
    keyword or rule that failed (required, enum, type, order, binary_label, id_domain, duplicate_id,
    json), `text` the `<field>: <problem>. <fix>` part of the line."""

    line: int
    field: str
    kind: str
    text: str

    def render(self, filename: str) -> str:
        return f"error: {filename}:{self.line}: {self.text}."


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _schema_problems(row: dict, validator: Validator) -> list[tuple[str, str, str]]:
    """(field path, keyword, problem) for every schema violation of one row."""
    out: list[tuple[str, str, str]] = []
    for err in validator.iter_errors(row):
        where = _path(err.absolute_path)
        kind, inst = err.validator, err.instance
        if kind == "required":
            # jsonschema raises one error per missing name; recompute names to avoid parsing text.
            for name in err.validator_value:
                if isinstance(inst, dict) and name not in inst:
                    field = f"{where}.{name}" if where else name
                    out.append((field, kind, "missing required field. Add it (every row has the 22 fields of BENCHMARK.md)"))
        elif kind == "additionalProperties":
            allowed = err.schema.get("properties", {})
            for name in inst:
                if name not in allowed:
                    field = f"{where}.{name}" if where else name
                    out.append((field, kind, "unknown field. Remove it, or declare it in configs/row.schema.json"))
        elif kind == "enum":
            out.append((where, kind, f"{inst!r} is not allowed. Use one of: {', '.join(map(str, err.validator_value))}"))
        elif kind == "pattern":
            fix = "Use cb-<domain>-<4 digits>, e.g. cb-math-0007" if where == "id" else "Match the pattern"
            out.append((where, kind, f"{inst!r} does not match {err.validator_value}. {fix}"))
        elif kind == "type":
            want = err.validator_value
            want = " or ".join(want) if isinstance(want, list) else want
            out.append((where, kind, f"expected {want}, got {_json_type(inst)}. Fix the value's type"))
        elif kind == "minLength":
            out.append((where, kind, "must not be empty. Write the text"))
        else:
            out.append((where, kind, f"{err.message.splitlines()[0]}. Fix the value"))
    # A missing field is also "missing" for every later check, so each field says it once.
    seen, unique = set(), []
    for item in out:
        if item not in seen:
            seen.add(item)
            unique.append(item)
    return unique


def _order_problem(row: dict) -> tuple[str, str, str] | None:
    keys = list(row)
    expected = [k for k in ROW_FIELDS if k in row] + [k for k in keys if k not in _RANK]
    for pos, (got, want) in enumerate(zip(keys, expected), 1):
        if got != want:
            return (got, "order", f"key out of order: key {pos} is '{got}', expected '{want}'. Write the 22 row keys "
                         "in BENCHMARK.md order, provenance fields after them")
    return None


def _label_problem(row: dict, validator: Validator) -> tuple[str, str, str] | None:
    label, method, given = row.get("label"), row.get("verification_method"), row.get("binary_label")
    v = validator.schema["properties"]
    if (label not in v["label"]["enum"] or method not in v["verification_method"]["enum"]
            or given not in v["binary_label"]["enum"]):
        return None  # the enum errors already say what is wrong
    want = binary_label(label, method)
    if given == want:
        return None
    why = ("policy_no_cache forces MISS" if method == "policy_no_cache"
           else "HIT exactly for EQUIV and PARA_SAFE")
    return ("binary_label", "binary_label", f"'{given}' contradicts label '{label}' with verification_method '{method}' "
                            f"({why}). Set it to '{want}'")


def _id_domain_problem(row: dict, domains: tuple[str, ...] | None) -> tuple[str, str, str] | None:
    rid, domain = row.get("id"), row.get("domain")
    if not isinstance(rid, str) or not isinstance(domain, str) or not rid.startswith(_ID_PREFIX):
        return None
    named = re.sub(f"-{QUARTER_ID}$", "", rid[len(_ID_PREFIX):].rpartition("-")[0])

    def known(name: str) -> bool:   # an unknown name already has its own enum or pattern error
        return name in domains if domains is not None else DOMAIN_NAME.fullmatch(name) is not None

    if known(named) and known(domain) and named != domain:
        return ("id", "id_domain", f"'{rid}' names domain '{named}' but the row's domain is '{domain}'. "
                      f"Use cb-{domain}-<4 digits>")
    return None


def validate_rows(rows: list[tuple[int, Any]], filename: str, *,
                  domains: Sequence[str] | None = None) -> list[str]:
    """Every contract error of already parsed rows, given as (line number, object) pairs, against
    the registered `domains` (None: any lowercase domain name; see the module docstring).

    Returns one line per problem, `error: <file>:<line>: <field>: <problem>`, in line order."""
    return [p.render(filename) for p in row_problems(rows, domains)]


def _ranked(lineno: int, problems: list[tuple[str, str, str]]) -> list[Problem]:
    """One row's problems in field order (the contract's), then in the order they were found."""
    out = []
    for seq, (field, kind, problem) in enumerate(problems):
        top = field.split(".")[0].split("[")[0]
        out.append((_RANK.get(top, len(_RANK)), seq, Problem(lineno, field, kind, f"{field}: {problem}")))
    out.sort(key=lambda t: t[:2])
    return [p for *_, p in out]


def _not_an_object(lineno: int, row: Any) -> Problem:
    return Problem(lineno, "<json>", "json", f"<json>: expected a JSON object, got {_json_type(row)}. Write one "
                                             "JSON object per line")


class _Ids:
    """The first line of every id seen: a later row with the same id is a duplicate."""

    def __init__(self) -> None:
        self.first_line: dict[str, int] = {}

    def problem(self, lineno: int, rid: Any) -> tuple[str, str, str] | None:
        if not isinstance(rid, str):
            return None
        first = self.first_line.setdefault(rid, lineno)
        if first != lineno:
            return ("id", "duplicate_id", f"duplicate id '{rid}' (first on line {first}). Give every row its own id")
        return None


class RowChecker:
    """The build's contract applied one row at a time, in file order (a benchmark is checked as it
    is read, never held whole): `check(line, row)` returns that row's problems in field order,
    duplicate ids included."""

    def __init__(self, domains: Sequence[str] | None = None) -> None:
        self.names = tuple(domains) if domains is not None else None
        self.validator = _validator(self.names)
        self.ids = _Ids()

    def check(self, lineno: int, row: Any) -> list[Problem]:
        if not isinstance(row, dict):
            return [_not_an_object(lineno, row)]
        problems = _schema_problems(row, self.validator)
        for found in (_order_problem(row), _label_problem(row, self.validator), _id_domain_problem(row, self.names),
                      self.ids.problem(lineno, row.get("id"))):
            if found:
                problems.append(found)
        return _ranked(lineno, problems) if problems else []


def row_problems(rows: Iterable[tuple[int, Any]], domains: Sequence[str] | None = None) -> list[Problem]:
    """Every contract problem of already parsed rows, in line order, then field order."""
    checker = RowChecker(domains)
    out = [p for lineno, row in rows for p in checker.check(lineno, row)]
    out.sort(key=lambda p: p.line)   # stable: each row keeps its field order
    return out


def file_problems(path: str | Path, *, domains: Sequence[str] | None = None) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """((line, value) of every parsed line, every problem of the file), read by pipeline.harness.jsonl;
    InputError if the file cannot be read at all."""
    values, unreadable = read_jsonl(path)
    return values, all_problems(values, unreadable, domains)


def all_problems(values: list[tuple[int, Any]], unreadable: list[tuple[int, str]],
                 domains: Sequence[str] | None = None) -> list[Problem]:
    """The lines read_jsonl could not read and the contract problems of the others, in line order."""
    problems = [Problem(line, "<json>", "json", text) for line, text in unreadable]
    # A line is either unreadable or a value, so a stable sort by line keeps each row's own order.
    return sorted(problems + row_problems(values, domains), key=lambda p: p.line)


def check_file(path: str | Path, *, domains: Sequence[str] | None = None) -> tuple[int, list[str]]:
    """(number of rows, contract errors) of a JSONL file against the registered `domains` (None:
    any lowercase domain name); InputError if it cannot be read."""
    values, problems = file_problems(path, domains=domains)
    return len(values), [p.render(str(path)) for p in problems]


def validate_file(path: str | Path, *, domains: Sequence[str] | None = None) -> list[str]:
    """Every contract error of a benchmark JSONL file, one line each (empty when it is valid)."""
    return check_file(path, domains=domains)[1]


# ---- the scoring contract (lenient): what `cacheeval eval` needs to score a pair file from anywhere

SCORING_REQUIRED = ("id", "query_a", "query_b")
# Fields the report groups by: any string (or null) when present, "unspecified" when absent.
SCORING_TEXT_FIELDS = ("domain", "subcategory", "difficulty", "verification_method", "construction_method", "source")


# The optional request fields a cache may see (pipeline.harness.interface.OPTIONAL_FIELDS), typed
# when present: opaque user and tenant ids, a tool_choice as chat APIs take it, the stored status.
OPTIONAL_REQUEST_SCHEMA = {
    **{f"{k}_{s}": {"type": ["string", "null"], "minLength": 1} for k in ("user", "tenant") for s in ("a", "b")},
    **{f"tool_choice_{s}": {"type": ["string", "object", "null"]} for s in ("a", "b")},
    "status_a": {"enum": ["ok", "error", "refusal", None]},
}


@lru_cache(maxsize=1)
def _scoring_validator() -> Validator:
    """configs/row.schema.json cut down to what scoring reads: the id and the two requests (typed as
    in the build, since a cache receives them), the label enums; any other field is free."""
    full = json.loads(ROW_SCHEMA.read_text(encoding="utf-8"))
    props = full["properties"]
    keep = ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a", "tools_b",
            "label", "binary_label")
    schema = {"$schema": full["$schema"], "$defs": full["$defs"], "type": "object", "required": list(SCORING_REQUIRED),
              "properties": {"id": {"$ref": "#/$defs/text"}, **{k: props[k] for k in keep},
                             **{k: {"type": ["string", "null"]} for k in SCORING_TEXT_FIELDS},
                             **OPTIONAL_REQUEST_SCHEMA}}
    return Validator(schema)


def _scoring_label_problems(row: dict) -> list[tuple[str, str, str]]:
    if row.get("label") is None and row.get("binary_label") is None:
        why = ("missing: a row needs a binary_label (HIT or MISS) or a label. Add one, or pass --labels with the "
               "labels file of this split")
        return [("label", "required", why), ("binary_label", "required", why)]
    found = _scoring_label_problem(row)
    return [found] if found else []


def _scoring_label_problem(row: dict) -> tuple[str, str, str] | None:
    """A row needs a binary label, given or derived from its 5-class label; both given must agree
    where the rule is known (a MISS-class label is never a HIT; a known method decides the override)."""
    from pipeline.core.taxonomy import HIT_LABELS, LABELS, VERIFICATION_METHODS  # noqa: PLC0415

    label, given, method = row.get("label"), row.get("binary_label"), row.get("verification_method")
    if label not in LABELS or given not in ("HIT", "MISS"):
        return None  # absent (derived) or an enum error already said
    if method in VERIFICATION_METHODS:
        want = binary_label(label, method)
        why = "policy_no_cache forces MISS" if method == "policy_no_cache" else "HIT exactly for EQUIV and PARA_SAFE"
    elif label not in HIT_LABELS:
        want, why = "MISS", "no policy makes a MISS label a HIT"
    else:
        return None     # a HIT-class label may be MISS by a policy under another name
    if given == want:
        return None
    return ("binary_label", "binary_label", f"'{given}' contradicts label '{label}'"
                                            + (f" with verification_method '{method}'" if method else "")
                                            + f" ({why}). Set it to '{want}'")


class ScoringChecker:
    """The scoring contract (see `scoring_problems`) applied one row at a time, in file order."""

    def __init__(self) -> None:
        self.validator = _scoring_validator()
        self.ids = _Ids()

    def check(self, lineno: int, row: Any) -> list[Problem]:
        if not isinstance(row, dict):
            return [_not_an_object(lineno, row)]
        problems = [(f, k, t.replace("(every row has the 22 fields of BENCHMARK.md)", "(a row needs id, query_a, "
                                     "query_b and a label or binary_label)"))
                    for f, k, t in _schema_problems(row, self.validator)]
        problems += _scoring_label_problems(row)
        found = self.ids.problem(lineno, row.get("id"))
        if found:
            problems.append(found)
        return _ranked(lineno, problems) if problems else []


def scoring_problems(rows: Iterable[tuple[int, Any]]) -> list[Problem]:
    """Every problem of already parsed rows under the scoring contract (see SCORING_REQUIRED): an
    object per line, unique string ids, non-empty string queries, request fields of the build's
    types, known label values, a binary label given or derivable. Key order, id form, domain names,
    verification methods and unknown fields are free."""
    checker = ScoringChecker()
    out = [p for lineno, row in rows for p in checker.check(lineno, row)]
    out.sort(key=lambda p: p.line)
    return out


def scoring_row(row: dict) -> dict:
    """A row that passed `scoring_problems` with every field of the build's contract present: the
    binary label derived where absent, "unspecified" for an absent grouping field, None elsewhere."""
    from pipeline.harness.interface import ROW_FIELDS as FIELDS

    out = {k: row.get(k) for k in FIELDS}
    for k in SCORING_TEXT_FIELDS:
        if out[k] is None:
            out[k] = "unspecified"
    if out["binary_label"] is None:
        out["binary_label"] = binary_label(out["label"], out["verification_method"] or "")
    out.update((k, v) for k, v in row.items() if k not in out)
    return out
