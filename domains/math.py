"""math: problems whose answers sympy computes, and pairs of them.

Templates come from sources/curated/math.yaml (equations, systems, derivatives, integrals,
expansion, factoring, simplification, evaluation, percentages, word problems with units, unit
conversions). A template's parameters are sampled with the context's stable randomness, its answer
is computed by sympy (never typed), and its text is rendered in several surface styles.

Labels (answers name the variable or the unit, because a rename changes the answer text):
- EQUIV: one problem in two surface forms (spacing, `*` vs implicit product, `^` vs `**`,
  "Solve" vs "Solve:"), the same answer.
- PARA_SAFE: a reworded instruction, the same problem and variable names, the same answer.
- RELATED_UNSAFE: another question on the same material (derivative vs integral of one function,
  solve vs factor one polynomial, area vs perimeter of one rectangle).
- ADVERSARIAL: one answer-determining token changed by a typed operator (variable rename, operand
  change, operator swap, sign flip, exponent change, unit change, coefficient swap); the operator
  and its parameters are recorded, and sympy must confirm that the answer changed.
- UNRELATED: two problems from different templates, each rendered only for that pair.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any, Iterable, Mapping

from domains.curated import read_curated, curated_error
from domains.base import Candidate, DomainSpec, GenContext, Operator, Provenance, normalize_text
from domains.verify.sympy_equiv import DEFAULT_TOLERANCE, ParseError, answers_equivalent, parse_answer, parse_math
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "math"
VERSION = "1"
SOURCE_FILE = CURATED / "math.yaml"
STYLES = ("explicit", "implicit", "compact", "pystar", "dense")
OPERATORS = ("variable_rename", "operand_change", "operator_swap", "sign_flip", "exponent_change",
             "unit_change", "coefficient_swap")
PARAM_KINDS = ("var", "int", "dec", "values", "choice")
TASK_TYPES = ("solve", "system_value", "derivative", "integral", "evaluate", "expand", "factor", "simplify",
              "quantity")
# Per-family query-text reuse limits (domains/README.md): a text in at most 3 candidates, a group of
# candidates linked by shared texts at most 6.
MAX_TEXT_USES, MAX_GROUP = 3, 6


class Invalid(Exception):
    """A problem instance without a usable answer (no real solution, singular system, ...)."""


# ---------------------------------------------------------------- curated templates


@dataclass(frozen=True)
class Template:
    id: str
    subcategory: str
    topic: str
    params: Mapping[str, Mapping[str, Any]]
    derived: Mapping[str, str]
    nonzero: tuple[str, ...]
    math: Mapping[str, str]
    task: Mapping[str, Any]
    surfaces: tuple[str, ...]
    paraphrases: tuple[str, ...]
    related: tuple[Mapping[str, Any], ...]
    operators: Mapping[str, tuple]

    def kind(self, name: str) -> str:
        return next(iter(self.params[name]))


@dataclass(frozen=True)
class Curated:
    variable_pool: tuple[str, ...]
    grounding: Mapping[str, str]
    templates: tuple[Template, ...]

    def template(self, tid: str) -> Template:
        for t in self.templates:
            if t.id == tid:
                return t
        raise KeyError(tid)


def _bad(record: str, problem: str, fix: str) -> InputError:
    return curated_error(SOURCE_FILE, record, problem, fix)


def _template(raw: Any, i: int) -> Template:
    rec = f"templates[{i}]"
    if not isinstance(raw, dict) or "id" not in raw:
        raise _bad(rec, "a template must be a mapping with an id", "Add `id:`")
    rec = f"template {raw['id']}"
    allowed = {"id", "subcategory", "topic", "params", "derived", "nonzero", "math", "task", "surfaces",
               "paraphrases", "related", "operators"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise _bad(rec, f"unknown key(s) {', '.join(unknown)}", f"Use only {', '.join(sorted(allowed))}")
    for key in ("subcategory", "topic", "params", "task", "surfaces", "paraphrases"):
        if not raw.get(key):
            raise _bad(rec, f"missing `{key}`", "Add it (see the header of the file)")
    for name, spec in raw["params"].items():
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in PARAM_KINDS:
            raise _bad(rec, f"param {name} must be one of {{{', '.join(PARAM_KINDS)}: ...}}", "Fix its spec")
    for op, targets in (raw.get("operators") or {}).items():
        if op not in OPERATORS:
            raise _bad(rec, f"unknown operator {op}", f"Use one of {', '.join(OPERATORS)}")
        flat = [t for tgt in targets for t in (tgt if isinstance(tgt, list) else [tgt])]
        missing = [t for t in flat if t not in raw["params"] and t not in (raw.get("derived") or {})]
        if missing:
            raise _bad(rec, f"operator {op} names unknown param(s) {', '.join(missing)}", "Name a param")
    for task in [raw["task"], *[r.get("task", {}) for r in raw.get("related") or []]]:
        if task.get("type") not in TASK_TYPES:
            raise _bad(rec, f"task type {task.get('type')!r} unknown", f"Use one of {', '.join(TASK_TYPES)}")
    if len(raw["surfaces"]) < 2:
        raise _bad(rec, "fewer than 2 surfaces", "EQUIV pairs need two surface forms")
    return Template(
        id=str(raw["id"]), subcategory=str(raw["subcategory"]), topic=str(raw["topic"]),
        params=dict(raw["params"]), derived=dict(raw.get("derived") or {}),
        nonzero=tuple(raw.get("nonzero") or ()), math=dict(raw.get("math") or {}), task=dict(raw["task"]),
        surfaces=tuple(raw["surfaces"]), paraphrases=tuple(raw["paraphrases"]),
        related=tuple(raw.get("related") or ()),
        operators={k: tuple(tuple(t) if isinstance(t, list) else t for t in v)
                   for k, v in sorted((raw.get("operators") or {}).items())},
    )


@lru_cache(maxsize=1)
def load_curated() -> Curated:
    """Parse and check sources/curated/math.yaml (cached)."""
    data = read_curated(SOURCE_FILE, ("templates",))
    if not data["templates"]:
        raise _bad("top level", "no `templates` list", "Add the templates section")
    templates = tuple(_template(t, i) for i, t in enumerate(data["templates"]))
    ids = [t.id for t in templates]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise _bad("templates", f"duplicate id(s) {', '.join(dupes)}", "Give every template its own id")
    return Curated(tuple(data.get("variable_pool") or ("x", "y", "t")), dict(data.get("grounding") or {}), templates)


# ---------------------------------------------------------------- problems and rendering


@dataclass(frozen=True)
class Problem:
    """A template with sampled values: Fraction for numbers, str for variables, int index for
    choices. Derived values are frozen at sampling, so an operator edits only displayed tokens."""

    template: str
    values: tuple[tuple[str, Any], ...]

    def get(self) -> dict[str, Any]:
        return dict(self.values)

    def with_(self, **changes: Any) -> "Problem":
        vals = self.get()
        vals.update(changes)
        return replace(self, values=tuple(sorted(vals.items())))


@dataclass(frozen=True)
class Answer:
    """An expected answer: display text, sympy form for the verifier, its kind and unit."""

    kind: str
    display: str
    form: str
    unit: str = ""


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


def _values(tpl: Template, prob: Problem, formula: bool) -> dict[str, Any]:
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
    vals = _values(tpl, prob, formula=False)
    body = tpl.math.get(src, src)
    for name, entry in tpl.math.items():
        if "{" + name + "}" in body:
            vals[name] = entry.format_map(_values(tpl, prob, formula=False))
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
    vals = _values(tpl, prob, formula=False)
    for name in tpl.math:
        vals[name] = style_math(math_text(tpl, prob, name), style)
    return text.format_map(vals)


# ---------------------------------------------------------------- answers (sympy)


def _sym(name: str):
    import sympy as sp

    return sp.Symbol(name)


def _number(tpl: Template, prob: Problem, ref: Any):
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
    from domains.verify.sympy_equiv import parse_equation

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


def _compute(tpl: Template, prob: Problem, task: Mapping[str, Any]) -> Answer:
    import sympy as sp

    kind, vals = task["type"], prob.get()
    if kind == "solve":
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
    if kind == "system_value":
        syms, sols = _solve(tpl, prob, task)
        if len(sols) != 1 or set(sols[0]) != set(syms):
            raise Invalid("no_unique_solution")
        return _quantity(parse_math(math_text(tpl, prob, task["expr"])).subs(sols[0]))
    if kind == "quantity":
        value = parse_math(task["formula"].format_map(_values(tpl, prob, formula=True)))
        text_vals = _values(tpl, prob, formula=False)
        display = task.get("display", "{value}").replace("{value}", "{{value}}").format_map(text_vals)
        return _quantity(value, str(task.get("unit", "")).format_map(text_vals), display, word=True)
    expr = parse_math(math_text(tpl, prob, task["expr"]))
    if kind == "evaluate":
        subs = {_sym(vals[v]): _number(tpl, prob, ref) for v, ref in sorted(task["at"].items())}
        return _quantity(sp.simplify(expr.subs(subs)))
    if kind in ("expand", "factor", "simplify"):
        fn = {"expand": sp.expand, "factor": sp.factor, "simplify": sp.cancel}[kind]
        out = sp.sstr(fn(expr))
        return Answer("expression", out, out)
    var = _sym(vals[task["var"]])
    if kind == "derivative":
        order = int(task.get("order", 1))
        d = sp.diff(expr, var, order)
        if "at" in task:
            return _quantity(sp.simplify(d.subs(var, _number(tpl, prob, task["at"]))))
        if not task.get("fn"):
            return Answer("expression", sp.sstr(d), sp.sstr(d))
        fn = _values(tpl, prob, formula=False).get(task["fn"], task["fn"])  # a choice param or a literal
        lhs = f"Derivative({fn}({var}), {', '.join([str(var)] * order)})"
        return Answer("equation", f"{fn}{chr(39) * order}({var}) = {sp.sstr(d)}", f"{lhs} = {sp.sstr(d)}")
    if kind == "integral":
        if "lo" in task:
            lo, hi = _number(tpl, prob, task["lo"]), _number(tpl, prob, task["hi"])
            return _quantity(sp.integrate(expr, (var, lo, hi)))
        text = f"{sp.sstr(sp.integrate(expr, var))} + C"
        return Answer("expression", text, text)
    raise Invalid(f"unknown_task:{kind}")


def same_answer(a: Answer, b: Answer) -> bool:
    """The verifier's notion of equal answers (kind, names, units, value)."""
    same, _ = answers_equivalent(a.kind, a.form, b.kind, b.form, DEFAULT_TOLERANCE, a.unit, b.unit)
    return same


