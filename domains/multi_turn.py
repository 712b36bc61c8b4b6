"""multi_turn: the same (or nearly the same) final message after earlier turns.

Scenarios come from sources/curated/multi_turn.yaml: a conversion of a quantity given earlier, a
question about the n-th item of a list the assistant gave, a follow-up about a country, a
translation follow-up, a bill split and a recipe scaling. Every answer is computed or looked up
from the facts of the earlier turns, so a pair's expected answers are exact and the
`context_rubric` verifier compares them together with the context facts.

Labels: EQUIV = same context, surface variant of the final message; PARA_SAFE = paraphrased final
message and/or earlier turns carrying the same facts; RELATED_UNSAFE = the same final message (the very same
text: recipes only pair with recipes of the same ingredient, each with its own grams per serving)
after a different conversation of the same kind, or another question in the same conversation;
ADVERSARIAL = one answer-determining token changed by an operator, either in the earlier turns
(30 °C -> 35 °C, Austria -> Australia) or in the final message (Fahrenheit -> Kelvin, second ->
third); UNRELATED = conversations of different kinds.

With a datasets dir, real_traffic_mined adds ADVERSARIAL pairs from real conversations: the same
follow-up ("continue", "make it shorter", "explain the second point", "yes") after two different
conversations (domains/corpora/mining/followups.py).

Candidates are built once (`families.capped_builder`) up to `caps_for(ctx.need, spare=8)`, labels
taking turns at one family guard in strict rounds (one try per turn): every pool runs over the
conversations in one order, so a label whose candidate is refused does not run ahead of the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from domains.corpora import mining
from domains.curated import read_curated
from domains.base import LABELS, Candidate, DomainSpec, Operator, Provenance
from domains.families import capped_builder, method_generators, round_robin, surface
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "multi_turn"
VERSION = "1"
SOURCE_FILE = CURATED / "multi_turn.yaml"
ORDINALS = ("first", "second", "third")


@dataclass(frozen=True)
class Instance:
    """One conversation state: its facts, alternative wordings of the earlier turns (same facts),
    and per question type the final-message templates and the answer for each target."""

    kind: str
    subcategory: str
    name: str
    facts: tuple[str, ...]
    contexts: tuple[tuple[Mapping[str, str], ...], ...]
    finals: Mapping[str, tuple[str, ...]]          # qtype -> templates with {t}
    answers: Mapping[str, Mapping[str, str]]       # qtype -> target -> answer


@dataclass(frozen=True)
class Perturbed:
    """An instance whose earlier turns differ from a seed by one operator-changed token."""

    seed: Instance
    variant: Instance
    operator: str
    params: Mapping[str, Any]


def _turns(user: str, assistant: str) -> tuple[Mapping[str, str], ...]:
    return ({"role": "user", "content": user}, {"role": "assistant", "content": assistant})


def _num(x: float, decimals: int) -> str:
    s = f"{round(x, decimals):.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


@lru_cache(maxsize=1)
def _seed() -> dict:
    return read_curated(SOURCE_FILE, ("acknowledgements", "conversions", "ordinal_lists", "entity_followups",
                                      "phrase_followups", "bill_splits", "recipe_scalings"))


def _answer_text(value: Any) -> str:
    """A curated answer: a string, or a list of standard forms (the first is the reference). The
    expected answer text names every accepted form, e.g. "Oceania (also: Australia)"."""
    forms = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return forms[0] if len(forms) == 1 else f"{forms[0]} (also: {', '.join(forms[1:])})"


def _first(value: Any) -> str:
    """The reference form of a curated answer, for use inside the earlier turns."""
    return str(value[0]) if isinstance(value, list) else str(value)


def _require(rec: Mapping, keys: Iterable[str], where: str) -> None:
    missing = [k for k in keys if k not in rec]
    if missing:
        raise InputError(f"{SOURCE_FILE}:{where}: missing key(s) {', '.join(missing)}. Add them to the record")


# ---- scenario kinds: each returns its instances and its one-token context perturbations ----

def _conversions(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "values", "contexts", "targets", "finals"], f"conversions.{rec.get('id')}")

    def make(v: float) -> Instance:
        answers = {t: f"{_num(v * float(spec['factor']) + float(spec['offset']), int(spec['decimals']))} {spec['unit']}"
                   for t, spec in sorted(rec["targets"].items())}
        ctxs = tuple(_turns(u.format(v=v), a.format(v=v)) for u, a in rec["contexts"])
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={v}", (f"{rec['id']} value = {v}",),
                        ctxs, {"convert": tuple(rec["finals"])}, {"convert": answers})

    values = list(rec["values"])
    insts = [make(v) for v in values]
    perts = [Perturbed(insts[i], insts[(i + 1) % len(insts)], "context_value_swap",
                       {"from": values[i], "to": values[(i + 1) % len(values)]}) for i in range(len(insts))]
    return insts, perts


def _ordinal_lists(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "asks", "attribute", "finals", "items", "lists"], f"ordinal_lists.{rec.get('id')}")
    items: Mapping[str, str] = rec["items"]

    def make(lst: list[str]) -> Instance:
        for it in lst:
            if it not in items:
                raise InputError(f"{SOURCE_FILE}:ordinal_lists.{rec['id']}: list item '{it}' has no entry in items. Add it")
        numbered = "\n".join(f"{i + 1}. {it}" for i, it in enumerate(lst))
        inline = f"Here are three: {lst[0]}, {lst[1]} and {lst[2]}."
        ctxs = (_turns(rec["asks"][0], numbered), _turns(rec["asks"][1], inline))
        answers = {ORDINALS[i]: items[it] for i, it in enumerate(lst)}
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={'|'.join(lst)}",
                        (f"list = {'; '.join(lst)}",), ctxs, {"ordinal": tuple(rec["finals"])}, {"ordinal": answers})

    insts, perts = [], []
    pool = sorted(items)
    for k, lst in enumerate(rec["lists"]):
        inst = make(list(lst))
        insts.append(inst)
        # Swap the item at one position for one outside the list whose attribute differs.
        pos = k % 3
        for other in pool[k:] + pool[:k]:
            if other not in lst and items[other] != items[lst[pos]]:
                new = list(lst)
                new[pos] = other
                perts.append(Perturbed(inst, make(new), "context_item_swap",
                                       {"position": ORDINALS[pos], "from": lst[pos], "to": other}))
                break
    return insts, perts


def _entity_followups(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "contexts", "questions", "entities", "confusable"], f"entity_followups.{rec.get('id')}")
    ents = rec["entities"]

    def make(e: str) -> Instance:
        ctxs = tuple(_turns(u.format(e=e), a.format(e=e)) for u, a in rec["contexts"])
        finals = {q: tuple(ts) for q, ts in sorted(rec["questions"].items())}
        answers = {q: {"": _answer_text(ents[e][q])} for q in finals}
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={e}", (f"country = {e}",), ctxs, finals, answers)

    insts = {e: make(e) for e in sorted(ents)}
    perts = []
    for a, b in rec["confusable"]:
        if a not in ents or b not in ents:
            raise InputError(f"{SOURCE_FILE}:entity_followups.{rec['id']}: confusable pair {a}/{b} not in entities. Add it")
        perts.append(Perturbed(insts[a], insts[b], "context_entity_swap", {"from": a, "to": b}))
        perts.append(Perturbed(insts[b], insts[a], "context_entity_swap", {"from": b, "to": a}))
    return [insts[e] for e in sorted(insts)], perts


def _phrase_followups(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "contexts", "finals", "languages", "phrases"], f"phrase_followups.{rec.get('id')}")
    phrases = rec["phrases"]

    def make(p: str) -> Instance:
        tr = {lang: _first(v) for lang, v in phrases[p].items()}
        ctxs = tuple(_turns(u.format(p=p, **tr), a.format(p=p, **tr)) for u, a in rec["contexts"])
        answers = {lang: _answer_text(phrases[p][lang]) for lang in rec["languages"]}
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={p}", (f"phrase = {p}",), ctxs,
                        {"translate": tuple(rec["finals"])}, {"translate": answers})

    names = list(phrases)
    insts = [make(p) for p in names]
    perts = [Perturbed(insts[i], insts[(i + 1) % len(insts)], "context_phrase_swap",
                       {"from": names[i], "to": names[(i + 1) % len(names)]}) for i in range(len(insts))]
    return insts, perts


def _bill_splits(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "values", "contexts", "finals"], "bill_splits")

    def make(n: int, t: int) -> Instance:
        ctxs = tuple(_turns(u.format(n=n, t=t), a.format(n=n, t=t)) for u, a in rec["contexts"])
        return Instance(rec["id"], rec["subcategory"], f"bill={n}/{t}", (f"people = {n}", f"total = ${t}"), ctxs,
                        {"share": tuple(rec["finals"])}, {"share": {"": f"${t / n:.2f} per person"}})

    insts, perts = [], []
    for n, t in rec["values"]:
        inst = make(int(n), int(t))
        insts.append(inst)
        perts.append(Perturbed(inst, make(int(n) + 1, int(t)), "context_value_swap", {"slot": "people", "from": n, "to": n + 1}))
    return insts, perts


def _recipe_scalings(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "recipes", "targets", "contexts", "finals"], "recipe_scalings")

    def make(i: str, g: int, s: int) -> Instance:
        ctxs = tuple(_turns(u.format(g=g, s=s, i=i), a.format(g=g, s=s, i=i)) for u, a in rec["contexts"])
        finals = tuple(f.replace("{i}", i) for f in rec["finals"])
        answers = {str(t): f"{_num(g * t / s, 1)} g of {i}" for t in rec["targets"] if t != s}
        return Instance(rec["id"], rec["subcategory"], f"recipe={i}/{g}/{s}", (f"{i} = {g} g", f"servings = {s}"),
                        ctxs, {"scale": finals}, {"scale": answers})

    insts, perts = [], []
    ratios: dict[float, str] = {}
    for k, (ing, g, s) in enumerate(rec["recipes"]):
        # Recipes with one grams-per-serving ratio scale to the same amounts, so a pair of them
        # would differ in the earlier turns only, never in the answer's number.
        ratio = round(float(g) / float(s), 6)
        if ratio in ratios:
            raise InputError(f"{SOURCE_FILE}:recipe_scalings.recipes[{k}]: {g} g for {s} servings has the same "
                             f"ratio as {ratios[ratio]}. Give every recipe its own grams per serving")
        ratios[ratio] = f"{ing} {g} g/{s}"
        inst = make(str(ing), int(g), int(s))
        insts.append(inst)
        perts.append(Perturbed(inst, make(ing, int(g) + 50, int(s)), "context_value_swap", {"slot": "grams", "from": g, "to": g + 50}))
    return insts, perts


KIND_BUILDERS: Mapping[str, Callable[[Mapping], tuple[list[Instance], list[Perturbed]]]] = {
    "conversions": _conversions, "ordinal_lists": _ordinal_lists, "entity_followups": _entity_followups,
    "phrase_followups": _phrase_followups,
}


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
                out["PARA_SAFE"].append(_cand("PARA_SAFE", _side(inst, ci, qtype, fi + 1, target), _side(inst, ci, qtype, fi + 2, target),
                                              "curated", "same_context_paraphrase", "Same earlier turns; the final message is reworded with the same target."))
                out["PARA_SAFE"].append(_cand("PARA_SAFE", _side(inst, ci, qtype, fi + 3, target), _side(inst, ci + 1, qtype, fi + 4, target),
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
    generators={**method_generators(DOMAIN, _build.for_ctx), "real_traffic_mined": mining.multi_turn_traffic_rows},
    verifier="context_rubric",
    operators=OPERATORS,
    policy=lambda c: None,
    version=VERSION,
)
