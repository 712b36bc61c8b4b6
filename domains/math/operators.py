"""The math domain's typed perturbation operators.

Each operator edits one answer-determining token of a problem (the template's `operators:` entry
names which parameters it may touch) and records what it changed; `perturb` then asks sympy
whether the answer really changed, and names the reason when it did not.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from domains.base import Operator
from domains.math.answers import Answer, Invalid, compute, same_answer
from domains.math.catalog import OPERATORS, Problem, Template, load_curated
from domains.math.render import num_text

DESCRIPTIONS = {
    "variable_rename": "rename a variable (x -> t); the answer repeats it",
    "operand_change": "change one number (25% -> 20%, 2.5 h -> 3 h, a constant term)",
    "operator_swap": "swap a binary operator or function (+ <-> -, sin <-> cos, increase <-> decrease)",
    "sign_flip": "negate a leading coefficient",
    "exponent_change": "raise or lower an exponent by one",
    "unit_change": "change the unit asked for or given (km -> miles, kg -> litres)",
    "coefficient_swap": "swap the coefficients of two terms (3x + 5y -> 5x + 3y)",
}


def _spec(tpl: Template, name: str) -> tuple[str, Any]:
    return next(iter(tpl.params[name].items())) if name in tpl.params else ("int", None)


def _shown(tpl: Template, name: str, value: Any) -> Any:
    kind, arg = _spec(tpl, name)
    if kind == "choice":
        return arg[value]  # the choice itself (a word or a small mapping), JSON as written
    return value if kind == "var" else num_text(value)


def _new_value(tpl: Template, vals: dict[str, Any], op: str, target: str, rng) -> Any:
    """The edited value of `target` under `op`, or None when the operator cannot edit it."""
    old, (kind, arg) = vals[target], _spec(tpl, target)
    if op == "variable_rename":
        used = {v for n, v in vals.items() if _spec(tpl, n)[0] == "var"}
        pool = [v for v in load_curated().variable_pool if v not in used]
        return rng.choice(pool) if pool else None
    if kind == "choice":
        others = [i for i in range(len(arg)) if i != old]
        return rng.choice(others) if others and op in ("operand_change", "operator_swap", "unit_change") else None
    if op in ("operator_swap", "sign_flip"):
        return -old if old != 0 else None
    if op == "exponent_change":
        return rng.choice([e for e in (old - 1, old + 1) if e >= 2])
    if op == "operand_change":
        if kind == "values":
            choices = [Fraction(str(v)) for v in arg if Fraction(str(v)) != old]
        else:
            step = Fraction(str(arg[2])) if arg is not None and len(arg) > 2 else Fraction(1)
            choices = [old + k * step for k in (-3, -2, -1, 1, 2, 3)]
            # keep the sign: a sign change is sign_flip's or operator_swap's job
            choices = [c for c in choices if c != 0 and (c > 0) == (old > 0)]
        return rng.choice(choices) if choices else None
    return None


def _edit(tpl: Template, seed: Problem, op: str, target: Any, rng) -> tuple[Problem, dict] | None:
    vals = seed.get()
    if op == "coefficient_swap":
        p, q = target
        if vals[p] == vals[q]:
            return None
        return (seed.with_(**{p: vals[q], q: vals[p]}),
                {"params": [p, q], "from": [_shown(tpl, p, vals[p]), _shown(tpl, q, vals[q])],
                 "to": [_shown(tpl, p, vals[q]), _shown(tpl, q, vals[p])]})
    new = _new_value(tpl, vals, op, target, rng)
    if new is None:
        return None
    return seed.with_(**{target: new}), {"param": target, "from": _shown(tpl, target, vals[target]),
                                         "to": _shown(tpl, target, new)}


def _make_operator(name: str) -> Operator:
    def apply(seed: Problem, rng) -> tuple[Problem, dict] | None:
        """Edit one answer-determining token of the seed; None when the operator does not apply."""
        tpl = load_curated().template(seed.template)
        targets = tpl.operators.get(name)
        if not targets:
            return None
        return _edit(tpl, seed, name, rng.choice(list(targets)), rng)

    return Operator(name, DESCRIPTIONS[name], apply)


OPERATOR_OBJECTS = {name: _make_operator(name) for name in OPERATORS}


def perturb(seed: Problem, op: str, rng) -> tuple[Problem, dict, Answer] | str:
    """Apply an operator and check with sympy that the answer changed. Returns (variant, params,
    answer) or the drop reason."""
    tpl = load_curated().template(seed.template)
    edited = OPERATOR_OBJECTS[op].apply(seed, rng)
    if edited is None:
        return f"{op}:not_applicable"
    variant, params = edited
    try:
        ans = compute(tpl, variant, tpl.task)
    except Invalid as exc:
        return f"{op}:{str(exc).split(':')[0]}"
    if same_answer(compute(tpl, seed, tpl.task), ans):
        return f"{op}:answer_unchanged"
    return variant, params, ans