# ---------------------------------------------------------------- sampling


def _sample_value(spec: Mapping[str, Any], rng) -> Any:
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
    value = parse_math(formula.format_map(_values(tpl, prob, formula=True)))
    if not value.is_Rational:
        raise Invalid("derived_not_rational")
    return Fraction(int(value.p), int(value.q))


def sample_problem(tpl: Template, rng) -> Problem | None:
    """One problem: params sampled, derived values computed, constraints checked; None if a
    constraint fails or the problem has no answer."""
    prob = Problem(tpl.id, tuple(sorted((n, _sample_value(s, rng)) for n, s in tpl.params.items())))
    try:
        for name, formula in tpl.derived.items():
            prob = prob.with_(**{name: _formula_value(tpl, prob, formula)})
        if any(_formula_value(tpl, prob, f) == 0 for f in tpl.nonzero):
            return None
        compute(tpl, prob, tpl.task)
    except Invalid:
        return None
    return prob


# ---------------------------------------------------------------- operators


def _spec(tpl: Template, name: str) -> tuple[str, Any]:
    return next(iter(tpl.params[name].items())) if name in tpl.params else ("int", None)


def _shown(tpl: Template, name: str, value: Any) -> Any:
    kind, arg = _spec(tpl, name)
    if kind == "choice":
        return arg[value]  # the choice itself (a word or a small mapping), JSON as written
    return value if kind == "var" else num_text(value)


