"""Writing a math problem as text: numbers, math entries in five surface styles, and queries.

Every style of one canonical math text parses to the same sympy expression (explicit `3*x^2`,
implicit `3x^2`, compact `3x^2+2x`, pystar `3*x**2`, dense `3*x^2+2*x`), so two styles of one
problem make an EQUIV pair. Standard library only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from domains.math.catalog import Problem, Template

STYLES = ("explicit", "implicit", "compact", "pystar", "dense")


def num_text(x: Fraction) -> str:
    """7, 2.5, or 17/3 when the decimal would not terminate."""
    if x.denominator == 1:
        return str(x.numerator)
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    with localcontext() as ctx:
        ctx.prec = 50
        return format(Decimal(x.numerator) / Decimal(x.denominator), "f").rstrip("0").rstrip(".")


def placeholder_values(tpl: Template, prob: Problem, formula: bool) -> dict[str, Any]:
    """Placeholder values: text mode for queries and math, formula mode (numbers bracketed) for
    sympy formulas."""
    out: dict[str, Any] = {}
    for name, val in prob.values:
        kind = tpl.kind(name) if name in tpl.params else "int"
        if kind == "var":
            out[name] = val
        elif kind == "choice":
            choice = tpl.params[name]["choice"][val]
            if isinstance(choice, dict) and formula:
                choice = {k: f"({v})" if isinstance(v, (int, float)) else v for k, v in choice.items()}
            out[name] = choice
        else:
            out[name] = f"({num_text(val)})" if formula else num_text(val)
    return out


_CLEANUPS = (
    (re.compile(r"\+\s*-\s*"), "- "),                    # "x + -4"  -> "x - 4"
    (re.compile(r"(?<=[\w)])\s+-\s*-\s*"), " + "),       # "x - -4"  -> "x + 4"
    (re.compile(r"(?<![\d.^])1\*(?=[A-Za-z(])"), ""),    # "1*x"     -> "x", "-1*x" -> "-x"
    (re.compile(r"\^1(?![\d.])"), ""),                    # "x^1"     -> "x"
)


def math_text(tpl: Template, prob: Problem, src: str) -> str:
    """Canonical math text (explicit `*`, `^` powers) of a math entry or an inline math string."""
    vals = placeholder_values(tpl, prob, formula=False)
    body = tpl.math.get(src, src)
    for name, entry in tpl.math.items():
        if "{" + name + "}" in body:
            vals[name] = entry.format_map(placeholder_values(tpl, prob, formula=False))
    text = body.format_map(vals)
    for pattern, repl in _CLEANUPS:
        text = pattern.sub(repl, text)
    return text


_IMPLICIT_NUM = re.compile(r"(?<![\^\w.])(\d+)\*(?=[A-Za-z(])")
_IMPLICIT_PAREN = re.compile(r"\)\*(?=[A-Za-z(])")


def style_math(text: str, style: str) -> str:
    """One surface style of canonical math: explicit `3*x^2`, implicit `3x^2`, compact `3x^2+2x`,
    pystar `3*x**2`, dense `3*x^2+2*x`. Every style parses to the same sympy expression."""
    if style == "explicit":
        return text
    if style == "pystar":
        return text.replace("^", "**")
    if style == "dense":
        return text.replace(" ", "")
    implicit = _IMPLICIT_PAREN.sub(")", _IMPLICIT_NUM.sub(r"\1", text))
    return implicit if style == "implicit" else implicit.replace(" ", "")


def render(tpl: Template, prob: Problem, text: str, style: str) -> str:
    """A query: an instruction text with its math entries in one surface style."""
    vals = placeholder_values(tpl, prob, formula=False)
    for name in tpl.math:
        vals[name] = style_math(math_text(tpl, prob, name), style)
    return text.format_map(vals)


@dataclass(frozen=True)
class Form:
    """How a query is written: an instruction text (surface or paraphrase) and a math style."""

    text: str
    style: str
    kind: str
    index: int


def forms(tpl: Template, kind: str) -> list[Form]:
    """Every way to write a query of `tpl`: its surface (kind "surface") or paraphrase texts, each
    in every math style (only "explicit" when the template has no math entries)."""
    texts = tpl.surfaces if kind == "surface" else tpl.paraphrases
    styles = STYLES if tpl.math else ("explicit",)
    return [Form(t, s, kind, i) for i, t in enumerate(texts) for s in styles]
