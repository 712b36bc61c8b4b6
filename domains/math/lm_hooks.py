"""The math domain's part in LM-generated rows: rewordings (domains/lm/generate.py) and near-misses
(domains/lm/edits.py).

Rewordings: one sampled problem per template whose task type has keywords in the prompt file, its
phrasings the template's first surface and its paraphrases (explicit notation). A rewording must
keep every math entry of the problem verbatim, every number and no new one, a keyword of its task
("derivative", "factor") and none of another's (domains/lm/rules.py); both sides expect the answer
sympy computes for the problem.

Near-misses: one sampled problem per template that names numeric operator targets, written with its
first surface instruction in explicit notation ("Solve for x: 3*x + 5 = 20"). A model rewrites it
with one number changed; sympy, never the model, answers the rewrite:

- the changed span must be one number on both sides;
- it must be the displayed value of a numeric parameter or derived value of the template (one shown
  as "- 4" matches "4"), and the problem re-rendered with the new value must be the rewrite, word
  for word (so a number that appears twice, or a literal of the template, is never mistaken for a
  parameter);
- the edited problem must meet the template's `nonzero` constraints, have an answer
  (domains.math.answers.compute), and that answer must differ.
"""
from __future__ import annotations

import re
from fractions import Fraction

from typing import Mapping

from domains.base import Candidate, EditSeed, LMItem, Span, normalize_text, stable_rng
from domains.math.answers import Invalid, compute, same_answer
from domains.math.catalog import load_curated
from domains.math.planning import DOMAIN, _candidate, answer_payload
from domains.math.render import math_text, num_text, render
from domains.math.sampling import _formula_value, sample_problem

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
STYLE = "explicit"


def _targets(tpl) -> list[str]:
    """The numbers of a template a rewrite may change: its numeric parameters and derived values."""
    return [n for n in tpl.params if tpl.kind(n) in ("int", "dec", "values")] + list(tpl.derived)


def _sample(tpl, rng):
    for _ in range(20):
        prob = sample_problem(tpl, rng)
        if prob is not None:
            return prob
    return None


def lm_items(keywords: Mapping[str, tuple[str, ...]]) -> list[LMItem]:
    """One problem per template whose task type has keywords, with its surface and paraphrase texts."""
    items = []
    for tpl in load_curated().templates:
        kind = tpl.task["type"]
        prob = _sample(tpl, stable_rng(DOMAIN, "lm_paraphrase", tpl.id)) if kind in keywords and tpl.math else None
        if prob is None:
            continue
        texts = list(dict.fromkeys(render(tpl, prob, t, STYLE) for t in (tpl.surfaces[0], *tpl.paraphrases)))
        keep = tuple(m for m in dict.fromkeys(math_text(tpl, prob, n) for n in tpl.math) if all(m in t for t in texts))
        if len(texts) < 2 or not keep:
            continue
        base = compute(tpl, prob, tpl.task)
        foreign = sorted({k for a, ks in keywords.items() if a != kind for k in ks} - set(keywords[kind]))
        items.append(LMItem(
            group=f"{tpl.id}#lm", spread_key=kind, phrasings=tuple(texts), keep=keep, keywords=keywords[kind],
            foreign=tuple(foreign), others=(), leaks=(base.display,), subcategory=tpl.subcategory,
            answer=base.display, verification_method="sympy_equivalence", payload=answer_payload(base, base),
            asks_for=f"the same {tpl.topic} ({keep[0]}); sympy gives both {base.display}"))
    return items


def _shown_once(tpl, prob, text: str) -> list[str]:
    """The displayed numbers of the problem's parameters that occur exactly once in `text`."""
    tokens = _NUMBER.findall(text)
    shown = {num_text(abs(v)) for n, v in prob.get().items() if n in _targets(tpl) and isinstance(v, Fraction)}
    return sorted(t for t in shown if tokens.count(t) == 1)


def lm_edit_seeds() -> list[EditSeed]:
    """One or two problems per template with numbers (sampled with stable names), each naming one
    number of a parameter that occurs once in the text; the model picks the new value."""
    out = []
    for tpl in load_curated().templates:
        if not _targets(tpl):
            continue
        rng = stable_rng(DOMAIN, "lm_edit", tpl.id)
        for k in range(2 if len(_targets(tpl)) > 1 else 1):
            prob = _sample(tpl, rng)
            if prob is None:
                continue
            text = render(tpl, prob, tpl.surfaces[0], STYLE)
            numbers = _shown_once(tpl, prob, text)
            if numbers:
                out.append(EditSeed(f"{tpl.id}#lm{k}", text, tpl.subcategory,
                                    f"the number {rng.choice(numbers)} to another number", (tpl, prob)))
    return out


def lm_resolve_edit(seed: EditSeed, rewrite: str, span: Span) -> Candidate | str:
    """sympy's reading of a rewrite with one number changed (see the module docstring)."""
    tpl, prob = seed.data
    if not (_NUMBER.fullmatch(span.old) and _NUMBER.fullmatch(span.new)):
        return "not_a_number_change"
    new_abs, values, want = Fraction(span.new), prob.get(), normalize_text(rewrite)
    for name in _targets(tpl):
        old = values.get(name)
        if not isinstance(old, Fraction) or num_text(abs(old)) != span.old:
            continue
        new = new_abs if old >= 0 else -new_abs
        variant = prob.with_(**{name: new})
        if normalize_text(render(tpl, variant, tpl.surfaces[0], STYLE)) != want:
            continue
        try:
            if any(_formula_value(tpl, variant, f) == 0 for f in tpl.nonzero):
                return "constraint_broken"
            base, ans = compute(tpl, prob, tpl.task), compute(tpl, variant, tpl.task)
        except Invalid as exc:
            return f"no_answer:{str(exc).split(':')[0]}"
        if same_answer(base, ans):
            return "answer_unchanged"
        return _candidate(tpl, "ADVERSARIAL", seed.text, rewrite, base, ans,
                          f"A model changed {name} from {span.old} to {span.new}; sympy gives {base.display} vs "
                          f"{ans.display}.", seed.record, method="lm_generated",
                          params={"param": name, "from": num_text(old), "to": num_text(new)})
    return "not_a_parameter"
