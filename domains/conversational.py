"""conversational: advice, opinions, small talk and recommendations.

Seeds come from sources/curated/conversational.yaml: a request template with one
answer-determining slot, equivalent wordings, three rubric criteria, operator swaps of the slot and
a related question. Labels: EQUIV = surface variant of one wording; PARA_SAFE = two wordings of the
same request (a seed's optional `hard_wordings`, paraphrases that share few words with the others,
take the B side of its first and second PARA_SAFE pair: the paraphrases embedders find hard);
RELATED_UNSAFE = another question on the same topic; ADVERSARIAL = the slot changed by an operator
(audience swap, polarity swap pros -> cons, constraint change vegetarian -> vegan,
topic or location swap); UNRELATED = requests from different seeds and subcategories that share no
curated theme (work, children, money...). Verifier: `rubric`. Time-sensitive requests (weather,
news, scores, prices) are `policy_no_cache` with policy "time_sensitive" whatever their label, with
the rubric as the underlying check; the loader checks that all wordings of such a seed ask about one
time scope ("right now" and "today" are different questions) and that its answer names no other;
the scopes are the one time-word table of domains/text.py. Corpus rows (MASSIVE, BANKING77) mark a
live-information intent with `+time_sensitive` and a state-changing command (set an alarm, send an
email) with `+mutation` in their subcategory, and the policy holds those reasons too.

Candidates are built once (`families.capped_builder`, labels taking turns at one family guard in
label order) up to `caps_for(ctx.need, margin=0, spare=10)`: max(need, 40) + 10 per label.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Mapping

from domains.corpora import mining
from domains.curated import read_curated
from domains.base import (LABELS, Candidate, CorpusFeed, DomainSpec, GenContext, LMHooks, LMItem, MinedRule, Operator,
                          Provenance)
from domains.lm import generate as lm_generate
from domains.lm.rules import shared_words
from domains.corpora import intents as corpus_intents
from domains.corpora.feeds import corpus_rows
from domains.families import capped_builder, method_generators, round_robin, surface
from domains.text import time_scopes
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "conversational"
VERSION = "1"
SOURCE_FILE = CURATED / "conversational.yaml"
SEED_KEYS = {"id", "subcategory", "themes", "slot", "value", "swaps", "wordings", "criteria", "answer", "related"}
OPTIONAL_KEYS = {"hard_wordings"}
TIME_SENSITIVE = "time_sensitive"
SWAP_OPERATORS = ("audience_swap", "polarity_swap", "constraint_change", "topic_swap", "location_swap",
                  "direction_swap", "identifier_swap")
UNRELATED_STEPS = (7, 19)  # partner seeds: k+7 and k+19 in the round-robin order


@lru_cache(maxsize=1)
def _seed() -> dict:
    data = read_curated(SOURCE_FILE, ("greetings", "seeds"))
    ids = set()
    for i, s in enumerate(data["seeds"]):
        where = f"{SOURCE_FILE}:seeds[{i}] ({s.get('id') if isinstance(s, dict) else '?'})"
        if not isinstance(s, dict) or not SEED_KEYS <= set(s) <= SEED_KEYS | OPTIONAL_KEYS:
            got = sorted(s) if isinstance(s, dict) else type(s).__name__
            raise InputError(f"{where}: keys must be {', '.join(sorted(SEED_KEYS))} (optional: "
                             f"{', '.join(sorted(OPTIONAL_KEYS))}), got {got}. Fix the record")
        if s["id"] in ids:
            raise InputError(f"{where}: duplicate id. Give each seed its own id")
        ids.add(s["id"])
        if len(s["criteria"]) != 3 or len(s["related"]["criteria"]) != 3 or len(s["wordings"]) < 3:
            raise InputError(f"{where}: needs 3 criteria, 3 related criteria and at least 3 wordings. Fix the record")
        hard = s.get("hard_wordings", [])
        if not isinstance(hard, list) or not all(isinstance(w, str) and w for w in hard):
            raise InputError(f"{where}: hard_wordings must be a list of wordings. Fix the record")
        for w in [*s["wordings"], *hard]:
            if "{" + s["slot"] + "}" not in w:
                raise InputError(f"{where}: wording '{w}' lacks the slot {{{s['slot']}}}. Put the slot in every wording")
        for sw in s["swaps"]:
            if sw.get("operator") not in SWAP_OPERATORS or sw.get("to") in (None, s["value"]):
                raise InputError(f"{where}: swap {sw} needs an operator among {', '.join(SWAP_OPERATORS)} and a new value. Fix it")
        if not isinstance(s["themes"], list) or not s["themes"] or not all(isinstance(t, str) and t for t in s["themes"]):
            raise InputError(f"{where}: themes must be a non-empty list of words (what the seed is about). Fix the record")
        if s["subcategory"] == TIME_SENSITIVE:
            _check_time_scope(s, where)
    return data


def _check_time_scope(s: Mapping, where: str) -> None:
    """Every wording of a live request (with each slot value) asks about exactly one and the same
    time scope, and its answer and criteria name no other scope."""
    values = [s["value"]] + [sw["to"] for sw in s["swaps"]]
    scopes = {w.format(**{s["slot"]: v}): time_scopes(w.format(**{s["slot"]: v}))
              for w in [*s["wordings"], *s.get("hard_wordings", [])] for v in values}
    found = sorted({frozenset(v) for v in scopes.values()}, key=sorted)
    if len(found) != 1 or len(found[0]) != 1:
        detail = "; ".join(f"'{w}': {', '.join(sorted(sc)) or 'none'}" for w, sc in sorted(scopes.items()))
        raise InputError(f"{where}: wordings of a time-sensitive request must share one time scope, got {detail}. "
                         "Reword them to ask about the same time (right now vs today)")
    scope = next(iter(found[0]))
    for text in [s["answer"], *s["criteria"]]:
        other = sorted(time_scopes(text) - {scope})
        if other:
            raise InputError(f"{where}: '{text}' speaks of {', '.join(other)} but the wordings ask about {scope}. "
                             "Match the answer and criteria to the wordings' time scope")


def seeds() -> list[dict]:
    return [dict(s) for s in _seed()["seeds"]]


def wording(seed: Mapping, n: int, value: str | None = None) -> str:
    """The n-th wording of a seed: wordings rotate first, then greetings ("Hi! ...")."""
    ws = seed["wordings"]
    greet = _seed()["greetings"]
    return greet[(n // len(ws)) % len(greet)] + ws[n % len(ws)].format(**{seed["slot"]: value or seed["value"]})


def hard_wording(seed: Mapping, n: int) -> str | None:
    """The n-th hard wording of a seed (a paraphrase that shares few words with its `wordings`), or
    None when the seed has fewer than n + 1."""
    hard = seed.get("hard_wordings", [])
    return hard[n].format(**{seed["slot"]: seed["value"]}) if n < len(hard) else None


def criteria(seed: Mapping, value: str | None = None) -> list[str]:
    return [c.format(**{seed["slot"]: value or seed["value"]}) for c in seed["criteria"]]


def answer(seed: Mapping, value: str | None = None) -> str:
    return seed["answer"].format(**{seed["slot"]: value or seed["value"]})


# ---- operators: each swaps the seed's slot for one of its curated replacements ----

def _make_swap(op: str) -> Callable[..., tuple[str, str] | None]:
    def apply(seed: Mapping, rng: Any = None) -> tuple[str, str] | None:
        """Return (old value, new value) for the first curated swap of this operator, or None."""
        for sw in seed["swaps"]:
            if sw["operator"] == op:
                return seed["value"], sw["to"]
        return None
    return apply


OPERATORS = {
    "audience_swap": Operator("audience_swap", "change who the answer is for (beginner -> expert)", _make_swap("audience_swap")),
    "polarity_swap": Operator("polarity_swap", "flip the direction of the request (pros -> cons)", _make_swap("polarity_swap")),
    "constraint_change": Operator("constraint_change", "change a constraint (vegetarian -> vegan)", _make_swap("constraint_change")),
    "topic_swap": Operator("topic_swap", "change the thing asked about (cat -> puppy)", _make_swap("topic_swap")),
    "location_swap": Operator("location_swap", "change the place (Lisbon -> Prague)", _make_swap("location_swap")),
    "direction_swap": Operator("direction_swap", "reverse a direction (EUR->USD -> USD->EUR)", _make_swap("direction_swap")),
    "identifier_swap": Operator("identifier_swap", "change an identifier (flight BA117 -> BA177)", _make_swap("identifier_swap")),
}


def policy(c: Candidate) -> str | None:
    """Live information (weather, news, scores, prices) must be fetched, and a command that changes
    state must be carried out: neither is served from a cache. The reason is the subcategory's
    marker (curated live seeds are subcategory `time_sensitive`)."""
    return corpus_intents.marked_policy(c.subcategory)


GROUNDING = {
    "EQUIV": "A chat user sends the same everyday request again with different casing or punctuation.",
    "PARA_SAFE": "Different users ask an assistant for the same advice or recommendation in their own words.",
    "RELATED_UNSAFE": "A follow-up question on the same everyday topic that needs a different answer.",
    "ADVERSARIAL": "A request that reads almost the same as a cached one but changes who, what or which way (pros vs cons, vegetarian vs vegan).",
    "UNRELATED": "Two unrelated everyday requests to the same chat assistant.",
}
GROUNDING_LIVE = "A request for live information (weather, news, scores, prices) that must be answered fresh, never from a cache."


def _cand(label: str, sa: Mapping, qa: str, ca: list[str], ansa: str, sb: Mapping, qb: str, cb: list[str], ansb: str,
          method: str, template: str, rationale: str, op: str | None = None, params: Mapping | None = None) -> Candidate:
    sub = sa["subcategory"] if sa["subcategory"] == sb["subcategory"] else f"{sa['subcategory']}+{sb['subcategory']}"
    live = TIME_SENSITIVE in sub.split("+")
    c = Candidate(
        domain=DOMAIN, subcategory=sub, label=label, query_a=qa, query_b=qb, expected_answer_a=ansa, expected_answer_b=ansb,
        rationale=rationale, verification_method="rubric", verification_payload={"criteria_a": ca, "criteria_b": cb},
        construction_method=method, source="curated", real_world_grounding=GROUNDING_LIVE if live else GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template,
                              operator=op, operator_params=dict(params) if params is not None else None,
                              source_file="sources/curated/conversational.yaml", source_record=sa["id"]),
    )
    return c.under_policy(policy(c))


def _pools(rng_for: Callable[..., Any]) -> dict[str, list[Candidate]]:
    """Per-label candidates, seed by seed (the wording rotation is the variety; `rng_for` is unused)."""
    by_sub: dict[str, list[dict]] = {}
    for s in seeds():
        by_sub.setdefault(s["subcategory"], []).append(s)
    # Round-robin over subcategories, so that the per-label caps spread over all of them.
    ss = round_robin(list(by_sub.values()))
    out: dict[str, list[Candidate]] = {lab: [] for lab in LABELS}
    for k, s in enumerate(ss):
        main = (criteria(s), answer(s))
        rel = s["related"]
        for n, r in enumerate((0, 8)):  # two rounds of wordings; the second mostly uses greeting-prefixed forms
            q = wording(s, k + r)
            out["EQUIV"].append(_cand("EQUIV", s, q, *main, s, surface(q, k + r), *main, "curated", "surface_variant",
                                      "The same request; only case, spacing or punctuation differ."))
            # Round n pairs a wording with the seed's n-th hard wording when it has one (few shared
            # words, the same slot value: the paraphrases embedders find hard), else with the next wording.
            hard = hard_wording(s, n)
            if hard is None:
                out["PARA_SAFE"].append(_cand("PARA_SAFE", s, wording(s, k + r + 1), *main, s, wording(s, k + r + 2), *main,
                                              "curated", "rewording", "The same request in other words; every answer-determining detail kept."))
            else:
                out["PARA_SAFE"].append(_cand("PARA_SAFE", s, wording(s, k + r + 1), *main, s, hard, *main, "curated",
                                              "hard_rewording", "The same request in other words that share few of its "
                                              "words; every answer-determining detail kept."))
            rq = ("" if r == 0 else _seed()["greetings"][1 + k % 4]) + rel["wording"]
            out["RELATED_UNSAFE"].append(_cand("RELATED_UNSAFE", s, wording(s, k + r + 3), *main, s, rq, list(rel["criteria"]),
                                               rel["answer"], "curated", "related_question",
                                               "Same topic, but a different question with a different answer."))
        for n, sw in enumerate(s["swaps"]):
            old, new = OPERATORS[sw["operator"]].apply(s)  # type: ignore[misc]
            if sw["to"] != new:  # a second swap of the same operator: use it directly
                new = sw["to"]
            qa, qb = wording(s, k + 4 + 3 * n), wording(s, k + 4 + 3 * n, new)
            out["ADVERSARIAL"].append(_cand("ADVERSARIAL", s, qa, *main, s, qb, criteria(s, new), answer(s, new),
                                            "adversarial_perturbation", sw["operator"],
                                            f"One answer-determining detail changed: {old} -> {new}.",
                                            sw["operator"], {"slot": s["slot"], "from": old, "to": new}))
        for step in UNRELATED_STEPS:
            o = ss[(k + step) % len(ss)]
            # Plainly different: another subcategory and no shared theme (interview nerves and a
            # rough day at work are both work stress, though one is advice and one small talk).
            if o["subcategory"] != s["subcategory"] and o["id"] != s["id"] and not set(o["themes"]) & set(s["themes"]):
                out["UNRELATED"].append(_cand("UNRELATED", s, wording(s, k + 5 + step), *main, o, wording(o, k + 6 + step),
                                              criteria(o), answer(o), "curated", "other_seed", "Two unrelated requests."))
    return out


# Ten spare per label above max(need, 40): v1.1 needs 60/60/50/40/50 and the curated seeds offer
# 98/98/98/58/78 candidates per label.
_build = capped_builder(DOMAIN, _pools, LABELS, margin=0.0, spare=10)


# ---------------------------------------------------------------- LM-generated rows (domains/lm)

def lm_items(keywords: Mapping[str, tuple[str, ...]]) -> list[LMItem]:
    """Seeds a model may reword: those of a subcategory named in the prompt file's keywords (never
    live information: such a row is never a hit). A rewording keeps the slot's value and every
    content word all the seed's wordings share (the thing asked about: "houseplant", "dinner",
    "two"), adds no swap target of the seed ("vegan" for "vegetarian") nor another seed's value,
    uses no content word outside the seed's wordings and the common request words (a new topic
    word may change what is asked), and both sides are judged by the seed's rubric."""
    items, all_seeds = [], seeds()
    values = sorted({str(s["value"]) for s in all_seeds} | {str(sw["to"]) for s in all_seeds for sw in s["swaps"]})
    for s in all_seeds:
        if s["subcategory"] not in keywords or s["subcategory"] == TIME_SENSITIVE:
            continue
        texts = [w.format(**{s["slot"]: s["value"]}) for w in s["wordings"]]
        value = str(s["value"])
        subject = shared_words(texts, skip=value)
        swaps = tuple(str(sw["to"]) for sw in s["swaps"])
        items.append(LMItem(
            group=s["id"], spread_key=s["subcategory"], phrasings=tuple(texts), keep=(value, *subject),
            keywords=tuple(keywords[s["subcategory"]]) + subject or (value,), foreign=swaps,
            others=tuple(v for v in values if v not in swaps and not any(_word_in(v, t) for t in texts)),
            leaks=(), subcategory=s["subcategory"], answer=answer(s), verification_method="rubric",
            payload={"criteria_a": criteria(s), "criteria_b": criteria(s)},
            asks_for=f"the request '{s['id']}' with {s['slot']} = {value}; the same 3-point rubric",
            vocabulary=tuple(texts)))
    return items


