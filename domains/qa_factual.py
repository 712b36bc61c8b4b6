"""qa_factual: short factual questions with stable answers, checked by exact match on alias sets.

The seed is the curated fact table sources/curated/qa_factual.yaml: entities (countries, chemical
elements, planets, books, rivers, events, World Cups, Olympic Games, units) with attributes, each
attribute a list of question phrasings and an answer with its aliases.

Labels:
- EQUIV: one phrasing and a surface variant of it (case, spacing, end punctuation).
- PARA_SAFE: two phrasings of the same fact.
- RELATED_UNSAFE: the same entity, another attribute (capital vs continent, symbol vs atomic
  number, author vs publication year, start vs end of a war), worded differently.
- ADVERSARIAL: the same phrasing with one token swapped by a typed operator (entity_swap
  Austria->Australia, year_swap 1966->1970, number_swap 6->7 or third->fourth, unit_swap
  Celsius->Fahrenheit); the swapped question is itself in the table, so both answers are known.
- UNRELATED: different entity and different kind of attribute.

Every candidate goes through a family guard (a normalised query text in at most 3 candidates, a
group linked by shared texts at most 6) so that splits can keep test queries out of train/dev.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from domains.lm import edits as lm_edits, generate as lm_generate
from domains.curated import read_curated, curated_error
from domains.base import (Candidate, CorpusFeed, DomainSpec, EditSeed, GenContext, LMHooks, LMItem, Operator, Provenance,
                          Span, normalize_text, stable_rng)
from domains.corpora.feeds import corpus_rows
from domains.families import capped_builder, method_generators, spread, surface_variant
from domains.text import time_sensitive
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "qa_factual"
VERSION = "1"
SOURCE_FILE = CURATED / "qa_factual.yaml"
SOURCE_REL = "sources/curated/qa_factual.yaml"
# Order in which labels take turns at the family guard: the scarcest texts first.
TURN_ORDER = ("ADVERSARIAL", "RELATED_UNSAFE", "PARA_SAFE", "UNRELATED", "EQUIV")
SWAP_OPERATORS = {"entity": "entity_swap", "year": "year_swap", "number": "number_swap", "unit": "unit_swap"}

GROUNDING = {
    "EQUIV": "A user retypes the same factual question with different capitalisation, spacing or "
             "punctuation; the stored answer is still the right one.",
    "PARA_SAFE": "Different users ask for the same stable fact in their own words, the main source "
                 "of legitimate hits for a factual assistant's cache.",
    "RELATED_UNSAFE": "A user asks a follow-up about the same entity (its capital, then its "
                      "continent); a topic-level cache match would return the previous fact.",
    "ADVERSARIAL": "Look-alike questions that differ in one entity, year, number or unit "
                   "(Austria/Australia, 1966/1970) are where embedding caches return confident "
                   "wrong answers.",
    "UNRELATED": "Two unrelated factual lookups from the same quiz or homework session; a cache "
                 "must keep them apart.",
}


@dataclass(frozen=True)
class Fact:
    """One (entity, attribute) of the table with its phrasings and accepted answers."""

    fid: str
    entity_id: str
    name: str
    attribute: str
    subcategory: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]          # canonical answer first, then aliases
    swap: str | None
    swap_with: tuple[str, ...]

    @property
    def forms(self) -> frozenset[str]:
        return frozenset(normalize_text(a) for a in self.answers)


@dataclass(frozen=True)
class Seed:
    """What an operator perturbs: one phrasing (by index) of one fact."""

    fact: Fact
    index: int

    @property
    def question(self) -> str:
        return self.fact.questions[self.index]


@dataclass(frozen=True)
class Variant:
    question: str
    fact: Fact
    params: Mapping[str, Any]


# ---------------------------------------------------------------- loading

def _bad(record: str, problem: str, fix: str) -> InputError:
    return curated_error(SOURCE_REL, record, problem, fix)


def _render(template: str, name: str) -> str:
    return template.replace("{e}", name).replace("{E}", name[:1].upper() + name[1:])


@lru_cache(maxsize=1)
def load_facts() -> tuple[Fact, ...]:
    """Parse and check the fact table; facts sorted by id."""
    data = read_curated(SOURCE_FILE, ("templates", "subcategories", "entities"))
    templates, subcats = data["templates"], data["subcategories"]
    entities = {}
    for i, ent in enumerate(data["entities"]):
        if not isinstance(ent, dict) or not {"id", "name", "facts"} <= set(ent):
            raise _bad(f"entities[{i}]", "needs id, name and facts", "Add the missing keys")
        if ent["id"] in entities:
            raise _bad(ent["id"], "duplicate entity id", "Give each entity a unique id")
        entities[ent["id"]] = ent
    partners: dict[str, set[str]] = {eid: set() for eid in entities}
    for eid, ent in entities.items():
        for other in ent.get("swap_with", []) or []:
            if other not in entities or not ent.get("swap") or entities[other].get("swap") != ent["swap"]:
                raise _bad(eid, f"swap_with '{other}' is unknown or of another swap kind",
                           "List only entities with the same swap kind")
            partners[eid].add(other)
            partners[other].add(eid)   # swaps are symmetric
    facts = []
    for eid in sorted(entities):
        ent = entities[eid]
        name = str(ent["name"])
        for attr in sorted(ent["facts"]):
            spec = ent["facts"][attr]
            if attr not in subcats:
                raise _bad(eid, f"attribute '{attr}' has no subcategory", "Add it under subcategories")
            if isinstance(spec, dict):
                answers, questions = spec.get("answers"), spec.get("questions")
            else:
                answers = spec
                if attr not in templates:
                    raise _bad(eid, f"attribute '{attr}' has no templates and no questions",
                               "Add templates or give the fact its own questions")
                questions = [_render(t, name) for t in templates[attr]]
            if not answers or not questions or len(questions) < 2:
                raise _bad(f"{eid}.{attr}", "needs at least one answer and two phrasings", "Complete the fact")
            facts.append(Fact(
                fid=f"{eid}.{attr}", entity_id=eid, name=name, attribute=attr, subcategory=subcats[attr],
                questions=tuple(str(q) for q in questions), answers=tuple(str(a) for a in answers),
                swap=ent.get("swap"), swap_with=tuple(sorted(partners[eid]))))
    return tuple(facts)


@lru_cache(maxsize=1)
def _fact_index() -> dict[str, Fact]:
    return {f.fid: f for f in load_facts()}


# ---------------------------------------------------------------- operators

def _swap_name(text: str, old: str, new: str) -> str | None:
    """Replace the one whole-word occurrence of `old` (or its capitalised form) with `new`."""
    for o, n in ((old, new), (old[:1].upper() + old[1:], new[:1].upper() + new[1:])):
        out, count = re.subn(rf"(?<!\w){re.escape(o)}(?!\w)", n, text)
        if count == 1:
            return out
    return None


def _make_swap(kind: str):
    def apply(seed: Seed, rng) -> Variant | None:
        fact = seed.fact
        if fact.swap != kind:
            return None
        index = _fact_index()
        options = []
        for other in fact.swap_with:
            target = index.get(f"{other}.{fact.attribute}")
            if target is None or target.forms & fact.forms or seed.index >= len(target.questions):
                continue   # no known answer for the swapped question, or the same answer
            new = _swap_name(seed.question, fact.name, target.name)
            # The swapped text must be the target's own phrasing, so its answer is the table's.
            if new is not None and new == target.questions[seed.index]:
                options.append(Variant(new, target, {"from": fact.name, "to": target.name,
                                                     "attribute": fact.attribute}))
        return rng.choice(options) if options else None
    return apply


OPERATORS = {
    "entity_swap": Operator("entity_swap", "Swap the entity for a look-alike one (Austria -> Australia) "
                            "whose same attribute has another answer.", _make_swap("entity")),
    "year_swap": Operator("year_swap", "Swap the year of an edition or event (1966 -> 1970).", _make_swap("year")),
    "number_swap": Operator("number_swap", "Swap a number or ordinal in the question (atomic number 6 -> 7, "
                            "third -> fourth planet).", _make_swap("number")),
    "unit_swap": Operator("unit_swap", "Swap the unit asked for (Celsius -> Fahrenheit, centimetres -> "
                          "millimetres).", _make_swap("unit")),
}


# ---------------------------------------------------------------- candidates

def policy(c: Candidate) -> str | None:
    """A question about the present ('current', 'today', 'latest': domains.text.TIME_SCOPES) must
    never be cached."""
    return "time_sensitive" if time_sensitive(c.query_a, c.query_b) else None


def _candidate(label: str, fa: Fact, qa: str, fb: Fact, qb: str, method: str, rationale: str,
               template_id: str, operator: str | None = None, params: Mapping[str, Any] | None = None) -> Candidate:
    c = Candidate(
        domain=DOMAIN, subcategory=fa.subcategory, label=label, query_a=qa, query_b=qb,
        expected_answer_a=fa.answers[0], expected_answer_b=fb.answers[0], rationale=rationale,
        verification_method="alias_exact_match",
        verification_payload={"aliases_a": list(fa.answers), "aliases_b": list(fb.answers)},
        construction_method=method, source="curated", real_world_grounding=GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template_id,
                              operator=operator, operator_params=params, source_file=SOURCE_REL,
                              source_record=fa.fid if fa.fid == fb.fid else f"{fa.fid}|{fb.fid}"))
    return c.under_policy(policy(c))   # never expected from the curated table, but a policy always wins


def _pools(rng_for) -> dict[str, list[Candidate]]:
    facts = load_facts()
    by_entity: dict[str, list[Fact]] = {}
    for f in facts:
        by_entity.setdefault(f.entity_id, []).append(f)
    pools: dict[str, list[Candidate]] = {lab: [] for lab in TURN_ORDER}
    for f in facts:
        rng = rng_for("fact", f.fid)
        for i, q in enumerate(f.questions):
            pools["EQUIV"].append(_candidate(
                "EQUIV", f, q, f, surface_variant(q, rng.randrange(6)), "curated",
                f"Same question up to case, spacing or punctuation; both expect '{f.answers[0]}'.", f"{f.fid}#{i}"))
            for j in range(i + 1, len(f.questions)):
                pools["PARA_SAFE"].append(_candidate(
                    "PARA_SAFE", f, q, f, f.questions[j], "curated",
                    f"Two phrasings of the same fact ({f.attribute} of {f.name}); both expect '{f.answers[0]}'.",
                    f"{f.fid}#{i}~{j}"))
            seed = Seed(f, i)
            op_name = SWAP_OPERATORS.get(f.swap or "")
            if op_name:
                v = OPERATORS[op_name].apply(seed, rng_for("op", f.fid, i))
                if v is not None:
                    pools["ADVERSARIAL"].append(_candidate(
                        "ADVERSARIAL", f, q, v.fact, v.question, "adversarial_perturbation",
                        f"{op_name} {v.params['from']} -> {v.params['to']} changes the answer "
                        f"'{f.answers[0]}' -> '{v.fact.answers[0]}'.",
                        f"{f.fid}#{i}", operator=op_name, params=v.params))
    for eid in sorted(by_entity):
        group = by_entity[eid]
        for x in range(len(group)):
            for y in range(x + 1, len(group)):
                fa, fb = group[x], group[y]
                if fa.forms & fb.forms:
                    continue
                for i in range(len(fa.questions)):
                    for j in range(len(fb.questions)):
                        if i == j:   # aligned phrasings are near-identical: kept out of RELATED
                            continue
                        pools["RELATED_UNSAFE"].append(_candidate(
                            "RELATED_UNSAFE", fa, fa.questions[i], fb, fb.questions[j], "curated",
                            f"Same entity ({fa.name}), another attribute: {fa.attribute} "
                            f"'{fa.answers[0]}' vs {fb.attribute} '{fb.answers[0]}'.", f"{fa.fid}#{i}|{fb.fid}#{j}"))
    for f in facts:
        rng = rng_for("unrelated", f.fid)
        others = [g for g in facts if g.entity_id != f.entity_id and g.subcategory != f.subcategory
                  and not (g.forms & f.forms) and g.fid > f.fid]
        for g in rng.sample(others, min(4, len(others))):
            i, j = rng.randrange(len(f.questions)), rng.randrange(len(g.questions))
            pools["UNRELATED"].append(_candidate(
                "UNRELATED", f, f.questions[i], g, g.questions[j], "curated",
                f"Different entity and attribute ({f.attribute} of {f.name} vs {g.attribute} of {g.name}).",
                f"{f.fid}#{i}|{g.fid}#{j}"))
    # ADVERSARIAL rows are spread over operators (year, number and unit swaps are as important as
    # look-alike names), the others over subcategories.
    keys = {lab: (lambda c: c.provenance.operator or "") if lab == "ADVERSARIAL" else (lambda c: c.subcategory)
            for lab in pools}
    return {lab: spread(pool, keys[lab], rng_for("spread", lab)) for lab, pool in pools.items()}


_build = capped_builder(DOMAIN, _pools, TURN_ORDER)


# ---------------------------------------------------------------- LM-generated rows (domains/lm)

def lm_items(keywords: Mapping[str, tuple[str, ...]]) -> list[LMItem]:
    """Facts a model may reword: those whose attribute has keywords in the prompt file. A rewording
    keeps the entity's name and adds no other entity of the table, no other attribute's keyword
    and no answer alias (the model answered instead); both sides expect the fact's aliases."""
    facts = load_facts()
    names = sorted({f.name for f in facts})
    items = []
    for f in facts:
        if f.attribute not in keywords:
            continue
        foreign = sorted({k for a, ks in keywords.items() if a != f.attribute for k in ks} - set(keywords[f.attribute]))
        items.append(LMItem(
            group=f.fid, spread_key=f.attribute, phrasings=f.questions, keep=(f.name,),
            keywords=keywords[f.attribute], foreign=tuple(foreign),
            others=tuple(n for n in names if n.casefold() != f.name.casefold()),
            leaks=tuple(a for a in f.answers if a.strip()), subcategory=f.subcategory, answer=f.answers[0],
            verification_method="alias_exact_match",
            payload={"aliases_a": list(f.answers), "aliases_b": list(f.answers)},
            asks_for=f"the {f.attribute} of {f.name}; both expect '{f.answers[0]}'"))
    return items


