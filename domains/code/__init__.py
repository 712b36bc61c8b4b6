"""The `code` domain: requests for small functions, answered by a reference solution.

Seed material is sources/curated/code.yaml: tasks with a function name and parameters, behaviour
clauses, and variants (each a Python and a JavaScript reference plus test cases). A request is a
`Spec` (task, variant, language, frame, clause, surface form); rendering a Spec gives the query,
the reference solution (the expected answer) and the test program for that solution.

Rows: EQUIV = one Spec and a surface variant of it; PARA_SAFE = two frames and two clauses of the
same task, variant and language; RELATED_UNSAFE = two tasks of one topic group; UNRELATED = tasks
of different groups; ADVERSARIAL = a typed operator applied to a Spec (language swap, the task's
variant swap, a rename of the function in an attached stub). Every query text is used by one
candidate only, so families stay small. All rows verify with `ast_sandbox`.

Modules: `catalog` (the curated tasks), `render` (query and reference solution of a Spec),
`sandbox_tests` (the test program), `operators`, `planning` (candidates of every label under the
family guard), `policy`.
"""
from __future__ import annotations

from domains.base import DomainSpec, LMHooks
from domains.code.catalog import LANGS, curated, group_of, task, units, variant
from domains.code.lm_hooks import lm_edit_seeds, lm_resolve_edit
from domains.code.operators import OPERATORS
from domains.code.planning import DOMAIN, VERSION, plan
from domains.code.policy import policy
from domains.code.render import (SURFACE_OPS, Spec, rename_identifier, render_answer, render_query,
                                 surface_ops_for, surface_steps_effective)
from domains.code.sandbox_tests import render_tests
from domains.families import method_generators
from domains.lm import edits as lm_edit_task

__all__ = ["DOMAIN", "LANGS", "OPERATORS", "SPEC", "SURFACE_OPS", "Spec", "VERSION", "curated", "group_of",
           "plan", "policy", "rename_identifier", "render_answer", "render_query", "render_tests",
           "surface_ops_for", "surface_steps_effective", "task", "units", "variant"]

SPEC = DomainSpec(
    name=DOMAIN,
    description="Small function requests in Python and JavaScript, answered by curated reference solutions.",
    # Curated rows need no corpus; the plan is the same for every profile (the pipeline selects).
    generators={**method_generators(DOMAIN, lambda ctx: plan()),
                "lm_generated": lambda ctx: lm_edit_task.generate(SPEC, ctx)[0]},
    verifier="ast_sandbox",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    # A model rewrites a request with the language or the variant changed; the curated references and
    # their tests answer it (domains/code/lm_hooks.py).
    lm=LMHooks(source_file="sources/curated/code.yaml", edit_seeds=lm_edit_seeds, resolve_edit=lm_resolve_edit),
)
