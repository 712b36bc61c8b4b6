"""`cacheeval eval --bench` holds a benchmark to the build's row contract (issue #12, item 4):
every way a hostile file got through (exit 0) or crashed (a traceback) or hung is now one line per
problem, `error: <file>:<line>: <what>. <how to fix>.`, and exit 1. Also: the standard-library
schema evaluator agrees with jsonschema, and refuses a keyword it does not implement."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pipeline.app.cli import main
from pipeline.harness import load_bench
from pipeline.harness.jsonl import MAX_DEPTH
from pipeline.harness.load import MAX_SHOWN, BenchmarkInvalid
from pipeline.harness.schema import SchemaError, Validator

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "data" / "bench.jsonl"


def rows() -> list[dict]:
    return [json.loads(line) for line in BENCH.read_text(encoding="utf-8").splitlines()]


def write(path: Path, lines: list) -> Path:
    path.write_bytes(b"".join((x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode())
                              + b"\n" for x in lines))
    return path


def with_row2(**changes) -> list:
    out = rows()
    out[1].update(changes)
    return out


def raw_row2(tail: str) -> list[str]:
    """The bench with row 2's closing brace replaced by `tail` (a raw JSON fragment)."""
    lines = [json.dumps(r) for r in rows()]
    lines[1] = lines[1][:-1] + tail
    return lines


def eval_err(capsys, path: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["eval", "--bench", str(path), "--baseline", "exact_match", *argv])
    out, err = capsys.readouterr()
    return code, out, err