def _edit(tpl: Template, seed: Problem, op: str, target: Any, rng) -> tuple[Problem, dict] | None:
    vals = seed.get()
    if op == "coefficient_swap":
        p, q = target
        if vals[p] == vals[q]:
            return None
        return (seed.with_(**{p: vals[q], q: vals[p]}),
                {"params": [p, q], "from": [_shown(tpl, p, vals[p]), _shown(tpl, q, vals[q])],
                 "to": [_shown(tpl, p, vals[q]), _shown(tpl, q, vals[p])]})
    old, (kind, arg) = vals[target], _spec(tpl, target)
    if op == "variable_rename":
        used = {v for n, v in vals.items() if _spec(tpl, n)[0] == "var"}
        pool = [v for v in load_curated().variable_pool if v not in used]
        new = rng.choice(pool) if pool else None
    elif kind == "choice":
        others = [i for i in range(len(arg)) if i != old]
        new = rng.choice(others) if others and op in ("operand_change", "operator_swap", "unit_change") else None
    elif op in ("operator_swap", "sign_flip"):
        new = -old if old != 0 else None
    elif op == "exponent_change":
        new = rng.choice([e for e in (old - 1, old + 1) if e >= 2])
    elif op == "operand_change":
        if kind == "values":
            choices = [Fraction(str(v)) for v in arg if Fraction(str(v)) != old]
        else:
            step = Fraction(str(arg[2])) if arg is not None and len(arg) > 2 else Fraction(1)
            choices = [old + k * step for k in (-3, -2, -1, 1, 2, 3)]
            # keep the sign: a sign change is sign_flip's or operator_swap's job
            choices = [c for c in choices if c != 0 and (c > 0) == (old > 0)]
        new = rng.choice(choices) if choices else None
    else:
        new = None
    if new is None:
        return None
    return seed.with_(**{target: new}), {"param": target, "from": _shown(tpl, target, old),
                                         "to": _shown(tpl, target, new)}


