"""qa_open: explanatory and how-to questions, each judged by a rubric of 3 atomic criteria.

The seed is sources/curated/qa_open.yaml: subjects (solar power, inflation, chess, sunburn, ...) in
families of two opposite aspects (advantages/disadvantages, causes/effects, beginners/experts,
prevention/treatment). Each (subject, aspect) has phrasings rendered from its family's templates
and 3 points a good answer makes; the points are the rubric criteria and, joined, the reference
answer.

Labels:
- EQUIV: one phrasing and a surface variant of it; the same rubric.
- PARA_SAFE: two phrasings of the same (subject, aspect); the same rubric.
- RELATED_UNSAFE: the same subject, the opposite aspect, worded differently (pros vs cons).
- ADVERSARIAL: an aligned phrasing with its aspect token swapped by a typed operator
  (polarity_swap advantages->disadvantages, cause_effect_swap, audience_swap beginners->experts,
  prevent_treat_swap); the words barely change, the answer's subject does.
- UNRELATED: subjects of different families.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from domains.lm import generate as lm_generate
from domains.curated import read_curated, curated_error
from domains.base import (Candidate, CorpusFeed, DomainSpec, GenContext, LMHooks, LMItem, MinedRule, Operator,
                          Provenance, normalize_text)
from domains.corpora import mining
from domains.corpora.feeds import corpus_rows
from domains.families import capped_builder, method_generators, spread, surface_variant
from domains.text import time_sensitive
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "qa_open"
VERSION = "1"
SOURCE_FILE = CURATED / "qa_open.yaml"
SOURCE_REL = "sources/curated/qa_open.yaml"
TURN_ORDER = ("ADVERSARIAL", "RELATED_UNSAFE", "PARA_SAFE", "UNRELATED", "EQUIV")
SUBCATEGORY = {"pros_cons": "pros_cons", "causes_effects": "causes_effects",
               "audience": "beginner_vs_expert", "prevent_treat": "prevention_vs_treatment"}

GROUNDING = {
    "EQUIV": "A user resends the same explanatory question with different capitalisation, spacing or "
             "punctuation; the stored explanation still answers it.",
    "PARA_SAFE": "Users word the same how-to or why question differently; the explanation they need "
                 "is the same, so a cache hit saves a long generation.",
    "RELATED_UNSAFE": "A user who asked about one side of a topic (its advantages, its causes) follows "
                      "up with the other side; the cached explanation would answer the wrong question.",
    "ADVERSARIAL": "Questions that differ in one word (advantages/disadvantages, causes/effects, "
                   "beginners/experts) embed almost identically but need opposite explanations.",
    "UNRELATED": "Two explanatory questions on unrelated topics from the same help session; a cache "
                 "must keep them apart.",
}


@dataclass(frozen=True)
class Question:
    """One (subject, aspect): its phrasings (aligned ones first), rubric points and answer heading."""

    qid: str
    subject: str
    family: str
    aspect: str
    other_aspect: str
    phrasings: tuple[str, ...]
    n_aligned: int
    points: tuple[str, str, str]
    heading: str
    operator: str
    swap: tuple[tuple[str, str], ...]   # per aligned index: (this aspect's token, the other's)

    @property
    def criteria(self) -> list[str]:
        return [f"Mentions {p}" for p in self.points]

    @property
    def answer(self) -> str:
        return f"{self.heading}: {'; '.join(self.points)}."


@dataclass(frozen=True)
class Seed:
    question: Question
    index: int

    @property
    def text(self) -> str:
        return self.question.phrasings[self.index]


@dataclass(frozen=True)
class Variant:
    text: str
    question: Question
    params: Mapping[str, Any]


def _bad(record: str, problem: str, fix: str) -> InputError:
    return curated_error(SOURCE_REL, record, problem, fix)


@lru_cache(maxsize=1)
def load_questions() -> tuple[Question, ...]:
    """Parse and check the curated file; questions sorted by id."""
    data = read_curated(SOURCE_FILE, ("families", "subjects"))
    families = data["families"]
    for name, fam in sorted(families.items()):
        aspects = fam.get("aspects", [])
        if len(aspects) != 2 or not all(k in fam for k in ("aligned", "free", "heading", "operator", "swap")):
            raise _bad(f"families.{name}", "needs 2 aspects, aligned, free, heading, operator and swap",
                       "Complete the family")
        n = len(fam["swap"])
        if any(len(fam["aligned"].get(a, [])) != n for a in aspects):
            raise _bad(f"families.{name}", f"each aspect needs exactly {n} aligned phrasings (one per swap)",
                       "Align the phrasing lists with swap")
    out, seen = [], set()
    for i, sub in enumerate(data["subjects"]):
        sid = sub.get("id", f"subjects[{i}]")
        if sid in seen or sub.get("family") not in families or "s" not in sub:
            raise _bad(sid, "duplicate id, unknown family or missing s", "Fix the subject entry")
        seen.add(sid)
        fam = families[sub["family"]]
        for k, aspect in enumerate(fam["aspects"]):
            other = fam["aspects"][1 - k]
            points = sub.get("points", {}).get(aspect, [])
            if len(points) != 3 or len({normalize_text(str(p)) for p in points}) != 3:
                raise _bad(f"{sid}.{aspect}", f"has {len(points)} distinct points", "Give exactly 3 distinct points")
            templates = list(fam["aligned"][aspect]) + list(fam["free"][aspect])
            phrasings = tuple(t.replace("{s}", str(sub["s"])) for t in templates)
            heading = fam["heading"][aspect].replace("{s}", str(sub["s"]))
            swap = tuple((pair[k], pair[1 - k]) for pair in fam["swap"])
            out.append(Question(
                qid=f"{sid}.{aspect}", subject=sid, family=sub["family"], aspect=aspect, other_aspect=other,
                phrasings=phrasings, n_aligned=len(fam["aligned"][aspect]), points=tuple(str(p) for p in points),
                heading=heading[:1].upper() + heading[1:], operator=fam["operator"], swap=swap))
    return tuple(sorted(out, key=lambda q: q.qid))


@lru_cache(maxsize=1)
def _index() -> dict[str, Question]:
    return {q.qid: q for q in load_questions()}


def _make_swap(name: str):
    def apply(seed: Seed, rng) -> Variant | None:
        q = seed.question
        if q.operator != name or seed.index >= q.n_aligned:
            return None   # only aligned phrasings have a near-identical counterpart
        target = _index()[f"{q.subject}.{q.other_aspect}"]
        old, new = q.swap[seed.index]
        text, count = re.subn(rf"(?<!\w){re.escape(old)}(?!\w)", new, seed.text)
        # The swapped text must be the other aspect's own phrasing, so its rubric is known.
        if count != 1 or text != target.phrasings[seed.index] or set(target.points) == set(q.points):
            return None
        return Variant(text, target, {"from": old, "to": new, "subject": q.subject})
    return apply


OPERATORS = {
    "polarity_swap": Operator("polarity_swap", "Swap advantages/disadvantages, benefits/drawbacks, pros/cons, "
                              "upsides/downsides.", _make_swap("polarity_swap")),
    "cause_effect_swap": Operator("cause_effect_swap", "Swap causes/effects.", _make_swap("cause_effect_swap")),
    "audience_swap": Operator("audience_swap", "Swap the audience: beginners/experts.", _make_swap("audience_swap")),
    "prevent_treat_swap": Operator("prevent_treat_swap", "Swap prevent/treat.", _make_swap("prevent_treat_swap")),
}


# ---------------------------------------------------------------- candidates

def policy(c: Candidate) -> str | None:
    """A question about the present ('current', 'today', 'latest': domains.text.TIME_SCOPES) must
    never be cached."""
    return "time_sensitive" if time_sensitive(c.query_a, c.query_b) else None


def _candidate(label: str, qa: Question, ta: str, qb: Question, tb: str, method: str, rationale: str,
               template_id: str, operator: str | None = None, params: Mapping[str, Any] | None = None) -> Candidate:
    c = Candidate(
        domain=DOMAIN, subcategory=SUBCATEGORY[qa.family], label=label, query_a=ta, query_b=tb,
        expected_answer_a=qa.answer, expected_answer_b=qb.answer, rationale=rationale,
        verification_method="rubric", verification_payload={"criteria_a": qa.criteria, "criteria_b": qb.criteria},
        construction_method=method, source="curated", real_world_grounding=GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template_id,
                              operator=operator, operator_params=params, source_file=SOURCE_REL,
                              source_record=qa.qid if qa.qid == qb.qid else f"{qa.qid}|{qb.qid}"))
    return c.under_policy(policy(c))   # never expected from the curated file, but a policy always wins


def _pools(rng_for) -> dict[str, list[Candidate]]:
    questions = load_questions()
    index = _index()
    pools: dict[str, list[Candidate]] = {lab: [] for lab in TURN_ORDER}
    for q in questions:
        rng = rng_for("question", q.qid)
        for i, t in enumerate(q.phrasings):
            pools["EQUIV"].append(_candidate(
                "EQUIV", q, t, q, surface_variant(t, rng.randrange(6)), "curated",
                f"Same question up to case, spacing or punctuation; the same rubric ({q.aspect} of {q.subject}).",
                f"{q.qid}#{i}"))
            for j in range(i + 1, len(q.phrasings)):
                pools["PARA_SAFE"].append(_candidate(
                    "PARA_SAFE", q, t, q, q.phrasings[j], "curated",
                    f"Two phrasings of the same request ({q.aspect} of {q.subject}); the same rubric.", f"{q.qid}#{i}~{j}"))
            v = OPERATORS[q.operator].apply(Seed(q, i), rng_for("op", q.qid, i))
            # Each aligned pair once: from the family's first aspect only (the reverse is the same pair).
            if v is not None and q.aspect < q.other_aspect:
                pools["ADVERSARIAL"].append(_candidate(
                    "ADVERSARIAL", q, t, v.question, v.text, "adversarial_perturbation",
                    f"{q.operator} '{v.params['from']}' -> '{v.params['to']}' turns a question about the "
                    f"{q.aspect} of {q.subject} into one about its {q.other_aspect}.",
                    f"{q.qid}#{i}", operator=q.operator, params=v.params))
        if q.aspect < q.other_aspect:
            other = index[f"{q.subject}.{q.other_aspect}"]
            for i, t in enumerate(q.phrasings):
                for j, u in enumerate(other.phrasings):
                    if i == j and i < q.n_aligned:   # aligned pairs are near-identical: ADVERSARIAL only
                        continue
                    pools["RELATED_UNSAFE"].append(_candidate(
                        "RELATED_UNSAFE", q, t, other, u, "curated",
                        f"Same subject ({q.subject}), opposite aspect: {q.aspect} vs {other.aspect}.",
                        f"{q.qid}#{i}|{other.qid}#{j}"))
    for q in questions:
        rng = rng_for("unrelated", q.qid)
        others = [o for o in questions if o.family != q.family and o.qid > q.qid]
        for o in rng.sample(others, min(4, len(others))):
            i, j = rng.randrange(len(q.phrasings)), rng.randrange(len(o.phrasings))
            pools["UNRELATED"].append(_candidate(
                "UNRELATED", q, q.phrasings[i], o, o.phrasings[j], "curated",
                f"Different questions: {q.aspect} of {q.subject} vs {o.aspect} of {o.subject}.",
                f"{q.qid}#{i}|{o.qid}#{j}"))
    keys = {lab: (lambda c: c.provenance.operator or "") if lab == "ADVERSARIAL" else
            (lambda c: c.provenance.source_record.split("|")[0].split(".")[0]) for lab in pools}
    return {lab: spread(pool, keys[lab], rng_for("spread", lab)) for lab, pool in pools.items()}


_build = capped_builder(DOMAIN, _pools, TURN_ORDER)


# ---------------------------------------------------------------- LM-generated rows (domains/lm)

@lru_cache(maxsize=1)
def _subject_texts() -> dict[str, str]:
    """Subject id -> its text ({s}) from the curated file (a Question keeps only the id)."""
    return {str(sub["id"]): str(sub["s"]) for sub in read_curated(SOURCE_FILE, ("families", "subjects"))["subjects"]}


def lm_items(keywords: Mapping[str, tuple[str, ...]]) -> list[LMItem]:
    """Questions a model may reword: those whose aspect has keywords in the prompt file. A
    rewording keeps the subject's text and adds no other subject and no keyword of the opposite
    aspect; both sides are judged by the question's rubric."""
    questions, subject_text = load_questions(), _subject_texts()
    texts = sorted(set(subject_text.values()))
    items = []
    for q in questions:
        if q.aspect not in keywords:
            continue
        s = subject_text[q.subject]
        items.append(LMItem(
            group=q.qid, spread_key=q.family, phrasings=q.phrasings, keep=(s,), keywords=keywords[q.aspect],
            foreign=tuple(k for k in keywords.get(q.other_aspect, ()) if k not in keywords[q.aspect]),
            others=tuple(t for t in texts if t.casefold() != s.casefold()), leaks=(),
            subcategory=SUBCATEGORY[q.family], answer=q.answer, verification_method="rubric",
            payload={"criteria_a": q.criteria, "criteria_b": q.criteria},
            asks_for=f"the {q.aspect} of {q.subject}; the same 3-point rubric"))
    return items


def lm_rows(ctx: GenContext) -> list[Candidate]:
    """PARA_SAFE pairs of model rewordings of the curated questions (none when ctx.llm is None)."""
    return lm_generate.generate(SPEC, ctx)[0]


SPEC = DomainSpec(
    name=DOMAIN,
    description="Explanatory and how-to questions judged by a 3-criterion rubric.",
    generators={**method_generators(DOMAIN, _build.for_ctx),
                "existing_benchmark": corpus_rows("existing_benchmark"), "lm_generated": lm_rows,
                "real_traffic_mined": mining.real_traffic_rows},
    verifier="rubric",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    lm=LMHooks(items=lm_items, source_file=SOURCE_REL),
    # QQP: Quora questions are mostly advice and opinion questions with no single factual answer.
    # It also takes the share the declarative PAWS/MRPC sentences had in conversational.
    corpus_feeds={"existing_benchmark": (CorpusFeed(("qqp",), {"EQUIV": 0.2, "PARA_SAFE": 0.6, "RELATED_UNSAFE": 0.45,
                                                              "ADVERSARIAL": 0.5}),)},
    mined_rules=(MinedRule("explanatory"),),   # pairs of mined explanatory and how-to questions
)
