"""The row contract: each violation gives its exact one-line message, and every problem of a file
is reported, in line order. The domains come from the registry (the pipeline's use), or any
lowercase name when none are given (the harness used alone)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from domains import domain_names
from pipeline.app.cli import main
from pipeline.harness.contract import check_file, row_schema, validate_file, validate_rows
from pipeline.core.errors import InputError
from pipeline.core.paths import ROW_SCHEMA

DATA = Path(__file__).resolve().parents[1] / "data"
BENCH = DATA / "bench.jsonl"
NAMES = domain_names()
DOMAINS = ", ".join(NAMES)
# cb-<domain>-NNNN, or cb-<domain>-<YYYY>q<N>-NNNN for a quarterly adversarial slice's rows
ID_PATTERN = f"^cb-({'|'.join(NAMES)})-([0-9]{{4}}q[1-4]-)?[0-9]{{4}}$"


def rows() -> list[dict]:
    return [json.loads(line) for line in BENCH.read_text(encoding="utf-8").splitlines()]


def one(row: dict, domains=NAMES) -> list[str]:
    return validate_rows([(7, row)], "b.jsonl", domains=domains)


def test_the_test_bench_is_valid():
    assert check_file(BENCH, domains=NAMES) == (10, [])
    assert check_file(BENCH) == (10, [])
    assert validate_rows(list(enumerate(rows(), 1)), "b.jsonl", domains=NAMES) == []


def test_the_schema_file_names_no_domain_the_registry_fills_them():
    written = json.loads(ROW_SCHEMA.read_text(encoding="utf-8"))["properties"]
    assert len(NAMES) >= 10 and "enum" not in written["domain"]
    assert not [d for d in NAMES if d in written["id"]["pattern"] or d in written["domain"]["pattern"]]
    props = row_schema(NAMES)["properties"]
    assert props["domain"]["enum"] == NAMES and props["id"]["pattern"] == ID_PATTERN
    # A domain the registry gains is accepted at once, with ids of its own.
    row = dict(rows()[0], id="cb-astronomy-0001", domain="astronomy")
    assert one(row) == [f"error: b.jsonl:7: id: 'cb-astronomy-0001' does not match {ID_PATTERN}. "
                        "Use cb-<domain>-<4 digits>, e.g. cb-math-0007.",
                        f"error: b.jsonl:7: domain: 'astronomy' is not allowed. Use one of: {DOMAINS}."]
    assert one(row, domains=[*NAMES, "astronomy"]) == []


def test_standalone_any_lowercase_domain_whose_id_names_it():
    # Without the registry (the harness on its own) a new domain is fine, but the id must name it.
    row = dict(rows()[0], id="cb-astronomy-0001", domain="astronomy")
    assert one(row, domains=None) == []
    assert one(dict(row, domain="math"), domains=None) == [
        "error: b.jsonl:7: id: 'cb-astronomy-0001' names domain 'astronomy' but the row's domain is 'math'. "
        "Use cb-math-<4 digits>."]
    assert one(dict(row, id="cb-Astronomy-0001", domain="Astronomy"), domains=None) == [
        "error: b.jsonl:7: id: 'cb-Astronomy-0001' does not match ^cb-[a-z][a-z0-9_]*-([0-9]{4}q[1-4]-)?[0-9]{4}$. "
        "Use cb-<domain>-<4 digits>, e.g. cb-math-0007.",
        "error: b.jsonl:7: domain: 'Astronomy' does not match ^[a-z][a-z0-9_]*$. Match the pattern."]


def test_wrong_enum():
    row = rows()[0]
    row["domain"] = "maths"
    assert one(row) == [f"error: b.jsonl:7: domain: 'maths' is not allowed. Use one of: {DOMAINS}."]


def test_nested_enum_and_type():
    row = rows()[7]
    row["context_a"][1] = {"role": "bot", "content": 3}
    assert one(row) == [
        "error: b.jsonl:7: context_a[1].role: 'bot' is not allowed. Use one of: system, user, assistant, tool.",
        "error: b.jsonl:7: context_a[1].content: expected string, got integer. Fix the value's type.",
    ]


def test_bad_id_pattern():
    row = rows()[0]
    row["id"] = "cb-math-12"
    assert one(row) == [f"error: b.jsonl:7: id: 'cb-math-12' does not match {ID_PATTERN}. "
                        "Use cb-<domain>-<4 digits>, e.g. cb-math-0007."]


def test_id_names_another_domain():
    row = rows()[3]  # a code row
    row["id"] = "cb-math-0042"
    assert one(row) == ["error: b.jsonl:7: id: 'cb-math-0042' names domain 'math' but the row's domain is "
                        "'code'. Use cb-code-<4 digits>."]


def test_missing_field():
    row = rows()[1]
    del row["rationale"]
    assert one(row) == ["error: b.jsonl:7: rationale: missing required field. Add it "
                        "(every row has the 22 fields of BENCHMARK.md)."]


def test_unknown_field_type_and_empty_text():
    row = rows()[1]
    row["query_b"] = ""
    row["tools_a"] = "get_order"
    row["notes"] = "x"
    assert one(row) == [
        "error: b.jsonl:7: query_b: must not be empty. Write the text.",
        "error: b.jsonl:7: tools_a: expected array or null, got string. Fix the value's type.",
        "error: b.jsonl:7: notes: unknown field. Remove it, or declare it in configs/row.schema.json.",
    ]


@pytest.mark.parametrize("index,binary,message", [
    (4, "HIT", "'HIT' contradicts label 'EQUIV' with verification_method 'policy_no_cache' "
               "(policy_no_cache forces MISS). Set it to 'MISS'."),
    (1, "MISS", "'MISS' contradicts label 'EQUIV' with verification_method 'sympy_equivalence' "
                "(HIT exactly for EQUIV and PARA_SAFE). Set it to 'HIT'."),
    (0, "HIT", "'HIT' contradicts label 'ADVERSARIAL' with verification_method 'sympy_equivalence' "
               "(HIT exactly for EQUIV and PARA_SAFE). Set it to 'MISS'."),
])
def test_wrong_binary_label(index, binary, message):
    row = rows()[index]
    row["binary_label"] = binary
    assert one(row) == [f"error: b.jsonl:7: binary_label: {message}"]


def test_duplicate_id():
    a, b = rows()[:2]
    b["id"] = a["id"]
    assert validate_rows([(2, a), (5, b)], "b.jsonl") == [
        "error: b.jsonl:5: id: duplicate id 'cb-math-0001' (first on line 2). Give every row its own id."]


def test_key_order():
    row = rows()[1]
    swapped = {k: row[k] for k in ("id", "domain", "subcategory", "binary_label", "label")}
    swapped.update(row)
    assert one(swapped) == ["error: b.jsonl:7: binary_label: key out of order: key 4 is 'binary_label', "
                            "expected 'label'. Write the 22 row keys in BENCHMARK.md order, provenance "
                            "fields after them."]


def test_provenance_before_the_row_fields_is_out_of_order():
    row = rows()[0]
    moved = {"licence": row.pop("licence"), **row}
    assert one(moved) == ["error: b.jsonl:7: licence: key out of order: key 1 is 'licence', expected 'id'. "
                          "Write the 22 row keys in BENCHMARK.md order, provenance fields after them."]


def write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def test_every_problem_of_a_file_is_reported_in_line_order(tmp_path):
    good = rows()
    bad_domain = dict(good[2], domain="maths")
    dup = dict(good[3], id=good[0]["id"], domain="math")
    path = write(tmp_path / "b.jsonl", [good[0], "{not json", bad_domain, "", "[1]", dup])
    n, errors = check_file(path, domains=NAMES)
    name = str(path)
    assert n == 4
    assert errors == [
        f"error: {name}:2: <json>: invalid JSON: Expecting property name enclosed in double quotes (column 2). "
        "Write one JSON object per line.",
        f"error: {name}:3: domain: 'maths' is not allowed. Use one of: {DOMAINS}.",
        f"error: {name}:4: <json>: blank line. Remove it.",
        f"error: {name}:5: <json>: expected a JSON object, got array. Write one JSON object per line.",
        f"error: {name}:6: id: duplicate id 'cb-math-0001' (first on line 1). Give every row its own id.",
    ]
    assert validate_file(path, domains=NAMES) == errors


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert validate_file(empty) == [f"error: {empty}:1: <json>: no rows. Write one JSON object per line."]
    with pytest.raises(InputError, match="nope.jsonl: file not found"):
        validate_file(tmp_path / "nope.jsonl")


def test_validate_command(tmp_path, capsys):
    assert main(["validate", str(BENCH)]) == 0
    assert capsys.readouterr().out == f"ok: {BENCH}: 10 rows\n"
    bad = rows()[0]
    bad["difficulty"] = "brutal"
    path = write(tmp_path / "bad.jsonl", [bad])
    assert main(["validate", str(BENCH), str(path), str(tmp_path / "nope.jsonl")]) == 1
    out, err = capsys.readouterr()
    assert out == f"ok: {BENCH}: 10 rows\n"
    assert err.splitlines() == [
        f"error: {path}:1: difficulty: 'brutal' is not allowed. Use one of: easy, medium, hard.",
        f"error: {tmp_path / 'nope.jsonl'}: file not found. Pass the path of a benchmark JSONL file.",
    ]
