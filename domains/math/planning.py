"""Building the math domain's candidates, every label, under one family guard.

Per template, problems are sampled until enough distinct ones exist; each problem yields a small
family (EQUIV, PARA_SAFE, up to two ADVERSARIAL, one RELATED_UNSAFE) sharing query texts. The
families pass `FamilyGuard` in generation order. UNRELATED pairs come last, from texts no other
candidate uses and each in one candidate only, so they never join a family.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from domains.base import Candidate, GenContext, Provenance, normalize_text
from domains.families import FamilyGuard
from domains.math.answers import Answer, Invalid, compute, same_answer
from domains.math.catalog import OPERATORS, Curated, Problem, Template, load_curated
from domains.math.operators import perturb
from domains.math.render import forms, render
from domains.math.sampling import sample_problem
from domains.verify.sympy_equiv import DEFAULT_TOLERANCE

DOMAIN = "math"
VERSION = "1"


def answer_payload(a: Answer, b: Answer) -> dict[str, Any]:
    """The sympy_equivalence payload comparing answers `a` and `b`."""
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
        verification_method="sympy_equivalence", verification_payload=answer_payload(a, b),
        construction_method=method, source="curated", real_world_grounding=grounding.format(topic=tpl.topic),
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION,
                              template_id=template_id or tpl.id, operator=operator, operator_params=params,
                              source_file="sources/curated/math.yaml", source_record=record),
    )


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


def _unrelated(cur: Curated, n: int, ctx: GenContext, in_use: Callable[[str], bool],
               drops: Counter) -> list[Candidate]:
    """Pairs of problems from templates of different subcategories, rendered only for that pair:
    neither text is `in_use` by another candidate, and each goes into one UNRELATED pair only."""
    rng = ctx.rng("unrelated")
    once = FamilyGuard(max_uses=1, max_group=1)
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
        if in_use(normalize_text(qa)) or in_use(normalize_text(qb)):
            drops["unrelated:text_in_use"] += 1
            continue
        a, b = compute(ta, pa, ta.task), compute(tb, pb, tb.task)
        c = _candidate(ta, "UNRELATED", qa, qb, a, b,
                       f"Different problems ({ta.topic} vs {tb.topic}): {a.display} vs {b.display}.",
                       f"unrelated#{attempt}", template_id=f"{ta.id}+{tb.id}")
        if not once.offer(c):  # a text already in an earlier UNRELATED pair
            drops["unrelated:text_in_use"] += 1
            continue
        out.append(c)
    return out


def admit(guard: FamilyGuard, cands: Iterable[Candidate], drops: Counter) -> list[Candidate]:
    """The candidates `guard` accepts, in order; a pair whose two texts normalise alike is refused
    first (FamilyGuard would count it as one text), and every refusal is counted by reason."""
    out: list[Candidate] = []
    for c in cands:
        if normalize_text(c.query_a) == normalize_text(c.query_b):
            drops[f"{c.label}:identical_queries"] += 1
        elif c.pair_signature() in guard.signatures:
            drops[f"{c.label}:duplicate_pair"] += 1
        elif not guard.offer(c):
            drops[f"{c.label}:family_limit"] += 1
        else:
            out.append(c)
    return out


def _per_template(need: Mapping[str, int], cur: Curated) -> int:
    """Distinct problems to sample per template: enough for each label's need with a 40% margin
    (RELATED_UNSAFE comes only from templates with related tasks), at least 4."""
    n_t = len(cur.templates)
    n_rel = sum(1 for t in cur.templates if t.related) or 1
    want = max(need.get("EQUIV", 0), need.get("PARA_SAFE", 0), need.get("ADVERSARIAL", 0) / 2,
               need.get("RELATED_UNSAFE", 0) * n_t / n_rel)
    return max(4, -(-int(want * 1.4) // n_t))


def _families(ctx: GenContext, cur: Curated, drops: Counter) -> list[Candidate]:
    """Every template's families, in template order, before the guard."""
    per = _per_template(ctx.need, cur)
    cands: list[Candidate] = []
    for tpl in cur.templates:
        rng = ctx.rng("template", tpl.id)
        seen_text: set[str] = set()  # distinct problems, judged by their first surface text
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
    return cands


@lru_cache(maxsize=4)
def _build(need: tuple[tuple[str, int], ...]) -> tuple[tuple[Candidate, ...], tuple[tuple[str, int], ...]]:
    ctx = GenContext(domain=DOMAIN, profile="", need=dict(need))
    cur = load_curated()
    drops: Counter = Counter()
    guard = FamilyGuard()
    cands = admit(guard, _families(ctx, cur, drops), drops)
    used = frozenset(normalize_text(q) for c in cands for q in (c.query_a, c.query_b))
    n_unrel = max(60, -(-int(ctx.need.get("UNRELATED", 0) * 3) // 2))
    cands += admit(guard, _unrelated(cur, n_unrel, ctx, used.__contains__, drops), drops)
    return tuple(cands), tuple(sorted(drops.items()))


def build(ctx: GenContext) -> tuple[list[Candidate], Counter]:
    """Every candidate of the domain for this context, and the generation drops by reason."""
    cands, drops = _build(tuple(sorted((k, int(v)) for k, v in ctx.need.items())))
    return list(cands), Counter(dict(drops))
