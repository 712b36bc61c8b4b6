"""What a curated tool's `parameters` may hold: JSON Schema (Draft 2020-12) and nothing else.

A YAML flow mapping splits an unquoted value at its comma: `{description: The day, ISO 8601.}`
reads as the description "The day" plus a keyword "ISO 8601.": null. JSON Schema ignores unknown
keywords, so the metaschema accepts that; hence two checks: the Draft 2020-12 metaschema (known
keywords with malformed values, e.g. `type: strin` or `required: date`) and an explicit list of
the keywords tool schemas use (anything else is a stray key, a typo or a split value).
"""
from __future__ import annotations

from typing import Any, Mapping

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

# Keywords whose value is a schema, a map of names to schemas, or a list of schemas: the walk goes
# into them. Every other allowed keyword holds data (a type name, numbers, enum values, text).
_SUBSCHEMA = ("items", "additionalProperties")
_SCHEMA_MAPS = ("properties", "$defs")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_DATA = ("type", "required", "enum", "const", "default", "examples", "description", "title", "format",
         "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
         "minItems", "maxItems", "uniqueItems", "$ref")
ALLOWED_KEYWORDS = frozenset(_SUBSCHEMA + _SCHEMA_MAPS + _SCHEMA_LISTS + _DATA)


def stray_keyword(schema: Any, path: str = "parameters") -> tuple[str, Any] | None:
    """(where, keyword) of the first key, in file order, that is not in ALLOWED_KEYWORDS, looking
    into every subschema; None when there is none. Only mappings are walked: anything else is
    left to the metaschema."""
    if not isinstance(schema, Mapping):
        return None
    for key in schema:
        if key not in ALLOWED_KEYWORDS:
            return path, key
    for key, value in schema.items():
        if key in _SUBSCHEMA:
            subs = [(f"{path}.{key}", value)]
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            subs = [(f"{path}.{key}.{name}", sub) for name, sub in value.items()]
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            subs = [(f"{path}.{key}[{i}]", sub) for i, sub in enumerate(value)]
        else:
            continue
        for where, sub in subs:
            found = stray_keyword(sub, where)
            if found is not None:
                return found
    return None


def schema_problem(schema: Any) -> tuple[str, str] | None:
    """(problem, fix) when a tool's parameters schema is not plain JSON Schema, else None."""
    if not isinstance(schema, Mapping):
        return ("parameters is not a mapping",
                "Give parameters as a JSON Schema object (type: object, properties: ..., required: ...)")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as err:
        where = "parameters" + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in err.path)
        return (f"{where} is not valid JSON Schema ({' '.join(err.message.split())})",
                "Fix it to follow JSON Schema Draft 2020-12")
    found = stray_keyword(schema)
    if found is not None:
        where, key = found
        return (f"{where} holds {key!r}, which is not a JSON Schema keyword",
                f"Remove it or use one of {', '.join(sorted(ALLOWED_KEYWORDS))}; "
                "quote a value that holds a comma inside {...} (YAML splits it there)")
    return None