def _make_operator(name: str) -> Operator:
    def apply(seed: Problem, rng) -> tuple[Problem, dict] | None:
        """Edit one answer-determining token of the seed; None when the operator does not apply."""
        tpl = load_curated().template(seed.template)
        targets = tpl.operators.get(name)
        if not targets:
            return None
        return _edit(tpl, seed, name, rng.choice(list(targets)), rng)

    descriptions = {
        "variable_rename": "rename a variable (x -> t); the answer repeats it",
        "operand_change": "change one number (25% -> 20%, 2.5 h -> 3 h, a constant term)",
        "operator_swap": "swap a binary operator or function (+ <-> -, sin <-> cos, increase <-> decrease)",
        "sign_flip": "negate a leading coefficient",
        "exponent_change": "raise or lower an exponent by one",
        "unit_change": "change the unit asked for or given (km -> miles, kg -> litres)",
        "coefficient_swap": "swap the coefficients of two terms (3x + 5y -> 5x + 3y)",
    }
    return Operator(name, descriptions[name], apply)


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


# ---------------------------------------------------------------- candidates


def _payload(a: Answer, b: Answer) -> dict[str, Any]:
    p: dict[str, Any] = {"kind": a.kind, "answer_a": a.form, "answer_b": b.form, "tolerance": DEFAULT_TOLERANCE,
                         "unit_a": a.unit, "unit_b": b.unit}
    if b.kind != a.kind:
        p["kind_b"] = b.kind
    return p


def _candidate(tpl: Template, label: str, qa: str, qb: str, a: Answer, b: Answer, rationale: str, record: str, *,
               method: str = "curated", template_id: str | None = None, operator: str | None = None,
               params: Mapping[str, Any] | None = None) -> Candidate:
    grounding = load_curated().grounding.get(label, "A math assistant compares two exercises about a {topic}.")
    return Candidate(
        domain=DOMAIN, subcategory=tpl.subcategory, label=label, query_a=qa, query_b=qb,
        expected_answer_a=a.display, expected_answer_b=b.display, rationale=rationale,
        verification_method="sympy_equivalence", verification_payload=_payload(a, b),
        construction_method=method, source="curated", real_world_grounding=grounding.format(topic=tpl.topic),
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION,
                              template_id=template_id or tpl.id, operator=operator, operator_params=params,
                              source_file="sources/curated/math.yaml", source_record=record),
    )


@dataclass(frozen=True)
class Form:
    """How a query is written: an instruction text (surface or paraphrase) and a math style."""

    text: str
    style: str
    kind: str
    index: int


def forms(tpl: Template, kind: str) -> list[Form]:
    texts = tpl.surfaces if kind == "surface" else tpl.paraphrases
    styles = STYLES if tpl.math else ("explicit",)
    return [Form(t, s, kind, i) for i, t in enumerate(texts) for s in styles]


def _describe(params: Mapping[str, Any]) -> str:
    if "params" in params:
        return f"{params['params'][0]}, {params['params'][1]}: {params['from']} -> {params['to']}"
    return f"{params['param']}: {params['from']} -> {params['to']}"


