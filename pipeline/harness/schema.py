"""configs/row.schema.json applied with the standard library: the JSON Schema 2020-12 keywords the
row schema uses, and nothing else.

The harness scores a benchmark anywhere Python runs, so it cannot need `jsonschema`; the build and
`cacheeval validate` use this same evaluator, so there is one reading of the schema file. A keyword
it does not know is an error when the schema is loaded (it is never silently ignored), and a test
checks that it and `jsonschema` agree on the committed benchmark and on broken rows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

# Keywords that only describe or hold subschemas; they assert nothing about an instance.
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description"})
ASSERTIONS = frozenset({"type", "enum", "pattern", "minLength", "required", "properties",
                        "additionalProperties", "items", "$ref"})
TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}


class SchemaError(ValueError):
    """The schema file uses something this evaluator does not implement, or is malformed."""


@dataclass(frozen=True)
class Problem:
    """One violation, shaped like jsonschema's ValidationError where the contract reads it."""

    validator: str                 # the keyword that failed
    validator_value: Any           # its value in the schema
    instance: Any                  # the value that failed
    absolute_path: tuple           # keys and indexes from the row down to the value
    schema: dict                   # the schema node holding the keyword
    message: str


def is_type(value: Any, name: str) -> bool:
    """JSON Schema's types over parsed JSON (a bool is not a number; 1.0 is an integer)."""
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return name == "number" or isinstance(value, int) or value.is_integer()


def _same(a: Any, b: Any) -> bool:
    # enum equality as JSON sees it: true is not 1
    return a == b and isinstance(a, bool) == isinstance(b, bool)


class Validator:
    """Checks instances against one schema (checked when built: see `check`)."""

    def __init__(self, schema: dict) -> None:
        self.schema = schema
        self._patterns: dict[str, re.Pattern] = {}
        self._refs: dict[str, dict] = {}
        self.check(schema, "#")

    def _resolve(self, ref: str) -> dict:
        found = self._refs.get(ref)
        if found is None:
            found = self._refs[ref] = self._lookup(ref)
        return found

    def _lookup(self, ref: str) -> dict:
        if not ref.startswith("#/"):
            raise SchemaError(f"$ref {ref!r}: only references inside the file (#/...) are supported")
        node: Any = self.schema
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise SchemaError(f"$ref {ref!r} points at nothing")
            node = node[part]
        if not isinstance(node, dict):
            raise SchemaError(f"$ref {ref!r} is not a schema object")
        return node

    def check(self, node: Any, where: str) -> None:
        """Refuse a keyword or a keyword value this evaluator would not apply exactly."""
        if not isinstance(node, dict):
            raise SchemaError(f"{where}: a schema must be an object")
        for key, value in node.items():
            at = f"{where}/{key}"
            if key not in ANNOTATIONS | ASSERTIONS:
                raise SchemaError(f"{at}: keyword {key!r} is not supported by pipeline.harness.schema. "
                                  "Implement it there, or express the rule with the supported keywords")
            if key == "$defs" or key == "properties":
                if not isinstance(value, dict):
                    raise SchemaError(f"{at}: must be an object of schemas")
                for name, sub in value.items():
                    self.check(sub, f"{at}/{name}")
            elif key == "type":
                names = value if isinstance(value, list) else [value]
                if not names or any(n not in TYPES for n in names):
                    raise SchemaError(f"{at}: {value!r} is not a type or list of types")
            elif key == "enum" and not isinstance(value, list):
                raise SchemaError(f"{at}: must be a list")
            elif key == "pattern":
                try:
                    self._patterns[value] = re.compile(value)
                except (re.error, TypeError) as exc:
                    raise SchemaError(f"{at}: {value!r} is not a regular expression ({exc})") from None
            elif key == "minLength" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise SchemaError(f"{at}: must be a non-negative integer")
            elif key == "required" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise SchemaError(f"{at}: must be a list of names")
            elif key == "additionalProperties" and not isinstance(value, bool):
                self.check(value, at)
            elif key == "items":
                self.check(value, at)
            elif key == "$ref":
                if not isinstance(value, str):
                    raise SchemaError(f"{at}: must be a string")
                self._resolve(value)

    def iter_errors(self, instance: Any) -> Iterator[Problem]:
        """Every violation of the schema by `instance`, keywords in the schema's order."""
        out: list[Problem] = []
        self._check(instance, self.schema, (), out)
        return iter(out)

    def _check(self, inst: Any, node: dict, path: tuple, out: list[Problem]) -> None:
        # appends instead of yielding: a row walks ~60 schema nodes, and generators cost most of that
        for key, value in node.items():
            if key == "$ref":
                self._check(inst, self._resolve(value), path, out)
            elif key == "type":
                if value.__class__ is str:
                    ok = is_type(inst, value)
                else:
                    ok = any(is_type(inst, n) for n in value)
                if not ok:
                    names = value if isinstance(value, list) else [value]
                    out.append(Problem(key, value, inst, path, node, f"{inst!r} is not of type {' or '.join(names)}"))
            elif key == "enum":
                if not any(_same(inst, v) for v in value):
                    out.append(Problem(key, value, inst, path, node, f"{inst!r} is not one of {value!r}"))
            elif key == "pattern":
                if isinstance(inst, str) and not self._patterns[value].search(inst):
                    out.append(Problem(key, value, inst, path, node, f"{inst!r} does not match {value!r}"))
            elif key == "minLength":
                if isinstance(inst, str) and len(inst) < value:
                    out.append(Problem(key, value, inst, path, node, f"{inst!r} is shorter than {value}"))
            elif key == "required":
                if isinstance(inst, dict):  # one problem per missing name, as jsonschema reports them
                    out.extend(Problem(key, value, inst, path, node, f"{n!r} is a required property")
                               for n in value if n not in inst)
            elif key == "properties":
                if isinstance(inst, dict):
                    for name, sub in value.items():
                        if name in inst:
                            self._check(inst[name], sub, path + (name,), out)
            elif key == "additionalProperties":
                if isinstance(inst, dict):
                    known = node.get("properties", {})
                    extra = [k for k in inst if k not in known]
                    if value is False and extra:
                        out.append(Problem(key, value, inst, path, node, f"unexpected {', '.join(map(repr, extra))}"))
                    elif isinstance(value, dict):
                        for k in extra:
                            self._check(inst[k], value, path + (k,), out)
            elif key == "items":
                if isinstance(inst, list):
                    for i, item in enumerate(inst):
                        self._check(item, value, path + (i,), out)