CASES = {
    # accepted with exit 0 before
    "binary_label contradicts the label": (
        with_row2(binary_label="MISS"),
        "binary_label: 'MISS' contradicts label 'EQUIV' with verification_method 'sympy_equivalence' (HIT exactly "
        "for EQUIV and PARA_SAFE). Set it to 'HIT'."),
    "unknown label": (with_row2(label="SAME"),
                      "label: 'SAME' is not allowed. Use one of: EQUIV, PARA_SAFE, RELATED_UNSAFE, ADVERSARIAL, "
                      "UNRELATED."),
    "null query_a": (with_row2(query_a=None), "query_a: expected string, got null. Fix the value's type."),
    "numeric query_a": (with_row2(query_a=42), "query_a: expected string, got integer. Fix the value's type."),
    "unknown domain": (with_row2(domain="maths"), "domain: 'maths' is not allowed. Use one of: qa_factual, "
                       "qa_open, math, code, conversational, tool, creative, personalized, multi_turn, multilingual."),
    "duplicate JSON key": (raw_row2(', "label": "UNRELATED"}'),
                           "<json>: duplicate key 'label' in one object. Keep one of them."),
    # ended in a traceback before
    "deeply nested JSON": (raw_row2(', "licence": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                           f"<json>: nested too deeply to parse (at most {MAX_DEPTH} levels). Flatten the value."),
    "nested past the limit": (raw_row2(', "licence": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}"),
                              f"<json>: nested more than {MAX_DEPTH} levels deep. Flatten the value."),
    "NaN": (raw_row2(', "provenance": {"difficulty_votes": {"a": NaN}}}'),
            "<json>: NaN is not a JSON number. Write a finite number, or null."),
    "-Infinity": (raw_row2(', "provenance": {"difficulty_votes": {"a": -Infinity}}}'),
                  "<json>: -Infinity is not a JSON number. Write a finite number, or null."),
    "a number that overflows": (raw_row2(', "provenance": {"difficulty_votes": {"a": 1e999}}}'),
                                "<json>: number 1e999 is out of range. Write a finite number."),
    "an integer Python refuses": (raw_row2(', "provenance": {"difficulty_votes": {"a": ' + "9" * 5000 + "}}}"),
                                  "<json>: integer of 5000 digits is too long. Write a shorter number."),
    # never checked before
    "a lone surrogate": (raw_row2(', "licence": "\\ud800"}'),
                         "<json>: a \\u escape makes a lone surrogate, which is not text. Fix the string."),
    "an empty query": (with_row2(query_b=""), "query_b: must not be empty. Write the text."),
    "an unknown field": (with_row2(notes="x"),
                         "notes: unknown field. Remove it, or declare it in configs/row.schema.json."),
    "a blank line": (rows()[:1] + [""] + rows()[1:], "<json>: blank line. Remove it."),
    "a duplicate id": (with_row2(id="cb-math-0001"),
                       "id: duplicate id 'cb-math-0001' (first on line 1). Give every row its own id."),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_problem_is_one_line_with_file_line_and_fix(tmp_path, capsys, case):
    lines, problem = CASES[case]
    path = write(tmp_path / "bench.jsonl", lines)
    code, out, err = eval_err(capsys, path, "--json", str(tmp_path / "r.json"))
    assert (code, out) == (1, "")
    assert err == f"error: {path}:2: {problem}\n"
    assert not (tmp_path / "r.json").exists()


def test_non_utf8_names_the_line_not_a_byte_offset(tmp_path, capsys):
    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8") for r in rows()]
    lines[3] = lines[3].replace(b'"query_a": "', b'"query_a": "caf\xe9 ', 1)  # Latin-1
    path = write(tmp_path / "bench.jsonl", lines)
    code, _, err = eval_err(capsys, path)
    column = lines[3].index(b"\xe9") + 1
    assert code == 1
    assert err == (f"error: {path}:4: <json>: not UTF-8 (byte 0xe9 at byte {column} of the line). "
                   "Save the file as UTF-8.\n")


def test_a_fifo_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "bench.fifo"
    os.mkfifo(fifo)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(code=main(["eval", "--bench", str(fifo), "--baseline",
                                                                      "exact_match"])), daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock the reader so the test run can end, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("cacheeval eval waited on a FIFO")
    assert result["code"] == 1
    assert capsys.readouterr().err == (f"error: {fifo}: is a FIFO, not a regular file. "
                                       "Pass the path of a benchmark JSONL file\n")


@pytest.mark.parametrize("target,kind", [("tests", "a folder"), ("/dev/null", "a character device")])
def test_only_regular_files_are_read(capsys, target, kind):
    # (a folder is read only when it is the published Parquet form, outputs/hf: test_parquet_input.py)
    code, _, err = eval_err(capsys, Path(target))
    assert code == 1 and err == f"error: {target}: is {kind}, not a regular file. Pass the path of a benchmark JSONL file\n"


def test_every_problem_is_listed_and_a_flood_is_cut(tmp_path, capsys):
    lines = with_row2(label="SAME", query_a=None)
    lines[4]["difficulty"] = "brutal"
    path = write(tmp_path / "bench.jsonl", lines)
    code, _, err = eval_err(capsys, path)
    assert code == 1 and err.splitlines() == [
        f"error: {path}:2: label: 'SAME' is not allowed. Use one of: EQUIV, PARA_SAFE, RELATED_UNSAFE, "
        "ADVERSARIAL, UNRELATED.",
        f"error: {path}:2: query_a: expected string, got null. Fix the value's type.",
        f"error: {path}:5: difficulty: 'brutal' is not allowed. Use one of: easy, medium, hard.",
    ]
    many = [dict(rows()[0], id=f"cb-math-{i:04d}", difficulty="brutal") for i in range(1, MAX_SHOWN + 8)]
    write(path, many)
    code, _, err = eval_err(capsys, path)
    assert code == 1 and len(err.splitlines()) == MAX_SHOWN + 1
    assert err.splitlines()[-1] == (f"error: {path}: 7 more problems not shown. Run `cacheeval validate {path}` "
                                    "to list them all.")


def test_the_labels_file_is_checked_too(tmp_path, capsys):
    full = rows()
    public = write(tmp_path / "test.jsonl", [{k: v for k, v in r.items() if k not in ("label", "binary_label")}
                                             for r in full])
    records = [json.dumps({"id": r["id"], "label": r["label"], "binary_label": r["binary_label"]}) for r in full]
    records[2] = records[2][:-1] + ', "label": "UNRELATED"}'
    records.append(records[0])
    labels = write(tmp_path / "labels.jsonl", records)
    code = main(["eval", "--bench", str(public), "--labels", str(labels), "--baseline", "exact_match"])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {labels}:3: <json>: duplicate key 'label' in one object. Keep one of them.",
        f"error: {labels}:11: id: duplicate id 'cb-math-0001' (first on line 1). Keep one labels record per id.",
        f"error: {labels}: no labels for 1 of 10 rows of {public} (the first: cb-math-0003 on line 3). Pass the "
        "labels file of this split",
    ]


def test_the_benchmark_is_checked_before_the_cache_is_imported(tmp_path, capsys):
    marker = tmp_path / "imported"
    module = tmp_path / "side_effect_cache.py"
    module.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef cache(row):\n    return True\n", encoding="utf-8")
    path = write(tmp_path / "bench.jsonl", with_row2(label="SAME"))
    code = main(["eval", "--bench", str(path), "--cache-module", str(module)])
    assert code == 1 and "label: 'SAME' is not allowed" in capsys.readouterr().err
    assert not marker.exists()
    sys.modules.pop("cacheeval_user_side_effect_cache", None)


def test_the_committed_benchmark_and_the_labelled_test_split_pass(capsys):
    out = ROOT / "outputs"
    assert len(load_bench(out / "cachebench.jsonl", domains=None)) == 2000
    split = load_bench(out / "splits" / "test.jsonl", out / "splits" / "test_labels.jsonl")
    by_id = {r.id: r for r in load_bench(out / "cachebench.jsonl")}
    assert split and all(r == by_id[r.id] for r in split)


def test_without_the_registry_domains_are_checked_for_their_form(tmp_path, capsys, monkeypatch):
    # The harness alone (no PyYAML, so no domain registry): a well-formed new domain is scored, with a warning.
    monkeypatch.setitem(sys.modules, "domains", None)  # `import domains` raises ImportError
    path = write(tmp_path / "bench.jsonl", with_row2(id="cb-astronomy-0001", domain="astronomy"))
    code, _, err = eval_err(capsys, path, "--out", str(tmp_path / "r.md"))
    assert code == 0
    assert err.startswith("warning: the domain registry cannot be loaded here (ModuleNotFoundError: ")
    assert err.endswith("so domain names are checked for their form only. Install the pipeline's requirements "
                        "to check them against the registry\n")
    write(path, with_row2(domain="astronomy"))  # the id must still name the row's domain
    code, _, err = eval_err(capsys, path)
    assert code == 1 and err.splitlines()[-1] == (
        f"error: {path}:2: id: 'cb-math-0002' names domain 'math' but the row's domain is 'astronomy'. "
        "Use cb-astronomy-<4 digits>.")


def test_checking_a_benchmark_needs_no_library_beyond_the_standard_one():
    code = ("import sys\nfrom pipeline.harness import load_bench\n"
            f"load_bench({str(BENCH)!r})\n"
            "heavy = [m for m in ('jsonschema', 'yaml', 'dagster', 'torch', 'pandas', 'numpy') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- the schema evaluator

def _mutations() -> list[dict]:
    base = rows()
    out = [copy.deepcopy(r) for r in base]
    edits = [
        ("label", "SAME"), ("binary_label", "hit"), ("difficulty", 3), ("query_a", None), ("query_b", ""),
        ("context_a", "x"), ("context_a", [{"role": "bot", "content": 3}]), ("context_b", [{"role": "user"}]),
        ("tools_a", [{}]), ("tools_b", [{"name": ""}]), ("verification_payload", []), ("system_prompt_a", 1),
        ("id", "cb-Math-1"), ("domain", "Math"), ("licence", ""), ("notes", 1), ("construction_method", True),
        ("provenance", {"verification": {"tier": "oracle"}, "original_label": 1.5, "scrubbed": 0,
                        "split": "eval", "operator_params": []}),
        ("provenance", {"original_label": 2.0, "model_snapshot": None, "verification": {"tier": "judge",
                                                                                         "passed": True}}),
    ]
    for i, (key, value) in enumerate(edits):
        row = copy.deepcopy(base[i % len(base)])
        row[key] = value
        out.append(row)
    missing = copy.deepcopy(base[0])
    del missing["rationale"], missing["tools_b"]
    return out + [missing, [], "row", None]


def test_the_evaluator_agrees_with_jsonschema():
    jsonschema = pytest.importorskip("jsonschema")
    from pipeline.harness.contract import row_schema

    schema = row_schema(None)
    jsonschema.Draft202012Validator.check_schema(schema)  # the file is a valid 2020-12 schema
    theirs, ours = jsonschema.Draft202012Validator(schema), Validator(schema)
    committed = [json.loads(line) for line in (ROOT / "outputs" / "cachebench.jsonl").read_text("utf-8").splitlines()]
    for instance in committed + _mutations():
        want = sorted((e.validator, tuple(e.absolute_path)) for e in theirs.iter_errors(instance))
        got = sorted((e.validator, tuple(e.absolute_path)) for e in ours.iter_errors(instance))
        assert got == want, instance


@pytest.mark.parametrize("schema,message", [
    ({"type": "string", "maxLength": 3}, "#/maxLength: keyword 'maxLength' is not supported by pipeline.harness.schema"),
    ({"properties": {"a": {"format": "email"}}}, "#/properties/a/format: keyword 'format' is not supported"),
    ({"$ref": "https://example.invalid/x.json"}, "only references inside the file"),
    ({"type": "text"}, "#/type: 'text' is not a type"),
    ({"pattern": "("}, "#/pattern: '(' is not a regular expression"),
])
def test_a_keyword_the_evaluator_does_not_apply_is_refused(schema, message):
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace("$", r"\$")):
        Validator(schema)


def test_benchmark_invalid_is_an_input_error_with_every_line():
    exc = BenchmarkInvalid(["b.jsonl:1: a: x. Fix.", "b.jsonl:2: b: y. Fix."], "b.jsonl")
    assert exc.problems == ["b.jsonl:1: a: x. Fix.", "b.jsonl:2: b: y. Fix."]
    assert str(exc) == "b.jsonl:1: a: x. Fix.\nerror: b.jsonl:2: b: y. Fix."
