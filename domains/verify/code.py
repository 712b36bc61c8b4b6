"""ast_sandbox: are two reference solutions the same answer? Form and behaviour, both checked.

Payload: {"language_a": "python"|"javascript", "language_b": ..., "tests_a": test program for
answer A, "tests_b": for answer B, "keep_names": optional extra identifiers never normalised}.
Each tests_* is a program appended to its reference solution; exit status 0 means pass.

Steps (tier "programmatic"):
1. Each reference must pass its own tests in the sandbox (a broken reference proves nothing).
2. Different languages are different answers (the answer-determining-token rule).
3. Form: Python is parsed with `ast`, docstrings dropped and every locally bound name that the
   user did not name (locals, loop variables, comprehension variables) renamed to a positional
   placeholder; the answer-determining identifiers (function and class names, parameters, and the
   payload's keep_names) are kept verbatim, because an answer repeats them. JavaScript gets an
   AST-free textual normalisation (comments dropped, whitespace collapsed), kept names as written.
4. Behaviour: B's code is run against A's tests (and, for a HIT, A's against B's).
A HIT needs the same language, the same normalised form and both cross-runs passing. A MISS needs
a different language, or a different form together with a failed cross-run or different
answer-determining identifiers.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from domains.base import HIT_LABELS, Candidate, Outcome
from domains.verify import register
from domains.verify.sandbox import LANGUAGES, run

TIER = "programmatic"


class _Renamer(ast.NodeTransformer):
    """Renames bound, non-kept names to v0, v1, ... in order of first binding."""

    def __init__(self, bound: list[str]):
        self.mapping = {name: f"v{i}" for i, name in enumerate(bound)}

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.mapping:
            return ast.copy_location(ast.Name(id=self.mapping[node.id], ctx=node.ctx), node)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if node.arg in self.mapping:
            node.arg = self.mapping[node.arg]
        return self.generic_visit(node)


def python_signature_names(tree: ast.Module) -> list[str]:
    """The identifiers a user names when asking for this code: top-level function and class
    names and the parameters of top-level functions."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
            args = node.args
            names += [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
            names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        elif isinstance(node, ast.ClassDef):
            names.append(node.name)
    return names


def _bound_names(tree: ast.AST) -> list[str]:
    """Names the code binds itself, in order of first appearance (assignment, loop and
    comprehension targets, nested function parameters)."""
    seen: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            name = node.id
        elif isinstance(node, ast.arg):
            name = node.arg
        else:
            continue
        if name not in seen:
            seen.append(name)
    return seen


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]


def normalise_python(code: str, keep: list[str]) -> tuple[str, list[str]]:
    """The canonical AST dump of `code` and its answer-determining names. Raises SyntaxError."""
    tree = ast.parse(code)
    _strip_docstrings(tree)
    named = python_signature_names(tree)
    kept = set(named) | set(keep)
    bound = [n for n in _bound_names(tree) if n not in kept]
    tree = _Renamer(bound).visit(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False), named


_JS_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_JS_SPACE_AROUND = re.compile(r"\s*([{}()\[\];,:=<>+\-*/%!&|?.])\s*")
_JS_FUNC = re.compile(r"function\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)")
_JS_ARROW = re.compile(r"(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*\(([^)]*)\)\s*=>")


def normalise_javascript(code: str) -> tuple[str, list[str]]:
    """AST-free textual normalisation of JavaScript and its declared function names and
    parameters. Our references never put comment markers inside string literals."""
    text = _JS_COMMENT.sub(" ", code)
    text = _JS_SPACE_AROUND.sub(r"\1", " ".join(text.split()))
    text = text.replace(";}", "}").rstrip(";")
    names: list[str] = []
    for pattern in (_JS_FUNC, _JS_ARROW):
        for m in pattern.finditer(code):
            names.append(m.group(1))
            names += [p.strip().split("=")[0].strip() for p in m.group(2).split(",") if p.strip()]
    return text, names


def normalise(code: str, language: str, keep: list[str]) -> tuple[str, list[str]]:
    if language == "python":
        return normalise_python(code, keep)
    if language == "javascript":
        return normalise_javascript(code)
    raise ValueError(f"unsupported language {language!r}")


def _payload(c: Candidate) -> dict[str, Any] | Outcome:
    p = c.verification_payload
    missing = [k for k in ("language_a", "language_b", "tests_a", "tests_b") if not p.get(k)]
    if missing:
        return Outcome(TIER, False, "payload_missing", {"missing": missing})
    bad = [p[k] for k in ("language_a", "language_b") if p[k] not in LANGUAGES]
    if bad:
        return Outcome(TIER, False, "unsupported_language", {"languages": bad})
    return dict(p)


@register("ast_sandbox")
def ast_sandbox(c: Candidate) -> Outcome:
    p = _payload(c)
    if isinstance(p, Outcome):
        return p
    lang_a, lang_b = p["language_a"], p["language_b"]
    code_a, code_b = c.expected_answer_a, c.expected_answer_b
    own_a = run(code_a, p["tests_a"], lang_a)
    own_b = run(code_b, p["tests_b"], lang_b)
    ev: dict[str, Any] = {"language_a": lang_a, "language_b": lang_b,
                          "own_a": own_a.status, "own_b": own_b.status}
    if not own_a.passed:
        return Outcome(TIER, False, "reference_a_fails_own_tests", {**ev, "run": own_a.summary()})
    if not own_b.passed:
        return Outcome(TIER, False, "reference_b_fails_own_tests", {**ev, "run": own_b.summary()})
    want_same = c.label in HIT_LABELS
    if lang_a != lang_b:
        ev["differs_by"] = "language"
        if want_same:
            return Outcome(TIER, False, "answers_differ_for_hit", ev)
        return Outcome(TIER, True, "ok", ev)
    keep = [str(k) for k in p.get("keep_names", [])]
    try:
        form_a, names_a = normalise(code_a, lang_a, keep)
        form_b, names_b = normalise(code_b, lang_b, keep)
    except SyntaxError as exc:
        return Outcome(TIER, False, "reference_syntax_error", {**ev, "message": str(exc)[:200]})
    same_form = form_a == form_b
    same_names = names_a == names_b
    b_on_a = run(code_b, p["tests_a"], lang_a)
    ev.update(same_form=same_form, same_names=same_names, names_a=names_a, names_b=names_b,
              b_on_tests_a=b_on_a.status)
    if want_same:
        a_on_b = run(code_a, p["tests_b"], lang_b)
        ev["a_on_tests_b"] = a_on_b.status
        ok = same_form and same_names and b_on_a.passed and a_on_b.passed
        return Outcome(TIER, ok, "ok" if ok else "answers_differ_for_hit", ev)
    if same_form:
        return Outcome(TIER, False, "answers_equal_for_miss", ev)
    if b_on_a.passed and same_names:
        # Different text, same names, same behaviour: a rewrite of the same answer, not a miss.
        return Outcome(TIER, False, "same_behaviour_for_miss", ev)
    ev["differs_by"] = "behaviour" if not b_on_a.passed else "identifiers"
    return Outcome(TIER, True, "ok", ev)