def _word_in(phrase: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None


def lm_rows(ctx: GenContext) -> list[Candidate]:
    """PARA_SAFE pairs of model rewordings of the curated requests (none when ctx.llm is None)."""
    return lm_generate.generate(SPEC, ctx)[0]


SPEC = DomainSpec(
    name=DOMAIN,
    description="Advice, opinions, small talk and recommendations; live-information requests never hit.",
    generators={**method_generators(DOMAIN, _build.for_ctx),
                "intent_bottom_up": corpus_rows("intent_bottom_up"),
                "real_traffic_mined": mining.real_traffic_rows, "lm_generated": lm_rows},
    verifier="rubric",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    lm=LMHooks(items=lm_items, source_file="sources/curated/conversational.yaml"),
    # Share of each label's need offered from corpora, spread over the mappings (domains/corpora/common.py: caps).
    # No existing_benchmark feed: PAWS and MRPC hold declarative sentences, not requests
    # (domains/corpora/benchmarks.py); their share went to QQP in qa_open.
    corpus_feeds={
        "intent_bottom_up": (CorpusFeed(("massive/en-US", "banking77"), {"EQUIV": 0.1, "PARA_SAFE": 0.4, "RELATED_UNSAFE": 0.4,
                                                                        "ADVERSARIAL": 0.3, "UNRELATED": 0.5}),)},
    # Mined requests for live information (under the time_sensitive policy), and every other mined pair
    # no other domain's rule takes.
    mined_rules=(MinedRule("time_sensitive"), MinedRule("general")),
)
