"""multilingual: simple factual questions in seven languages, answered in the question's language.

The seed is sources/curated/multilingual.yaml: capitals and spoken languages of countries, the day
after or before a weekday, counts (days in a week, legs of a spider) and colour mixing, each
written in en, de, fr, es, it, pt and nl with two phrasings and the answer in that language.
Verifier: translated_exact_match (a HIT needs the same answer in the same language).

Labels (the decision documented here, per the issue):
- EQUIV: one phrasing and a surface variant of it, same language.
- PARA_SAFE: the two phrasings of one question, same language.
- RELATED_UNSAFE: same language, same entity, another question (the capital of France vs the
  language spoken in France; the day after Monday vs, worded differently, the day before Monday).
- ADVERSARIAL: made by typed operators: `language_swap` puts the same request in another language
  (its translation: near-identical for a multilingual embedder, but the answer must come in the
  other language, so a cached answer is wrong), and `direction_swap` changes after <-> before in a
  weekday question, same language and phrasing. A language swap is only made into a language
  whose answer shares no form with the original's (Lisboa -> Lisbon, not Madrid -> Madrid, and
  never a count, whose digits every language accepts): the verifier fails a MISS whose alias
  sets overlap, since one cached answer would then serve both requests.
- UNRELATED: different topics (same or different language).

Every pair has at least one non-English side. English-English pairs ("Which language is spoken in
Russia?" and its lower-cased copy) test nothing multilingual: they are what qa_factual and qa_open
already cover, with more variety. English appears here only as one side of a translation
(language_swap) or of a cross-language UNRELATED pair; the corpus generators (XQuAD, MASSIVE) keep
the same rule. (PAWS-X German feeds nothing: its declarative sentences are not requests.)

Policy: a question naming a time scope in any of the seven languages (domains.text.TIME_SCOPES) is
`time_sensitive`; corpus rows whose intent asks for live information or changes state carry a
`+time_sensitive` or `+mutation` subcategory marker (domains/corpora/intents.py), which the policy
holds as well.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from domains.curated import read_curated, curated_error
from domains.base import Candidate, CorpusFeed, DomainSpec, Operator, Provenance, normalize_text
from domains.corpora import intents as corpus_intents
from domains.corpora.feeds import corpus_rows
from domains.families import capped_builder, method_generators, spread, surface_variant
from domains.text import time_sensitive
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "multilingual"
VERSION = "2"   # 2: no English-English pair
SOURCE_FILE = CURATED / "multilingual.yaml"
SOURCE_REL = "sources/curated/multilingual.yaml"
TURN_ORDER = ("ADVERSARIAL", "RELATED_UNSAFE", "PARA_SAFE", "UNRELATED", "EQUIV")
ENGLISH = "en"   # a pair needs at least one side in another language
SUBCATEGORY = {"capital": "capital", "language": "spoken_language", "day_after": "weekday",
               "day_before": "weekday", "counting": "counting", "colour_mixing": "colour_mixing"}

GROUNDING = {
    "EQUIV": "A user resends the same question in the same language with different capitalisation, "
             "spacing or punctuation; the stored answer is still right.",
    "PARA_SAFE": "Speakers of one language word the same simple question in two ways; the answer, in "
                 "that language, is the same.",
    "RELATED_UNSAFE": "A user asks a second question about the same country or weekday in the same "
                      "language; a topic-level match would return the first answer.",
    "ADVERSARIAL": "A multilingual service receives the same question in another language (or with "
                   "after/before swapped); cross-lingual embeddings match it, but the cached answer "
                   "is in the wrong language or simply wrong.",
    "UNRELATED": "Two unrelated simple questions from users of a multilingual assistant; a cache must "
                 "keep them apart.",
}


@dataclass(frozen=True)
class Item:
    """One question in one language: its two phrasings and the answer with aliases."""

    key: str          # language-independent id, e.g. "capital.france"
    topic: str
    entity: str       # what RELATED rows share: a country, a weekday, or the item itself
    lang: str
    phrasings: tuple[str, ...]
    answers: tuple[str, ...]

    @property
    def forms(self) -> frozenset[str]:
        return frozenset(normalize_text(a) for a in self.answers)


@dataclass(frozen=True)
class Seed:
    item: Item
    index: int

    @property
    def text(self) -> str:
        return self.item.phrasings[self.index]


@dataclass(frozen=True)
class Variant:
    text: str
    item: Item
    params: Mapping[str, Any]


def _bad(record: str, problem: str, fix: str) -> InputError:
    return curated_error(SOURCE_REL, record, problem, fix)


@lru_cache(maxsize=1)
def _data() -> dict:
    return read_curated(SOURCE_FILE, ("languages", "topics", "direction_tokens", "countries", "days", "items"))


def _phrasings(data: dict, topic: str, lang: str, **slots: str) -> tuple[str, ...]:
    templates = data["topics"][topic].get(lang)
    if not templates or len(templates) != 2:
        raise _bad(f"topics.{topic}.{lang}", "needs exactly 2 phrasings", "Add the missing phrasing")
    out = []
    for t in templates:
        for k, v in slots.items():
            t = t.replace("{" + k + "}", v)
        out.append(t)
    return tuple(out)


@lru_cache(maxsize=1)
def load_items() -> tuple[Item, ...]:
    """Every (question, language) of the curated file, sorted by key and language."""
    data = _data()
    langs = list(data["languages"])
    if len(langs) < 6:
        raise _bad("languages", f"{len(langs)} languages", "List at least 6")
    items: list[Item] = []

    def answers(record: str, per_lang: Mapping[str, Any], lang: str) -> tuple[str, ...]:
        vals = per_lang.get(lang) if isinstance(per_lang, Mapping) else None
        if not vals:
            raise _bad(record, f"no answer in '{lang}'", "Add the answer in every language")
        return tuple(str(v) for v in vals)

    for cid in sorted(data["countries"]):
        c = data["countries"][cid]
        for topic in ("capital", "language"):
            if topic not in c:
                continue
            for lang in langs:
                if lang not in c.get("of", {}) or lang not in c.get("in", {}):
                    raise _bad(f"countries.{cid}", f"no of/in form in '{lang}'", "Add both forms")
                items.append(Item(f"{topic}.{cid}", topic, cid, lang,
                                  _phrasings(data, topic, lang, of=c["of"][lang], **{"in": c["in"][lang]}),
                                  answers(f"countries.{cid}.{topic}", c[topic], lang)))
    aliases = data.get("day_aliases", {}) or {}
    for topic in ("day_after", "day_before"):
        shift = int(data["topics"][topic]["shift"])
        for lang in langs:
            names = data["days"].get(lang, [])
            if len(names) != 7:
                raise _bad(f"days.{lang}", f"{len(names)} day names", "List the 7 days, Monday first")
            for k, day in enumerate(names):
                target = names[(k + shift) % 7]
                extra = (aliases.get(lang, {}) or {}).get(target, [])
                items.append(Item(f"{topic}.{data['days']['en'][k].lower()}", topic,
                                  f"day.{data['days']['en'][k].lower()}", lang,
                                  _phrasings(data, topic, lang, d=day), (target, *extra)))
    for rec in data["items"]:
        for lang in langs:
            qs = rec.get("questions", {}).get(lang, [])
            if len(qs) != 2:
                raise _bad(f"items.{rec.get('id')}", f"needs 2 questions in '{lang}'", "Add the missing phrasing")
            items.append(Item(f"{rec['topic']}.{rec['id']}", rec["topic"], f"item.{rec['id']}", lang, tuple(qs),
                              answers(f"items.{rec['id']}", rec.get("answers", {}), lang)))
    return tuple(sorted(items, key=lambda i: (i.key, i.lang)))


@lru_cache(maxsize=1)
def _index() -> dict[tuple[str, str], Item]:
    return {(i.key, i.lang): i for i in load_items()}


def _language_swap(seed: Seed, rng) -> Variant | None:
    """The same request translated into another language (same phrasing index), only into a
    language whose answer forms share none with the seed's: 'Madrid' in every language or '12'
    beside 'zwölf' is one answer serving both requests, so such a translation is not a MISS."""
    idx = _index()
    langs = sorted(l for (k, l) in idx if k == seed.item.key and l != seed.item.lang
                   and not idx[(k, l)].forms & seed.item.forms)
    if not langs:
        return None
    to = rng.choice(langs)
    target = _index()[(seed.item.key, to)]
    return Variant(target.phrasings[seed.index], target, {"from": seed.item.lang, "to": to})


def _direction_swap(seed: Seed, rng) -> Variant | None:
    """after <-> before in a weekday question: one token, same language and phrasing."""
    item = seed.item
    if item.topic not in ("day_after", "day_before"):
        return None
    data = _data()
    partner = data["topics"][item.topic]["partner"]
    after, before = data["direction_tokens"][item.lang]
    old, new = (after, before) if item.topic == "day_after" else (before, after)
    text, count = re.subn(rf"(?<!\w){re.escape(old)}(?!\w)", new, seed.text)
    target = _index().get((partner + item.key[item.key.index("."):], item.lang))
    # The swapped text must be the partner's own phrasing, so its answer is known.
    if count != 1 or target is None or text != target.phrasings[seed.index] or target.forms & item.forms:
        return None
    return Variant(text, target, {"from": old, "to": new, "lang": item.lang})


OPERATORS = {
    "language_swap": Operator("language_swap", "Translate the request into another language; the answer "
                              "must then be in that language.", _language_swap),
    "direction_swap": Operator("direction_swap", "Swap after/before in a weekday question.", _direction_swap),
}


# ---------------------------------------------------------------- candidates

def policy(c: Candidate) -> str | None:
    """A question about the present (in any of the seven languages) must never be cached, nor a
    corpus request whose subcategory marks live information or a state change."""
    marked = corpus_intents.marked_policy(c.subcategory)
    return marked or ("time_sensitive" if time_sensitive(c.query_a, c.query_b) else None)


def _candidate(label: str, ia: Item, ta: str, ib: Item, tb: str, method: str, rationale: str,
               template_id: str, operator: str | None = None, params: Mapping[str, Any] | None = None) -> Candidate:
    payload = {"lang_a": ia.lang, "lang_b": ib.lang, "aliases_a": list(ia.answers), "aliases_b": list(ib.answers)}
    c = Candidate(
        domain=DOMAIN, subcategory=SUBCATEGORY[ia.topic], label=label, query_a=ta, query_b=tb,
        expected_answer_a=ia.answers[0], expected_answer_b=ib.answers[0], rationale=rationale,
        verification_method="translated_exact_match", verification_payload=payload,
        construction_method=method, source="curated", real_world_grounding=GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template_id,
                              operator=operator, operator_params=params, source_file=SOURCE_REL,
                              source_record=f"{ia.key}@{ia.lang}" if (ia.key, ia.lang) == (ib.key, ib.lang)
                              else f"{ia.key}@{ia.lang}|{ib.key}@{ib.lang}"))
    return c.under_policy(policy(c))   # never expected from the curated file, but a policy always wins


def english_only(*items: Item) -> bool:
    """Whether every side is English: such a pair is no multilingual row (module docstring)."""
    return all(it.lang == ENGLISH for it in items)


def _pools(rng_for) -> dict[str, list[Candidate]]:
    items = load_items()
    pools: dict[str, list[Candidate]] = {lab: [] for lab in TURN_ORDER}
    by_lang_entity: dict[tuple[str, str], list[Item]] = {}
    for it in items:
        by_lang_entity.setdefault((it.lang, it.entity), []).append(it)
        rng = rng_for("item", it.key, it.lang)
        tag = f"{it.key}@{it.lang}"
        for i, t in enumerate(it.phrasings):
            if not english_only(it):
                pools["EQUIV"].append(_candidate(
                    "EQUIV", it, t, it, surface_variant(t, rng.randrange(6)), "curated",
                    f"Same {it.lang} question up to case, spacing or punctuation; both expect '{it.answers[0]}'.",
                    f"{tag}#{i}"))
            for name in ("language_swap", "direction_swap"):
                v = OPERATORS[name].apply(Seed(it, i), rng_for("op", name, it.key, it.lang, i))
                if v is None or (name == "direction_swap" and it.topic != "day_after") or english_only(it, v.item):
                    continue   # each after/before pair once, from the 'after' side
                pools["ADVERSARIAL"].append(_candidate(
                    "ADVERSARIAL", it, t, v.item, v.text, "adversarial_perturbation",
                    f"{name} {v.params['from']} -> {v.params['to']}: expected '{it.answers[0]}' ({it.lang}) "
                    f"vs '{v.item.answers[0]}' ({v.item.lang}).", f"{tag}#{i}", operator=name, params=v.params))
        if not english_only(it):
            pools["PARA_SAFE"].append(_candidate(
                "PARA_SAFE", it, it.phrasings[0], it, it.phrasings[1], "curated",
                f"Two {it.lang} phrasings of the same question; both expect '{it.answers[0]}'.", f"{tag}#0~1"))
    for (lang, entity) in sorted(by_lang_entity):
        group = by_lang_entity[(lang, entity)]
        if lang == ENGLISH:
            continue
        for x in range(len(group)):
            for y in range(x + 1, len(group)):
                a, b = group[x], group[y]
                if a.forms & b.forms:
                    continue
                for i in range(2):
                    for j in range(2):
                        # Aligned after/before phrasings differ by one token: those are ADVERSARIAL.
                        if i == j and {a.topic, b.topic} == {"day_after", "day_before"}:
                            continue
                        pools["RELATED_UNSAFE"].append(_candidate(
                            "RELATED_UNSAFE", a, a.phrasings[i], b, b.phrasings[j], "curated",
                            f"Same language ({lang}) and subject, another question: '{a.answers[0]}' vs "
                            f"'{b.answers[0]}'.", f"{a.key}@{lang}#{i}|{b.key}@{lang}#{j}"))
    for it in items:
        rng = rng_for("unrelated", it.key, it.lang)
        others = [o for o in items if SUBCATEGORY[o.topic] != SUBCATEGORY[it.topic] and o.entity != it.entity
                  and (o.key, o.lang) > (it.key, it.lang) and not o.forms & it.forms and not english_only(it, o)]
        # Mostly the same language (the realistic case), now and then another one.
        same = [o for o in others if o.lang == it.lang]
        for o in rng.sample(same, min(2, len(same))) + rng.sample(others, min(1, len(others))):
            i, j = rng.randrange(2), rng.randrange(2)
            pools["UNRELATED"].append(_candidate(
                "UNRELATED", it, it.phrasings[i], o, o.phrasings[j], "curated",
                f"Different questions ({it.topic} vs {o.topic}).", f"{it.key}@{it.lang}#{i}|{o.key}@{o.lang}#{j}"))
    keys = {lab: (lambda c: c.provenance.operator or "") if lab == "ADVERSARIAL" else
            (lambda c: c.verification_payload["lang_a"] + c.subcategory) for lab in pools}
    return {lab: spread(pool, keys[lab], rng_for("spread", lab)) for lab, pool in pools.items()}


_build = capped_builder(DOMAIN, _pools, TURN_ORDER)


SPEC = DomainSpec(
    name=DOMAIN,
    description="Simple factual questions in seven languages, answered in the question's language.",
    generators={**method_generators(DOMAIN, _build.for_ctx),
                "existing_benchmark": corpus_rows("existing_benchmark"), "intent_bottom_up": corpus_rows("intent_bottom_up")},
    verifier="translated_exact_match",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    # XQuAD questions, with the share PAWS-X German had (its declarative sentences are not requests: see
    # domains/corpora/benchmarks.py); MASSIVE's other locales spread theirs over the locales.
    corpus_feeds={
        "existing_benchmark": (CorpusFeed(("xquad",), {"ADVERSARIAL": 0.4, "RELATED_UNSAFE": 0.25}),),
        "intent_bottom_up": (CorpusFeed(("massive/translations",), {"PARA_SAFE": 0.4, "RELATED_UNSAFE": 0.35,
                                                                   "ADVERSARIAL": 0.25, "UNRELATED": 0.35}),)},
)
