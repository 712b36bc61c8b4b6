"""The test program appended to a solution and run by the `ast_sandbox` verifier.

One harness per language runs the variant's curated cases and exits 0 iff all pass. The function
is looked up by the spec's name, so a renamed function fails the original's tests; `check` says
whether a case compares the return value, the mutated argument (in place), or both with the
argument left untouched (copy).
"""
from __future__ import annotations

import json
from typing import Any

from domains.code.catalog import variant
from domains.code.render import Spec

_PY_HARNESS = '''
# --- tests
import copy as _copy_mod


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


_failed = []


def _case(n, check, fn, args, want):
    try:
        args = _copy_mod.deepcopy(args)
        before = _copy_mod.deepcopy(args)
        got = fn(*args)
        if check == "returns":
            ok = _same(got, want)
        elif check == "in_place":
            ok = got is None and _same(args[0], want)
        else:
            ok = _same(got, want) and _same(args, before)
    except Exception as exc:
        _failed.append(f"case {n}: {type(exc).__name__}: {exc}")
        return
    if not ok:
        _failed.append(f"case {n}: wrong result")

'''

_JS_HARNESS = '''
// --- tests
const _assert = require("node:assert");
const _failed = [];
function _case(n, check, fn, args, want) {
  try {
    const before = structuredClone(args);
    const got = fn(...args);
    if (check === "returns") {
      _assert.deepStrictEqual(got, want);
    } else if (check === "in_place") {
      _assert.strictEqual(got, undefined);
      _assert.deepStrictEqual(args[0], want);
    } else {
      _assert.deepStrictEqual(got, want);
      _assert.deepStrictEqual(args, before);
    }
  } catch (e) {
    _failed.push(`case ${n}: ${String(e.message).split("\\n")[0]}`);
  }
}
'''


def _js_literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_tests(spec: Spec) -> str:
    """The test program appended to a solution: exit status 0 iff every case passes. The function
    is looked up by the spec's name, so a renamed function fails the original's tests."""
    v = variant(spec.task, spec.variant)
    check = v.get("check", "returns")
    cases = v["cases"]
    if spec.lang == "python":
        lines = [_PY_HARNESS]
        for n, (args, want) in enumerate(cases, 1):
            lines.append(f"_case({n}, {check!r}, lambda *a: {spec.fn}(*a), {args!r}, {want!r})")
        lines.append(f'print(f"{{{len(cases)} - len(_failed)}}/{len(cases)} passed")')
        lines.append('print("\\n".join(_failed))')
        lines.append("raise SystemExit(1 if _failed else 0)")
    else:
        lines = [_JS_HARNESS]
        for n, (args, want) in enumerate(cases, 1):
            lines.append(f"_case({n}, {_js_literal(check)}, (...a) => {spec.fn}(...a), "
                         f"{_js_literal(args)}, {_js_literal(want)});")
        lines.append(f"console.log(`${{{len(cases)} - _failed.length}}/{len(cases)} passed`);")
        lines.append('console.log(_failed.join("\\n"));')
        lines.append("process.exit(_failed.length ? 1 : 0);")
    return "\n".join(lines) + "\n"
