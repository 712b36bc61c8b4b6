"""Curated tool schemas are JSON Schema and nothing else: the Draft 2020-12 metaschema plus an
explicit list of keywords, so a YAML slip (a flow mapping split at a comma) cannot reach a row."""
from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from domain_helpers import assert_input_error
from domains import tool
from domains.tool import catalog
from domains.tool.schemas import ALLOWED_KEYWORDS, schema_problem, stray_keyword

DATA = tool.load()
# The calendar_list_events line as it shipped before the fix: YAML reads the unquoted description
# as "The day" plus a keyword "ISO 8601 (YYYY-MM-DD).": null.
FIXED = '        date: {type: string, format: date, description: "The day, ISO 8601 (YYYY-MM-DD)."}\n'
OLD = "        date: {type: string, format: date, description: The day, ISO 8601 (YYYY-MM-DD).}\n"


def _load_error(tmp_path, monkeypatch, old: str, new: str) -> str:
    text = catalog.SOURCE_FILE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    bad = tmp_path / "tool.yaml"
    bad.write_text(text.replace(old, new), encoding="utf-8")
    return assert_input_error(monkeypatch, catalog, "SOURCE_FILE", bad, tool.load, r"^sources/curated/tool\.yaml: ")


def test_shipped_schemas_pass_both_checks():
    assert len(DATA.tools) >= 30
    for name, t in DATA.tools.items():
        assert schema_problem(t["parameters"]) is None, name
        Draft202012Validator.check_schema(t["parameters"])


def test_calendar_date_description_is_one_sentence():
    date = DATA.tools["calendar_list_events"]["parameters"]["properties"]["date"]
    assert date == {"type": "string", "format": "date", "description": "The day, ISO 8601 (YYYY-MM-DD)."}


def test_the_old_split_description_is_a_one_line_input_error(tmp_path, monkeypatch):
    msg = _load_error(tmp_path, monkeypatch, FIXED, OLD)
    assert msg.startswith("sources/curated/tool.yaml: tools[calendar_list_events]: parameters.properties.date "
                          "holds 'ISO 8601 (YYYY-MM-DD).', which is not a JSON Schema keyword. Remove it or use one of ")
    assert msg.endswith("quote a value that holds a comma inside {...} (YAML splits it there)")


@pytest.mark.parametrize("old,new,problem", [
    # a misspelt keyword: JSON Schema would silently ignore it, so the bound would not hold
    ("{type: integer, minimum: 5, maximum: 480}", "{type: integer, minimum: 5, maximun: 480}",
     "tools[calendar_find_free_slot]: parameters.properties.duration_minutes holds 'maximun'"),
    # an OpenAPI keyword inside $defs
    ("        unit: {enum: [mile,", "        unit: {nullable: true, enum: [mile,",
     "tools[convert_units]: parameters.$defs.unit holds 'nullable'"),
    # alternatives are checked too
    ("        kind: {enum: [pdf, spreadsheet, document, presentation, image]}",
     "        kind: {enum: [pdf, spreadsheet, document, presentation, image], optional: true}",
     "alternatives[drive_find_files]: parameters.properties.kind holds 'optional'"),
    # a known keyword with a malformed value: the metaschema's catch
    ("{type: integer, minimum: 5, maximum: 480}", "{type: int, minimum: 5, maximum: 480}",
     "tools[calendar_find_free_slot]: parameters.properties.duration_minutes.type is not valid JSON Schema"),
    ("        query: {type: string, minLength: 1}\n        file_type:", "        query: {type: string, minLength: one}\n        file_type:",
     "tools[search_files]: parameters.properties.query.minLength is not valid JSON Schema"),
])
def test_non_schema_keywords_are_one_line_input_errors(tmp_path, monkeypatch, old, new, problem):
    msg = _load_error(tmp_path, monkeypatch, old, new)
    assert msg.startswith(f"sources/curated/tool.yaml: {problem}"), msg


def test_stray_keyword_walks_every_subschema_and_skips_data():
    ok = {"type": "object", "properties": {"tags": {"type": "array", "items": {"anyOf": [{"type": "string"}]}}},
          "default": {"colour": "red"}, "enum": [{"nullable": True}], "$defs": {"x": {"const": 1}}}
    assert stray_keyword(ok) is None
    deep = {"type": "object", "properties": {"tags": {"items": {"anyOf": [{"type": "string"}, {"nullable": True}]}}}}
    assert stray_keyword(deep) == ("parameters.properties.tags.items.anyOf[1]", "nullable")
    assert stray_keyword({"$defs": {"u": {"enum": [1], "example": 1}}}) == ("parameters.$defs.u", "example")
    assert stray_keyword({"additionalProperties": {"typ": "string"}}) == ("parameters.additionalProperties", "typ")
    assert stray_keyword({"type": "object", None: None}) == ("parameters", None)


def test_parameters_must_be_a_mapping():
    problem, fix = schema_problem(["date"])
    assert problem == "parameters is not a mapping" and fix.startswith("Give parameters as a JSON Schema object")


def test_allowed_keywords_are_draft_2020_12_keywords():
    # Validation keywords are the validator's; the rest are the annotation and structure keywords.
    annotations = {"description", "title", "default", "examples", "$defs"}
    assert sorted(ALLOWED_KEYWORDS - set(Draft202012Validator.VALIDATORS) - annotations) == []