# The detail a model is asked to change in a fact's question, by attribute ("the country").
EDIT_WHAT = {"capital": "country", "continent": "country", "official_language": "country",
             "chemical_symbol": "element", "atomic_number": "element", "element_by_number": "number",
             "planet_by_order": "number", "planet_order": "planet", "largest_moon": "planet",
             "world_cup_winner": "year", "olympic_host": "year", "book_author": "book", "publication_year": "book",
             "river_mouth": "river", "river_capital": "river", "boiling_point": "unit", "freezing_point": "unit",
             "per_metre": "unit", "per_kilometre": "unit", "per_mile": "unit", "per_yard": "unit",
             "per_kilogram": "unit"}


def lm_edit_seeds() -> list[EditSeed]:
    """The first two phrasings of every fact whose attribute has a detail to change, each naming
    the entity and three others of the table with the same attribute and another answer (a
    rewrite to one of them has a known answer; the model may still pick any)."""
    facts = load_facts()
    out = []
    for f in facts:
        others = sorted({g.name for g in facts if g.attribute == f.attribute and not g.forms & f.forms})
        if f.attribute not in EDIT_WHAT or not others:
            continue
        for i in range(min(2, len(f.questions))):
            rng = stable_rng(DOMAIN, "lm_edit", f.fid, i)
            pick = rng.sample(others, min(3, len(others)))
            such = ", ".join(pick[:-1]) + (" or " if len(pick) > 1 else "") + pick[-1]
            out.append(EditSeed(f"{f.fid}#{i}", f.questions[i], f.attribute,
                                f"{f.name} to another {EDIT_WHAT[f.attribute]}, such as {such}", (f, i)))
    return out


