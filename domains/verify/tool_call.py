"""json_schema_call: JSON Schema validation of both canonical tool calls, then canonical comparison.

Each expected answer is a canonical call, `{"arguments": {...}, "name": "<tool>"}` written as
canonical JSON (sorted keys, separators (",", ":")). Call A must name a tool offered in `tools_a`
and its arguments must validate against that tool's `parameters` schema (Draft 2020-12, with
format checks such as `date`); the same for call B against `tools_b`. A HIT label then needs the
two calls to be equal in canonical form, a MISS label needs them to differ.

No remote `$ref` is ever fetched. A schema holding any `$ref`/`$dynamicRef` that does not point
inside the schema itself ("#...") fails verification before validation starts (a lazily resolved
reference in a branch the call does not reach would otherwise go unnoticed), and the validator
gets a referencing Registry whose retrieve function refuses every URI, as a second guard.

Payload: {} or {"note": "..."}; everything the check needs is in the candidate's answers and tools.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from domains.base import HIT_LABELS, Candidate, Outcome, canonical_json
from domains.verify import register

_TIER = "deterministic"


class RemoteRefRefused(Exception):
    """A schema asked for a `$ref` outside itself; fetching it is never allowed."""


def _refuse(uri: str) -> Any:
    raise RemoteRefRefused(f"remote $ref not fetched: {uri}")


def _registry() -> Any:
    from referencing import Registry

    return Registry(retrieve=_refuse)


def _non_local_refs(schema: Any) -> list[str]:
    """Every `$ref`/`$dynamicRef` in a schema that points outside it (anything not "#...")."""
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for key in ("$ref", "$dynamicRef"):
                ref = node.get(key)
                if isinstance(ref, str) and not ref.startswith("#"):
                    found.append(ref)
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return sorted(found)


def _normalise(value: Any) -> Any:
    """Integral floats become ints, so `250.0` and `250` are one canonical amount."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    return value


def canonical_call(name: str, arguments: Mapping[str, Any]) -> str:
    """The canonical JSON text of a tool call: what expected_answer_a/b hold."""
    return canonical_json({"name": name, "arguments": _normalise(dict(arguments))})


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of a canonical call; ValueError when the text is not one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if not isinstance(obj, dict) or sorted(obj) != ["arguments", "name"]:
        raise ValueError("a call is an object with exactly the keys 'name' and 'arguments'")
    if not isinstance(obj["name"], str) or not obj["name"] or not isinstance(obj["arguments"], dict):
        raise ValueError("'name' must be a non-empty string and 'arguments' an object")
    return obj["name"], obj["arguments"]


def _check_side(side: str, text: str, tools: Sequence[Mapping[str, Any]] | None) -> tuple[str | None, str]:
    """(canonical form or None, reason) for one side's call against its offered tools."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError, ValidationError

    try:
        name, args = parse_call(text)
    except ValueError:
        return None, f"call_{side}_not_a_call"
    canon = canonical_call(name, args)
    if text != canon:
        return None, f"call_{side}_not_canonical_json"
    offered = [t for t in (tools or ()) if isinstance(t, Mapping) and t.get("name") == name]
    if len(offered) != 1:
        return None, f"tool_{side}_not_offered" if not offered else f"tool_{side}_offered_twice"
    schema = offered[0].get("parameters")
    if not isinstance(schema, Mapping):
        return None, f"tool_{side}_has_no_parameters_schema"
    if _non_local_refs(schema):
        return None, f"schema_{side}_remote_ref_refused"
    try:
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema, registry=_registry(),
                                         format_checker=Draft202012Validator.FORMAT_CHECKER)
        validator.validate(args)
    except SchemaError:
        return None, f"schema_{side}_invalid"
    except ValidationError:
        return None, f"call_{side}_violates_schema"
    except Exception as exc:  # noqa: BLE001 - an unresolvable $ref surfaces as a referencing error
        if _caused_by_refusal(exc):
            return None, f"schema_{side}_remote_ref_refused"
        return None, f"schema_{side}_unresolvable:{type(exc).__name__}"
    return canon, "ok"


def _caused_by_refusal(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, RemoteRefRefused):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


@register("json_schema_call")
def json_schema_call(c: Candidate) -> Outcome:
    """Both calls valid against their offered schemas; equal for HIT labels, different for MISS."""
    canon_a, reason_a = _check_side("a", c.expected_answer_a, c.tools_a)
    if canon_a is None:
        return Outcome(_TIER, False, reason_a, {})
    canon_b, reason_b = _check_side("b", c.expected_answer_b, c.tools_b)
    if canon_b is None:
        return Outcome(_TIER, False, reason_b, {})
    same = canon_a == canon_b
    ev = {"calls_equal": same, "tool_a": json.loads(canon_a)["name"], "tool_b": json.loads(canon_b)["name"]}
    want_same = c.label in HIT_LABELS
    if same == want_same:
        return Outcome(_TIER, True, "ok", ev)
    return Outcome(_TIER, False, "calls_differ_for_hit" if want_same else "calls_equal_for_miss", ev)
