"""multi_turn: the same (or nearly the same) final message after earlier turns.

Scenarios (built in scenarios.py) come from sources/curated/multi_turn.yaml: a conversion of a
quantity given earlier, a question about the n-th item of a list the assistant gave, a follow-up
about a country, a translation follow-up, a bill split and a recipe scaling. Every answer is computed or looked up
from the facts of the earlier turns, so a pair's expected answers are exact and the
`context_rubric` verifier compares them together with the context facts.

Labels: EQUIV = same context, surface variant of the final message; PARA_SAFE = paraphrased final
message and/or earlier turns carrying the same facts (a final is paired with the template that
shares the fewest words with it: the paraphrases embedders find hard); RELATED_UNSAFE = the same
final message (the very same text: recipes only pair with recipes of the same ingredient, each with
its own grams per serving) after a different conversation of the same kind, or another question in
the same conversation; ADVERSARIAL = one answer-determining token changed by an operator, either
in the earlier turns (30 °C -> 35 °C, Austria -> Australia) or in the final message (Fahrenheit ->
Kelvin, second -> third); UNRELATED = conversations of different kinds.

With a datasets dir, real_traffic_mined adds ADVERSARIAL pairs from real conversations: the same
follow-up ("continue", "make it shorter", "explain the second point", "yes") after two different
conversations; and RELATED_UNSAFE pairs: the same follow-up at two points of one conversation
(domains/corpora/mining/followups.py).

lm_generated (lm_hooks.py, domains/lm/followups.py): a model rewords a curated follow-up for a
conversation; the same model-written follow-up after the one-fact perturbation is ADVERSARIAL,
after another conversation of the same kind RELATED_UNSAFE; two of one target after the same turns
PARA_SAFE. The conversations decide the labels and answers, never the model.

Candidates are built once (`families.capped_builder`) up to `caps_for(ctx.need, spare=8)`, labels
taking turns at one family guard in strict rounds (one try per turn): every pool runs over the
conversations in one order, so a label whose candidate is refused does not run ahead of the others.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping

from domains.corpora import mining
from domains.curated import read_curated
from domains.base import LABELS, Candidate, DomainSpec, LMHooks, MinedRule, Operator, Provenance
from domains.lm import followups as lm_followups
from domains.families import capped_builder, far_rotation, method_generators, round_robin, surface
from domains.multi_turn import lm_hooks
from domains.multi_turn.scenarios import (KIND_BUILDERS, SOURCE_FILE, Instance, Perturbed, _bill_splits,
                                          _recipe_scalings)

DOMAIN = "multi_turn"
VERSION = "1"


@lru_cache(maxsize=1)
def _seed() -> dict:
    return read_curated(SOURCE_FILE, ("acknowledgements", "conversions", "ordinal_lists", "entity_followups",
                                      "phrase_followups", "bill_splits", "recipe_scalings"))


@lru_cache(maxsize=1)
def scenarios() -> tuple[tuple[Instance, ...], tuple[Perturbed, ...]]:
    """Every instance and every context perturbation from the curated file, in file order."""
    data = _seed()
    records = [(build, rec) for section, build in KIND_BUILDERS.items() for rec in data[section]]
    records += [(_bill_splits, data["bill_splits"]), (_recipe_scalings, data["recipe_scalings"])]
    insts: list[Instance] = []
    perts: list[Perturbed] = []
    for build, rec in records:
        i, p = build(rec)
        insts += i
        perts += p
    return tuple(insts), tuple(perts)


# ---- operators ----

def _context_swap(seed: Instance, rng: Any = None) -> Perturbed | None:
    """Earlier turns with one answer-determining token changed (a value, an item, a country)."""
    return next((p for p in scenarios()[1] if p.seed == seed), None)


def _target_swap(seed: tuple[Instance, str, str], rng: Any = None) -> tuple[str, str] | None:
    """The final message with its target changed (Fahrenheit -> Kelvin, second -> third)."""
    inst, qtype, target = seed
    targets = sorted(inst.answers[qtype])
    if len(targets) < 2 or target not in targets:
        return None
    other = targets[(targets.index(target) + 1) % len(targets)]
    return (other, inst.answers[qtype][other]) if inst.answers[qtype][other] != inst.answers[qtype][target] else None


OPERATORS = {
    "context_swap": Operator("context_swap", "change one answer-determining fact in the earlier turns", _context_swap),
    "target_swap": Operator("target_swap", "change the target unit, position or language in the final message", _target_swap),
}


# ---- pair building ----

GROUNDING = {
    "EQUIV": "A user re-sends the same follow-up in the same conversation with different casing or punctuation.",
    "PARA_SAFE": "Two users phrase the same follow-up differently after conversations that establish the same facts.",
    "RELATED_UNSAFE": "A chat assistant sees a familiar follow-up after a different conversation, or a different follow-up in the same conversation.",
    "ADVERSARIAL": "A follow-up that looks identical to a cached one but depends on one fact (a number, an item, a country) that differs.",
    "UNRELATED": "Two unrelated conversations that happen to reach a cache in the same session window.",
}


def _fill(template: str, target: str) -> str:
    return template.replace("{t}", target)


def _cand(label: str, a: tuple[Instance, int, str, str, str], b: tuple[Instance, int, str, str, str],
          method: str, template: str, rationale: str, op: str | None = None, params: Mapping | None = None) -> Candidate:
    (ia, ca, qa, ansa, _), (ib, cb, qb, ansb, _) = a, b
    sub = ia.subcategory if ia.subcategory == ib.subcategory else f"{ia.subcategory}+{ib.subcategory}"
    return Candidate(
        domain=DOMAIN, subcategory=sub, label=label, query_a=qa, query_b=qb,
        expected_answer_a=ansa, expected_answer_b=ansb, rationale=rationale,
        verification_method="context_rubric",
        verification_payload={"context_facts_a": list(ia.facts), "context_facts_b": list(ib.facts)},
        construction_method=method, source="curated", real_world_grounding=GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template,
                              operator=op, operator_params=dict(params) if params is not None else None,
                              source_file="sources/curated/multi_turn.yaml", source_record=ia.name),
        context_a=ia.contexts[ca], context_b=ib.contexts[cb],
    )


def _final(inst: Instance, qtype: str, fi: int) -> str:
    """The fi-th final-message template: templates rotate first, then the acknowledgement that
    opens the message ("Thanks! ..."), which never changes the answer."""
    finals = inst.finals[qtype]
    acks = _seed()["acknowledgements"]
    return acks[(fi // len(finals)) % len(acks)] + finals[fi % len(finals)]


def _side(inst: Instance, ci: int, qtype: str, fi: int, target: str, text: str | None = None) -> tuple:
    q = text if text is not None else _fill(_final(inst, qtype, fi), target)
    return (inst, ci % len(inst.contexts), q, inst.answers[qtype][target], qtype)


def _pools(rng_for: Callable[..., Any]) -> dict[str, list[Candidate]]:
    """Per-label candidates, conversation by conversation (templates rotate; `rng_for` is unused)."""
    insts, perts = scenarios()
    out: dict[str, list[Candidate]] = {lab: [] for lab in LABELS}
    by_kind: dict[str, list[Instance]] = {}
    for inst in insts:
        by_kind.setdefault(inst.kind, []).append(inst)
    # Round-robin over kinds, so that the per-label caps spread over every subcategory.
    order = round_robin(list(by_kind.values()))
    for k, inst in enumerate(order):
        qtypes = sorted(inst.finals)
        for qn, qtype in enumerate(qtypes):
            targets = sorted(inst.answers[qtype])
            for tn, target in enumerate(targets):
                r = k + qn + tn  # rotates template and context choice across instances
                ci, fi = r, r
                base = _side(inst, ci, qtype, fi, target)
                out["EQUIV"].append(_cand("EQUIV", base, _side(inst, ci, qtype, fi, target, surface(base[2], r)), "curated",
                                          "same_context_surface", "Same earlier turns; the final message differs only in case or punctuation."))
                out["PARA_SAFE"].append(_cand("PARA_SAFE", _side(inst, ci, qtype, fi + 1, target),
                                              _side(inst, ci, qtype, far_rotation(inst.finals[qtype], fi + 1), target),
                                              "curated", "same_context_paraphrase", "Same earlier turns; the final message is reworded "
                                              "with the same target (the rewording that shares the fewest words with it)."))
                out["PARA_SAFE"].append(_cand("PARA_SAFE", _side(inst, ci, qtype, fi + 3, target),
                                              _side(inst, ci + 1, qtype, far_rotation(inst.finals[qtype], fi + 3), target),
                                              "curated", "paraphrased_context", "The earlier turns are worded differently but state the same facts; the final message is reworded."))
                swapped = OPERATORS["target_swap"].apply((inst, qtype, target))
                if swapped is not None:
                    other, _ = swapped
                    t = _final(inst, qtype, fi)
                    out["ADVERSARIAL"].append(_cand("ADVERSARIAL", _side(inst, ci, qtype, fi, target), _side(inst, ci, qtype, fi, other),
                                                    "adversarial_perturbation", "final_target_swap",
                                                    f"Same conversation; the final message asks for {other} instead of {target}.",
                                                    "target_swap", {"template": t, "from": target, "to": other}))
                p = OPERATORS["context_swap"].apply(inst)
                if p is not None and target in p.variant.answers.get(qtype, {}) and p.variant.answers[qtype][target] != inst.answers[qtype][target]:
                    out["ADVERSARIAL"].append(_cand("ADVERSARIAL", _side(inst, ci, qtype, fi + 1, target), _side(p.variant, ci, qtype, fi + 1, target),
                                                    "adversarial_perturbation", "context_fact_swap",
                                                    "The same final message after earlier turns that differ in one answer-determining fact.",
                                                    p.operator, p.params))
                # Same final message after a different conversation of the same kind: only peers whose
                # final messages are the very same text (a recipe names its ingredient, so only
                # recipes of that ingredient), so that the context alone changes the answer.
                peers = [j for j in by_kind[inst.kind] if j != inst and (p is None or j != p.variant)
                         and j.finals[qtype] == inst.finals[qtype]]
                for step in (1, 2):
                    if not peers:
                        break
                    j = peers[(k + step * 3) % len(peers)]
                    if target in j.answers.get(qtype, {}) and j.answers[qtype][target] != inst.answers[qtype][target]:
                        out["RELATED_UNSAFE"].append(_cand("RELATED_UNSAFE", _side(inst, ci, qtype, fi + 2 + step, target),
                                                           _side(j, ci + 1, qtype, fi + 2 + step, target), "curated",
                                                           "same_final_other_conversation",
                                                           "The same final message follows a different conversation, so the answer "
                                                           f"changes: '{inst.answers[qtype][target]}' vs '{j.answers[qtype][target]}'."))
            # Another question in the same conversation (only kinds with several question types).
            if qn + 1 < len(qtypes):
                q2 = qtypes[qn + 1]
                t1, t2 = sorted(inst.answers[qtype])[0], sorted(inst.answers[q2])[0]
                out["RELATED_UNSAFE"].append(_cand("RELATED_UNSAFE", _side(inst, k, qtype, k + 1, t1), _side(inst, k, q2, k, t2),
                                                   "curated", "same_context_other_question",
                                                   "Same conversation, but the final message asks about another attribute."))
        # Unrelated: a conversation of another kind.
        kinds = sorted(by_kind)
        other_kind = kinds[(kinds.index(inst.kind) + 1 + k) % len(kinds)]
        if other_kind != inst.kind:
            j = by_kind[other_kind][k % len(by_kind[other_kind])]
            qa, qb = sorted(inst.finals)[0], sorted(j.finals)[0]
            ta, tb = sorted(inst.answers[qa])[-1], sorted(j.answers[qb])[-1]
            out["UNRELATED"].append(_cand("UNRELATED", _side(inst, k + 2, qa, k + 3, ta), _side(j, k, qb, k + 1, tb), "curated",
                                          "other_kind", "Different conversations about different things."))
    return out


_build = capped_builder(DOMAIN, _pools, LABELS, spare=8, tries=1)


SPEC = DomainSpec(
    name=DOMAIN,
    description="The same or a similar final message after earlier turns; answers depend on the conversation.",
    generators={**method_generators(DOMAIN, _build.for_ctx), "real_traffic_mined": mining.real_traffic_rows,
                "lm_generated": lambda ctx: lm_followups.generate(SPEC, ctx)},
    verifier="context_rubric",
    operators=OPERATORS,
    policy=lambda c: None,
    version=VERSION,
    lm=LMHooks(source_file="sources/curated/multi_turn.yaml", follow_ups=lm_hooks.follow_ups,
               pair_follow_ups=lm_hooks.pair_follow_ups),
    mined_rules=(MinedRule("follow_up"),),   # the same mined follow-up after two conversations, or twice in one
)
