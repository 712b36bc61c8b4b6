"""Sampling a problem from a template: parameters drawn with the caller's seeded generator,
derived values computed, constraints checked, and an answer required to exist."""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from domains.math.answers import Invalid, compute
from domains.math.catalog import Problem, Template
from domains.math.render import placeholder_values
from domains.verify.sympy_equiv import parse_math


def sample_value(spec: Mapping[str, Any], rng) -> Any:
    """One value of a parameter spec: a variable name, a choice index, or a Fraction drawn from a
    list of values or an integer/decimal range with an optional step."""
    kind, arg = next(iter(spec.items()))
    if kind == "var":
        return rng.choice(list(arg))
    if kind == "choice":
        return rng.randrange(len(arg))
    if kind == "values":
        return Fraction(str(rng.choice(list(arg))))
    lo, hi = Fraction(str(arg[0])), Fraction(str(arg[1]))
    step = Fraction(str(arg[2])) if len(arg) > 2 else Fraction(1)
    return lo + step * rng.randrange(int((hi - lo) / step) + 1)


def _formula_value(tpl: Template, prob: Problem, formula: str) -> Fraction:
    value = parse_math(formula.format_map(placeholder_values(tpl, prob, formula=True)))
    if not value.is_Rational:
        raise Invalid("derived_not_rational")
    return Fraction(int(value.p), int(value.q))


def sample_problem(tpl: Template, rng) -> Problem | None:
    """One problem: params sampled, derived values computed, constraints checked; None if a
    constraint fails or the problem has no answer."""
    prob = Problem(tpl.id, tuple(sorted((n, sample_value(s, rng)) for n, s in tpl.params.items())))
    try:
        for name, formula in tpl.derived.items():
            prob = prob.with_(**{name: _formula_value(tpl, prob, formula)})
        if any(_formula_value(tpl, prob, f) == 0 for f in tpl.nonzero):
            return None
        compute(tpl, prob, tpl.task)
    except Invalid:
        return None
    return prob