def _family(tpl: Template, prob: Problem, record: str, rng, drops: Counter) -> list[Candidate]:
    """EQUIV, PARA_SAFE, two ADVERSARIAL and one RELATED_UNSAFE around one problem; a group of at
    most 5 candidates linked by shared query texts."""
    base = compute(tpl, prob, tpl.task)
    surfaces = forms(tpl, "surface")
    f0 = rng.choice(surfaces)
    q0 = render(tpl, prob, f0.text, f0.style)
    alts = [f for f in surfaces if normalize_text(render(tpl, prob, f.text, f.style)) != normalize_text(q0)]
    f1 = rng.choice(alts)
    q1 = render(tpl, prob, f1.text, f1.style)
    fp = rng.choice(forms(tpl, "paraphrase"))
    qp = render(tpl, prob, fp.text, fp.style)
    notation = f"{f0.style} vs {f1.style} notation, " if tpl.math else ""
    out = [
        _candidate(tpl, "EQUIV", q0, q1, base, base,
                   f"The same {tpl.topic}; only the surface form differs ({notation}instruction form {f0.index} vs "
                   f"{f1.index}). Sympy answer for both: {base.display}.", record),
        _candidate(tpl, "PARA_SAFE", q0, qp, base, base,
                   f"The instruction is reworded; the {tpl.topic}, its numbers, units and variable names are "
                   f"unchanged. Sympy answer for both: {base.display}.", record),
    ]
    ops = [op for op in OPERATORS if tpl.operators.get(op)]
    rng.shuffle(ops)
    anchors = [(f0, q0), (fp, qp)]
    for op in ops:
        if not anchors:
            break
        res = perturb(prob, op, rng)
        if isinstance(res, str):
            drops[res] += 1
            continue
        variant, params, ans = res
        form, q = anchors[0]
        qv = render(tpl, variant, form.text, form.style)
        if normalize_text(qv) == normalize_text(q):
            drops[f"{op}:query_unchanged"] += 1
            continue
        anchors.pop(0)
        out.append(_candidate(tpl, "ADVERSARIAL", q, qv, base, ans,
                              f"{op} ({_describe(params)}) changes one answer-determining token; sympy gives "
                              f"{base.display} vs {ans.display}.", record, method="adversarial_perturbation",
                              operator=op, params=params))
    if anchors:
        drops["adversarial:operators_exhausted"] += len(anchors)
    related = list(tpl.related)
    rng.shuffle(related)
    for rel in related:
        try:
            rans = compute(tpl, prob, rel["task"])
        except Invalid as exc:
            drops[f"related:{str(exc).split(':')[0]}"] += 1
            continue
        if same_answer(base, rans):
            drops["related:answer_equal"] += 1
            continue
        qr = render(tpl, prob, rel["text"], f1.style)
        out.append(_candidate(tpl, "RELATED_UNSAFE", q1, qr, base, rans,
                              f"Same material, different question ({tpl.task['type']} vs {rel['id']}): "
                              f"{base.display} vs {rans.display}.", record, template_id=f"{tpl.id}/{rel['id']}"))
        break
    return out


def _unrelated(cur: Curated, n: int, ctx: GenContext, used: set[str], drops: Counter) -> list[Candidate]:
    """Pairs of problems from templates of different subcategories, rendered only for that pair."""
    rng = ctx.rng("unrelated")
    out: list[Candidate] = []
    for attempt in range(n * 20):
        if len(out) >= n:
            break
        ta, tb = rng.sample(list(cur.templates), 2)
        if ta.subcategory == tb.subcategory:
            continue
        pa, pb = sample_problem(ta, rng), sample_problem(tb, rng)
        if pa is None or pb is None:
            drops["unrelated:no_problem"] += 1
            continue
        fa = rng.choice(forms(ta, "surface") + forms(ta, "paraphrase"))
        fb = rng.choice(forms(tb, "surface") + forms(tb, "paraphrase"))
        qa, qb = render(ta, pa, fa.text, fa.style), render(tb, pb, fb.text, fb.style)
        na, nb = normalize_text(qa), normalize_text(qb)
        if na in used or nb in used:
            drops["unrelated:text_in_use"] += 1
            continue
        used.update((na, nb))
        a, b = compute(ta, pa, ta.task), compute(tb, pb, tb.task)
        out.append(_candidate(ta, "UNRELATED", qa, qb, a, b,
                              f"Different problems ({ta.topic} vs {tb.topic}): {a.display} vs {b.display}.",
                              f"unrelated#{attempt}", template_id=f"{ta.id}+{tb.id}"))
    return out


