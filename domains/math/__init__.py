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

Modules, in the order data flows: `catalog` (the curated templates, `Problem`), `render` (query
text in five math styles), `answers` (sympy), `sampling`, `operators`, `planning` (candidates of
every label under the family guard), `policy`.
"""
from __future__ import annotations

from domains.base import DomainSpec, LMHooks
from domains.families import method_generators
from domains.lm import edits as lm_edit_task, generate as lm_paraphrase_task
from domains.math.answers import Answer, Invalid, compute, same_answer
from domains.math.catalog import OPERATORS, Curated, Problem, Template, load_curated
from domains.math.lm_hooks import lm_edit_seeds, lm_items, lm_resolve_edit
from domains.math.operators import OPERATOR_OBJECTS, perturb
from domains.math.planning import DOMAIN, VERSION, build
from domains.math.policy import policy
from domains.math.render import STYLES, Form, forms, math_text, num_text, render, style_math
from domains.math.sampling import sample_problem

__all__ = ["Answer", "Curated", "DOMAIN", "Form", "Invalid", "OPERATORS", "OPERATOR_OBJECTS", "Problem",
           "SPEC", "STYLES", "Template", "VERSION", "build", "compute", "forms", "load_curated", "math_text",
           "num_text", "perturb", "policy", "render", "same_answer", "sample_problem", "style_math"]

SPEC = DomainSpec(
    name=DOMAIN,
    description="Equations, systems, calculus, algebra, percentages and unit word problems with sympy-computed answers.",
    # One cached build per need serves both methods.
    generators={**method_generators(DOMAIN, lambda ctx: build(ctx)[0]),
                "lm_generated": lambda ctx: lm_paraphrase_task.generate(SPEC, ctx)[0] + lm_edit_task.generate(SPEC, ctx)[0]},
    verifier="sympy_equivalence",
    operators=OPERATOR_OBJECTS,
    policy=policy,
    version=VERSION,
    # A model rewords a problem (its math kept verbatim) or rewrites it with one number changed, which
    # sympy then answers (domains/math/lm_hooks.py).
    lm=LMHooks(items=lm_items, source_file="sources/curated/math.yaml", edit_seeds=lm_edit_seeds,
               resolve_edit=lm_resolve_edit),
)
