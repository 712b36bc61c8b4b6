"""The math domain's curated templates (sources/curated/math.yaml), parsed and checked, and the
`Problem` a template becomes once its parameters are sampled.

Every defect in the file is a one-line InputError naming the template and how to fix it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping

from domains.curated import curated_error, read_curated
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

SOURCE_FILE = CURATED / "math.yaml"
OPERATORS = ("variable_rename", "operand_change", "operator_swap", "sign_flip", "exponent_change",
             "unit_change", "coefficient_swap")
PARAM_KINDS = ("var", "int", "dec", "values", "choice")
TASK_TYPES = ("solve", "system_value", "derivative", "integral", "evaluate", "expand", "factor", "simplify",
              "quantity")
_TEMPLATE_KEYS = {"id", "subcategory", "topic", "params", "derived", "nonzero", "math", "task", "surfaces",
                  "paraphrases", "related", "operators"}


@dataclass(frozen=True)
class Template:
    """One curated problem template: parameter specs, derived values, math entries, the task sympy
    computes, instruction texts (surfaces and paraphrases), related tasks and operator targets."""

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
        """The kind of parameter `name` (one of PARAM_KINDS)."""
        return next(iter(self.params[name]))


@dataclass(frozen=True)
class Curated:
    """The whole curated file: the variable pool for renames, grounding sentences per label and
    the templates."""

    variable_pool: tuple[str, ...]
    grounding: Mapping[str, str]
    templates: tuple[Template, ...]

    def template(self, tid: str) -> Template:
        """The template with id `tid` (KeyError when there is none)."""
        for t in self.templates:
            if t.id == tid:
                return t
        raise KeyError(tid)


@dataclass(frozen=True)
class Problem:
    """A template with sampled values: Fraction for numbers, str for variables, int index for
    choices. Derived values are frozen at sampling, so an operator edits only displayed tokens."""

    template: str
    values: tuple[tuple[str, Any], ...]

    def get(self) -> dict[str, Any]:
        """The values as a dict."""
        return dict(self.values)

    def with_(self, **changes: Any) -> "Problem":
        """The problem with some values replaced (kept sorted, so equal problems compare equal)."""
        vals = self.get()
        vals.update(changes)
        return replace(self, values=tuple(sorted(vals.items())))


def _bad(record: str, problem: str, fix: str) -> InputError:
    return curated_error(SOURCE_FILE, record, problem, fix)


def parse_template(raw: Any, i: int) -> Template:
    """Check one raw template (the i-th of the file) and build it; InputError on any defect."""
    rec = f"templates[{i}]"
    if not isinstance(raw, dict) or "id" not in raw:
        raise _bad(rec, "a template must be a mapping with an id", "Add `id:`")
    rec = f"template {raw['id']}"
    unknown = sorted(set(raw) - _TEMPLATE_KEYS)
    if unknown:
        raise _bad(rec, f"unknown key(s) {', '.join(unknown)}", f"Use only {', '.join(sorted(_TEMPLATE_KEYS))}")
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
    templates = tuple(parse_template(t, i) for i, t in enumerate(data["templates"]))
    ids = [t.id for t in templates]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise _bad("templates", f"duplicate id(s) {', '.join(dupes)}", "Give every template its own id")
    return Curated(tuple(data.get("variable_pool") or ("x", "y", "t")), dict(data.get("grounding") or {}), templates)