def _guard(cands: Iterable[Candidate], drops: Counter) -> list[Candidate]:
    """Keep distinct pairs whose query texts stay within the family limits, in generation order."""
    uses: Counter = Counter()
    parent: dict[str, str] = {}
    size: Counter = Counter()
    seen: set = set()
    out: list[Candidate] = []

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for c in cands:
        a, b = normalize_text(c.query_a), normalize_text(c.query_b)
        sig = c.pair_signature()
        if c.query_a == c.query_b or a == b:
            drops[f"{c.label}:identical_queries"] += 1
            continue
        if sig in seen:
            drops[f"{c.label}:duplicate_pair"] += 1
            continue
        ra, rb = find(a), find(b)
        group = size[ra] + (size[rb] if rb != ra else 0) + 1
        if uses[a] >= MAX_TEXT_USES or uses[b] >= MAX_TEXT_USES or group > MAX_GROUP:
            drops[f"{c.label}:family_limit"] += 1
            continue
        seen.add(sig)
        uses[a] += 1
        uses[b] += 1
        parent[rb] = ra
        size[ra] = group
        out.append(c)
    return out


def _per_template(need: Mapping[str, int], cur: Curated) -> int:
    n_t = len(cur.templates)
    n_rel = sum(1 for t in cur.templates if t.related) or 1
    want = max(need.get("EQUIV", 0), need.get("PARA_SAFE", 0), need.get("ADVERSARIAL", 0) / 2,
               need.get("RELATED_UNSAFE", 0) * n_t / n_rel)
    return max(4, -(-int(want * 1.4) // n_t))


@lru_cache(maxsize=4)
def _build(need: tuple[tuple[str, int], ...]) -> tuple[tuple[Candidate, ...], tuple[tuple[str, int], ...]]:
    ctx = GenContext(domain=DOMAIN, profile="", need=dict(need))
    cur = load_curated()
    drops: Counter = Counter()
    per = _per_template(ctx.need, cur)
    cands: list[Candidate] = []
    for tpl in cur.templates:
        rng = ctx.rng("template", tpl.id)
        seen_text: set[str] = set()
        for i in range(per * 40):
            if len(seen_text) >= per:
                break
            prob = sample_problem(tpl, rng)
            if prob is None:
                continue
            key = normalize_text(render(tpl, prob, tpl.surfaces[0], "explicit"))
            if key in seen_text:
                continue
            seen_text.add(key)
            cands.extend(_family(tpl, prob, f"{tpl.id}#{len(seen_text) - 1}", ctx.rng("family", tpl.id, i), drops))
        if len(seen_text) < per:
            drops[f"template:{tpl.id}:few_problems"] += per - len(seen_text)
    cands = _guard(cands, drops)
    used = {normalize_text(q) for c in cands for q in (c.query_a, c.query_b)}
    n_unrel = max(60, -(-int(ctx.need.get("UNRELATED", 0) * 3) // 2))
    cands += _guard(_unrelated(cur, n_unrel, ctx, used, drops), drops)
    return tuple(cands), tuple(sorted(drops.items()))


def build(ctx: GenContext) -> tuple[list[Candidate], Counter]:
    """Every candidate of the domain for this context, and the generation drops by reason."""
    cands, drops = _build(tuple(sorted((k, int(v)) for k, v in ctx.need.items())))
    return list(cands), Counter(dict(drops))


def _curated(ctx: GenContext) -> list[Candidate]:
    return [c for c in build(ctx)[0] if c.construction_method == "curated"]


def _adversarial(ctx: GenContext) -> list[Candidate]:
    return [c for c in build(ctx)[0] if c.construction_method == "adversarial_perturbation"]


def policy(c: Candidate) -> str | None:
    """Math answers are deterministic and user-independent: no policy forces a MISS."""
    return None


SPEC = DomainSpec(
    name=DOMAIN,
    description="Equations, systems, calculus, algebra, percentages and unit word problems with sympy-computed answers.",
    generators={"curated": _curated, "adversarial_perturbation": _adversarial},
    verifier="sympy_equivalence",
    operators=OPERATOR_OBJECTS,
    policy=policy,
    version=VERSION,
)
