"""Expected answers of math problems, computed by sympy (never typed by hand).

An answer names its variable or unit (`x = 5`, `150 km`), because a rename or a unit change is
an ADVERSARIAL edit and must change the answer text. sympy is imported inside the functions that
use it: it is heavy, and importing the domain (e.g. to list operators) should not pay for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from domains.math.catalog import Problem, Template
from domains.math.render import math_text, num_text, placeholder_values
from domains.verify.sympy_equiv import (DEFAULT_TOLERANCE, ParseError, answers_equivalent, parse_answer,
                                        parse_equation, parse_math)


class Invalid(Exception):
    """A problem instance without a usable answer (no real solution, singular system, ...)."""


@dataclass(frozen=True)
class Answer:
    """An expected answer: display text, sympy form for the verifier, its kind and unit."""

    kind: str
    display: str
    form: str
    unit: str = ""


def _sym(name: str):
    import sympy as sp

    return sp.Symbol(name)


def _number(prob: Problem, ref: Any):
    """A task argument that is a number or a param name → sympy number."""
    import sympy as sp

    vals = prob.get()
    if isinstance(ref, str) and ref in vals:
        v = vals[ref]
        return sp.Rational(v.numerator, v.denominator)
    return sp.Rational(str(ref))


def _quantity(value: Any, unit: str = "", display: str = "{value}", word: bool = False) -> Answer:
    import sympy as sp

    value = sp.nsimplify(value) if value.is_Float else value
    if value.free_symbols or not value.is_real:
        raise Invalid("not_a_real_number")
    if value.is_Rational:
        text = num_text(Fraction(int(value.p), int(value.q)))
        if word and "/" in text:
            raise Invalid("non_terminating_decimal")
    else:
        text = sp.sstr(value)
    return Answer("quantity", display.format(value=text), sp.sstr(value), unit)


def _solve(tpl: Template, prob: Problem, task: Mapping[str, Any]) -> tuple[list, list]:
    import sympy as sp

    vals = prob.get()
    eqs = [parse_equation(math_text(tpl, prob, e)) for e in task["equations"]]
    syms = [_sym(vals[v]) for v in task["vars"]]
    sols = sp.solve([lhs - rhs for lhs, rhs in eqs], syms, dict=True)
    return syms, sols


def compute(tpl: Template, prob: Problem, task: Mapping[str, Any]) -> Answer:
    """The answer of one task on one problem, computed by sympy. Raises Invalid."""
    import sympy as sp

    try:
        ans = _compute(tpl, prob, task)
        parse_answer(ans.kind, ans.form)  # the verifier must be able to read what we wrote
    except ParseError as exc:
        raise Invalid(f"unparsable:{exc}") from None
    except (ZeroDivisionError, NotImplementedError, ValueError, sp.PolynomialError) as exc:
        raise Invalid(f"sympy:{type(exc).__name__}") from None
    return ans


def _solve_answer(tpl: Template, prob: Problem, task: Mapping[str, Any]) -> Answer:
    import sympy as sp

    syms, sols = _solve(tpl, prob, task)
    if len(syms) == 1:
        roots = sorted({d[syms[0]] for d in sols if syms[0] in d}, key=lambda r: complex(r.evalf()).real)
        if not roots:
            raise Invalid("no_solution")
        if any(r.is_real is not True for r in roots):
            raise Invalid("non_real_solution")
        forms = [f"{syms[0]} = {sp.sstr(r)}" for r in roots]
        return Answer("equation" if len(forms) == 1 else "set", " or ".join(forms), "; ".join(forms))
    if len(sols) != 1 or set(sols[0]) != set(syms):
        raise Invalid("no_unique_solution")
    forms = [f"{s} = {sp.sstr(sols[0][s])}" for s in syms]
    return Answer("set", ", ".join(forms), "; ".join(forms))


def _calculus_answer(tpl: Template, prob: Problem, task: Mapping[str, Any], expr: Any) -> Answer:
    import sympy as sp

    kind, var = task["type"], _sym(prob.get()[task["var"]])
    if kind == "derivative":
        order = int(task.get("order", 1))
        d = sp.diff(expr, var, order)
        if "at" in task:
            return _quantity(sp.simplify(d.subs(var, _number(prob, task["at"]))))
        if not task.get("fn"):
            return Answer("expression", sp.sstr(d), sp.sstr(d))
        fn = placeholder_values(tpl, prob, formula=False).get(task["fn"], task["fn"])  # a choice param or a literal
        lhs = f"Derivative({fn}({var}), {', '.join([str(var)] * order)})"
        return Answer("equation", f"{fn}{chr(39) * order}({var}) = {sp.sstr(d)}", f"{lhs} = {sp.sstr(d)}")
    if kind == "integral":
        if "lo" in task:
            lo, hi = _number(prob, task["lo"]), _number(prob, task["hi"])
            return _quantity(sp.integrate(expr, (var, lo, hi)))
        text = f"{sp.sstr(sp.integrate(expr, var))} + C"
        return Answer("expression", text, text)
    raise Invalid(f"unknown_task:{kind}")


def _compute(tpl: Template, prob: Problem, task: Mapping[str, Any]) -> Answer:
    import sympy as sp

    kind, vals = task["type"], prob.get()
    if kind == "solve":
        return _solve_answer(tpl, prob, task)
    if kind == "system_value":
        syms, sols = _solve(tpl, prob, task)
        if len(sols) != 1 or set(sols[0]) != set(syms):
            raise Invalid("no_unique_solution")
        return _quantity(parse_math(math_text(tpl, prob, task["expr"])).subs(sols[0]))
    if kind == "quantity":
        value = parse_math(task["formula"].format_map(placeholder_values(tpl, prob, formula=True)))
        text_vals = placeholder_values(tpl, prob, formula=False)
        display = task.get("display", "{value}").replace("{value}", "{{value}}").format_map(text_vals)
        return _quantity(value, str(task.get("unit", "")).format_map(text_vals), display, word=True)
    expr = parse_math(math_text(tpl, prob, task["expr"]))
    if kind == "evaluate":
        subs = {_sym(vals[v]): _number(prob, ref) for v, ref in sorted(task["at"].items())}
        return _quantity(sp.simplify(expr.subs(subs)))
    if kind in ("expand", "factor", "simplify"):
        fn = {"expand": sp.expand, "factor": sp.factor, "simplify": sp.cancel}[kind]
        out = sp.sstr(fn(expr))
        return Answer("expression", out, out)
    return _calculus_answer(tpl, prob, task, expr)


def same_answer(a: Answer, b: Answer) -> bool:
    """The verifier's notion of equal answers (kind, names, units, value)."""
    same, _ = answers_equivalent(a.kind, a.form, b.kind, b.form, DEFAULT_TOLERANCE, a.unit, b.unit)
    return same
