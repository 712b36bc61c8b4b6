"""sympy_equivalence: the two expected answers are compared as mathematics, names included.

Payload:
    {"kind": "equation" | "expression" | "quantity" | "set",
     "kind_b": optional, the kind of answer B when it differs (default: kind),
     "answer_a": sympy-parsable form, "answer_b": sympy-parsable form,
     "tolerance": relative/absolute numeric tolerance (default 1e-9),
     "unit_a": "km", "unit_b": "km"  (quantity only; "" or absent for a bare number)}

Answer forms:
- expression: one expression, e.g. "3*x**2 + 2*x" or "x**3/3 + C";
- equation: "lhs = rhs", e.g. "x = 6" or "Derivative(f(x), x) = 2*x + 3";
- set: equations joined by ";" compared as a multiset, e.g. "x = -2; x = 3" (roots, systems);
- quantity: a number (sympy form, e.g. "225/2" or "exp(2)") and its unit in unit_a/unit_b.

Two answers are equivalent when their kinds agree, their units agree, and they are equal as
mathematics with symbols and functions told apart by name (Eq(x, 6) and Eq(a, 6) are different
answers, because the answer repeats the variable): structurally, after expansion, or numerically
within the tolerance at fixed sample points, each symbol getting its own value. A HIT label needs equivalence, a MISS label needs a difference.

Parsing is safe: a character whitelist, an identifier whitelist (single-letter symbols, f/g/h as
functions, a few named functions), a guard against huge powers, a fixed local dict and globals
without builtins. A parse error is a failed verification with a reason, never an exception.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from domains.base import HIT_LABELS, Candidate, Outcome
from domains.verify import register

KINDS = ("equation", "expression", "quantity", "set")
DEFAULT_TOLERANCE = 1e-9
MAX_LEN = 400

# Lower-case letters usable as symbols; e, i, l, o are left out (Euler's number, the imaginary
# unit and look-alike digits), f, g, h are functions (f(x), Derivative(f(x), x)).
SYMBOL_NAMES = tuple(ch for ch in "abcdjkmnpqrstuvwxyz") + ("C", "K")
FUNCTION_NAMES = ("f", "g", "h")
SYMPY_NAMES = ("sin", "cos", "tan", "exp", "log", "sqrt", "Abs", "pi", "E", "Derivative", "Integral")

_ALLOWED = re.compile(r"^[A-Za-z0-9 .+\-*/^(),]*$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BAD_DOT = re.compile(r"(?<!\d)\.|\.(?!\d)")
# 9^9^9 or x^12345 would make sympy compute for minutes; answers never need either.
_BIG_POWER = re.compile(r"(\*\*|\^)\s*\(?\s*-?\d{4,}|(\*\*|\^)[^+\-*/^=]*(\*\*|\^)")


class ParseError(ValueError):
    """An answer text that is not an allowed sympy form."""


@lru_cache(maxsize=1)
def _namespaces() -> tuple[dict[str, Any], dict[str, Any], tuple]:
    import sympy as sp
    from sympy.parsing.sympy_parser import (convert_xor, implicit_multiplication, rationalize,
                                            standard_transformations)

    local: dict[str, Any] = {n: sp.Symbol(n) for n in SYMBOL_NAMES}
    local.update({n: sp.Function(n) for n in FUNCTION_NAMES})
    local.update({n: getattr(sp, n) for n in SYMPY_NAMES})
    # Only the constructors the parser's own transformations emit; no builtins at all.
    glob = {"__builtins__": {}, "Integer": sp.Integer, "Float": sp.Float, "Rational": sp.Rational,
            "Symbol": sp.Symbol, "Function": sp.Function}
    transforms = standard_transformations + (implicit_multiplication, convert_xor, rationalize)
    return local, glob, transforms


@lru_cache(maxsize=8192)
def parse_math(text: str):
    """Parse one expression (no '=') into sympy, or raise ParseError naming the problem.
    Accepts implicit products ("2x", "(x + 1)(x - 2)") and "^" for powers."""
    from sympy.parsing.sympy_parser import parse_expr

    s = text.strip()
    if not s:
        raise ParseError("empty expression")
    if len(s) > MAX_LEN:
        raise ParseError(f"expression longer than {MAX_LEN} characters")
    if not _ALLOWED.match(s):
        bad = sorted({ch for ch in s if not _ALLOWED.match(ch)})
        raise ParseError(f"characters not allowed: {''.join(bad)!r}")
    if _BAD_DOT.search(s):
        raise ParseError("a '.' outside a decimal number")
    if _BIG_POWER.search(s):
        raise ParseError("power too large or chained")
    local, glob, transforms = _namespaces()
    unknown = sorted({m.group(0) for m in _IDENT.finditer(s)} - set(local))
    if unknown:
        raise ParseError(f"unknown name(s) {', '.join(unknown)}")
    try:
        return parse_expr(s, local_dict=dict(local), global_dict=dict(glob), transformations=transforms)
    except Exception as exc:  # noqa: BLE001 - sympy raises many types; all mean "not parsable"
        raise ParseError(f"{type(exc).__name__}: {str(exc)[:120]}") from None


def parse_equation(text: str) -> tuple[Any, Any]:
    """'lhs = rhs' → (lhs, rhs)."""
    parts = text.split("=")
    if len(parts) != 2:
        raise ParseError(f"an equation needs exactly one '=': {text[:60]!r}")
    return parse_math(parts[0]), parse_math(parts[1])


def parse_answer(kind: str, text: str) -> Any:
    """The parsed answer for a kind: expression/quantity → expr, equation → (lhs, rhs),
    set → tuple of (lhs, rhs)."""
    if kind in ("expression", "quantity"):
        return parse_math(text)
    if kind == "equation":
        return parse_equation(text)
    if kind == "set":
        items = [t for t in text.split(";") if t.strip()]
        if not items:
            raise ParseError("an empty set")
        return tuple(parse_equation(t) for t in items)
    raise ParseError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")


# Sample values per symbol position: irrational-looking, positive (log and sqrt stay real),
# different per symbol so that swapped symbols do not coincide.
_POINTS = ((0.731, 1.377, 2.113), (1.619, 0.583, 1.941), (2.347, 1.129, 0.867))


def expr_equal(a: Any, b: Any, tol: float) -> bool:
    """Equal as mathematics, where symbols are told apart by name (2*x + 3 and 2*t + 3 differ):
    structurally, after expansion, or numerically at fixed points with a different value per
    symbol."""
    import sympy as sp

    if a == b:
        return True
    diff = a - b
    try:
        if sp.expand(diff) == 0:
            return True
    except Exception:  # noqa: BLE001 - fall through to the numeric check
        pass
    from sympy.core.function import AppliedUndef

    if any(e.has(AppliedUndef, sp.Derivative, sp.Integral) for e in (a, b)):
        return False  # not numeric (f(x), Derivative(f(x), x)): structure and expansion decided
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    for point in _POINTS:
        subs = {s: sp.Float(point[i % 3] + 0.1 * (i // 3)) for i, s in enumerate(symbols)}
        try:
            da = complex(a.subs(subs).evalf())
            db = complex(b.subs(subs).evalf())
        except (TypeError, ValueError, RecursionError):
            return False  # not a number at this point: the answers are not shown equal
        if abs(da - db) > tol * max(1.0, abs(da), abs(db)):
            return False
    return True


def _eq_equal(a: tuple, b: tuple, tol: float) -> bool:
    return expr_equal(a[0], b[0], tol) and expr_equal(a[1], b[1], tol)


def answers_equivalent(kind_a: str, text_a: str, kind_b: str, text_b: str, tol: float = DEFAULT_TOLERANCE,
                       unit_a: str = "", unit_b: str = "") -> tuple[bool, str]:
    """(equivalent, why). Raises ParseError for an answer that does not parse."""
    pa, pb = parse_answer(kind_a, text_a), parse_answer(kind_b, text_b)
    if kind_a != kind_b:
        return False, "kind_differs"
    if kind_a == "quantity":
        if _unit(unit_a) != _unit(unit_b):
            return False, "unit_differs"
        return (True, "equal") if expr_equal(pa, pb, tol) else (False, "value_differs")
    if kind_a == "expression":
        return (True, "equal") if expr_equal(pa, pb, tol) else (False, "expression_differs")
    if kind_a == "equation":
        return (True, "equal") if _eq_equal(pa, pb, tol) else (False, "equation_differs")
    # set: a multiset of equations, matched greedily (answers are small)
    if len(pa) != len(pb):
        return False, "set_size_differs"
    left = list(pb)
    for eq in pa:
        match = next((i for i, other in enumerate(left) if _eq_equal(eq, other, tol)), None)
        if match is None:
            return False, "set_member_differs"
        left.pop(match)
    return True, "equal"


def _unit(u: Any) -> str:
    return " ".join(str(u or "").split()).casefold()


@register("sympy_equivalence")
def sympy_equivalence(c: Candidate) -> Outcome:
    p = c.verification_payload
    missing = [k for k in ("kind", "answer_a", "answer_b") if k not in p]
    if missing:
        return Outcome("deterministic", False, "payload_missing_key", {"missing": missing})
    kind_a, kind_b = str(p["kind"]), str(p.get("kind_b", p["kind"]))
    try:
        tol = float(p.get("tolerance", DEFAULT_TOLERANCE))
    except (TypeError, ValueError):
        return Outcome("deterministic", False, "bad_tolerance", {"tolerance": str(p.get("tolerance"))})
    try:
        same, why = answers_equivalent(kind_a, str(p["answer_a"]), kind_b, str(p["answer_b"]), tol,
                                       str(p.get("unit_a", "")), str(p.get("unit_b", "")))
    except ParseError as exc:
        return Outcome("deterministic", False, "parse_error", {"message": str(exc)})
    ev = {"kind_a": kind_a, "kind_b": kind_b, "why": why}
    want_same = c.label in HIT_LABELS
    if same == want_same:
        return Outcome("deterministic", True, "ok", ev)
    return Outcome("deterministic", False, "answers_differ_for_hit" if want_same else "answers_equal_for_miss", ev)