def lm_resolve_edit(seed: EditSeed, rewrite: str, span: Span) -> Candidate | str:
    """The fact table's reading of a rewrite: the changed span must be the fact's entity, and the
    rewrite must be the seed with that entity replaced by another entity of the table that has the
    same attribute; both answers then come from the table and must differ."""
    f, i = seed.data
    question = f.questions[i]
    at = question.casefold().find(f.name.casefold())
    if at < 0 or span.start_old >= at + len(f.name) or span.start_old + len(span.old) <= at:
        return "changed_another_detail"
    want = normalize_text(rewrite)
    for g in load_facts():
        if g.attribute != f.attribute or g.fid == f.fid:
            continue
        swapped = _swap_name(question, f.name, g.name)
        if swapped is not None and normalize_text(swapped) == want:
            if g.forms & f.forms:
                return "answer_unchanged"
            return _candidate("ADVERSARIAL", f, question, g, rewrite, "lm_generated",
                              f"A model changed {f.name} to {g.name}; the fact table gives '{f.answers[0]}' vs "
                              f"'{g.answers[0]}'.", "lm_edit", params={"attribute": f.attribute})
    return "entity_not_in_table"


def lm_rows(ctx: GenContext) -> list[Candidate]:
    """PARA_SAFE pairs of model rewordings of the fact table's questions and ADVERSARIAL rewrites of
    them with one entity changed (none when ctx.llm is None)."""
    return lm_generate.generate(SPEC, ctx)[0] + lm_edits.generate(SPEC, ctx)[0]


SPEC = DomainSpec(
    name=DOMAIN,
    description="Short factual questions with stable answers (capitals, elements, books, events, units).",
    generators={**method_generators(DOMAIN, _build.for_ctx),
                "existing_benchmark": corpus_rows("existing_benchmark"), "lm_generated": lm_rows},
    verifier="alias_exact_match",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    lm=LMHooks(items=lm_items, source_file=SOURCE_REL, edit_seeds=lm_edit_seeds, resolve_edit=lm_resolve_edit),
    # AmbigNQ: readings of an ambiguous question with other answers (RELATED_UNSAFE), and one
    # reading in two annotator wordings (PARA_SAFE, domains/corpora/benchmarks.py).
    corpus_feeds={"existing_benchmark": (CorpusFeed(("ambigqa",), {"PARA_SAFE": 0.2, "RELATED_UNSAFE": 0.5}),)},
)
