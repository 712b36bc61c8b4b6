"""The tool domain's part in LM-generated rows: rewordings (domains/lm/generate.py) and near-misses
(domains/lm/edits.py). Only cacheable intents take part (a fixed read, or a closed past range).

Rewordings: a few instances of each intent, each rendered in every phrasing with one fixed surface
form per slot. A rewording keeps every slot value as written, every number and no new one, a
keyword of its intent ("time zone", "synonym") and none of another's, and the seed's order of
shared words (so "from Boston to Denver" never becomes "to Boston from Denver"): domains/lm/rules.py.
Both sides expect the instance's canonical call and are offered its tool's category.

Near-misses: requests of the cacheable intents (a fixed read, or a closed past range: no policy), a few
instances each, rendered with a stable phrasing and surface forms, and the slot to change named in
words ("the city"). A model rewrites one with one detail changed; the canonical call, never the
model, says what the rewrite asks for:

- the rewrite must be the seed with exactly one slot's value replaced (a slot no operator may
  change, the intent's `keep`, stays): a vocabulary value in any of its surface forms, a number,
  a year, a date within 400 days, or a literal text with the changed span inside it (not one that
  reads as a typo of the old span: "ephemeral" -> "ephemerel"); the request re-rendered with that
  value must be the rewrite, word for word;
- the new call must validate against the tool's schema (and keep a drive within one road network)
  and differ from the seed's call; the domain's policy and verifier then decide as for any row.
"""
from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import replace
from typing import Any, Iterator, Mapping

from domains.base import Candidate, EditSeed, LMItem, Span, normalize_text, stable_rng
from domains.tool.candidates import from_seeds
from domains.tool.catalog import DOMAIN, Slot, load, offered_tools, same_road_region
from domains.tool.operators import call_valid
from domains.tool.planning import _is_plain
from domains.tool.rendering import Seed, call_text, intent_of, render, surfaces

INSTANCES = 8
DATE_REACH = 400
TYPO_RATIO = 0.75   # a literal text this close to the old one reads as a typo of it, not another request
# A unit may only become another unit of its dimension (miles to gallons is no request at all).
DIMENSION = {u: d for d, us in {"length": "mile kilometer foot meter centimeter inch", "mass": "kilogram pound gram ounce",
                                "volume": "liter gallon", "temperature": "celsius fahrenheit"}.items() for u in us.split()}
NOUN = {"city": "city", "country": "country", "language": "language", "unit": "unit", "account": "account",
        "number": "number", "year": "year", "date": "date", "text": "word"}


def _plain_intents() -> list:
    return [it for it in sorted(load().intents.values(), key=lambda i: i.id) if _is_plain(it)]


def lm_items(keywords: Mapping[str, tuple[str, ...]]) -> list[LMItem]:
    """Up to INSTANCES instances of every cacheable intent with keywords, each in all its phrasings."""
    items = []
    for intent in (it for it in _plain_intents() if it.id in keywords):
        foreign = sorted({k for a, ks in keywords.items() if a != intent.id for k in ks} - set(keywords[intent.id]))
        for idx, inst in enumerate(intent.instances[:INSTANCES]):
            rng = stable_rng(DOMAIN, "lm_paraphrase", intent.id, idx)
            forms = tuple((s.name, rng.randrange(len(surfaces(s.type, inst[s.name])))) for s in intent.slots)
            seeds = [Seed(intent.id, tuple(sorted(inst.items())), p, forms) for p in range(len(intent.phrasings))]
            texts = list(dict.fromkeys(render(sd) for sd in seeds))
            keep = tuple(surfaces(s.type, inst[s.name])[k] for (_, k), s in zip(forms, intent.slots))
            if len(texts) < 2:
                continue
            call, tools = call_text(seeds[0]), offered_tools([intent.tool])
            items.append(LMItem(
                group=f"{intent.id}#{idx}", spread_key=intent.id, phrasings=tuple(texts), keep=keep,
                keywords=keywords[intent.id], foreign=tuple(foreign), others=(), leaks=(),
                subcategory=intent.subcategory, answer=call, verification_method="json_schema_call", payload={},
                asks_for=f"the same call {call}", row={"tools_a": tools, "tools_b": tools}))
    return items


def _fits(slot: Slot, old: Any, new: Any) -> bool:
    """A unit keeps its dimension; any other vocabulary value fits."""
    return slot.type != "unit" or DIMENSION.get(str(old)) == DIMENSION.get(str(new)) is not None


def _what(seed: Seed, slot: Slot, rng) -> str | None:
    """The detail to change, in words: the slot's value as the request shows it, and for a
    vocabulary slot three other values the canonical call knows (the model may still pick any);
    None when a vocabulary slot has no other value to take."""
    it, value = intent_of(seed), seed.value[slot.name]
    shown = surfaces(slot.type, value)[dict(seed.forms).get(slot.name, 0) % len(surfaces(slot.type, value))]
    noun = NOUN.get(slot.type, slot.type.replace("_", " "))
    if slot.type == "text":
        return f'"{shown}" to another {"word" if " " not in str(value) else "sentence"}'
    if slot.type not in load().vocab:
        return f"the {noun} {shown} to another {noun}"
    taken = {str(v) for v in seed.value.values()}
    others = [k for k in sorted(load().vocab[slot.type]) if k not in taken and _fits(slot, value, k)
              and (slot.name not in it.same_road_region or same_road_region(it, {**seed.value, slot.name: k}))]
    if not others:
        return None
    pick = [surfaces(slot.type, k)[0] for k in rng.sample(others, min(3, len(others)))]
    such = f", such as {', '.join(pick[:-1])} or {pick[-1]}" if len(pick) > 1 else ""
    return f"{shown} to another {noun}{such}"


def lm_edit_seeds() -> list[EditSeed]:
    """Up to INSTANCES requests of every cacheable intent, each naming one slot a rewrite may change."""
    out = []
    for intent in _plain_intents():
        changeable = [s for s in intent.slots if s.name not in intent.keep]
        if not changeable:
            continue
        for idx, inst in enumerate(intent.instances[:INSTANCES]):
            rng = stable_rng(DOMAIN, "lm_edit", intent.id, idx)
            forms = tuple((s.name, rng.randrange(len(surfaces(s.type, inst[s.name])))) for s in intent.slots)
            seed = Seed(intent.id, tuple(sorted(inst.items())), rng.randrange(len(intent.phrasings)), forms)
            slots = rng.sample(changeable, len(changeable))
            what = next((w for w in (_what(seed, slot, rng) for slot in slots) if w), None)
            if what:
                out.append(EditSeed(f"{intent.id}#{idx}", render(seed), intent.id, what, seed))
    return out


def _options(seed: Seed, slot: Slot, span: Span) -> Iterator[tuple[Any, int]]:
    """(value, surface form index) pairs that could have produced the rewrite's new span."""
    new, old_value = span.new.casefold(), seed.value[slot.name]
    vocab = load().vocab
    if slot.type in vocab:
        for key in sorted(vocab[slot.type]):
            for k, form in enumerate(surfaces(slot.type, key)):
                if key != old_value and _fits(slot, old_value, key) and new in form.casefold():
                    yield key, k
    elif slot.type in ("number", "year"):   # digits, or a number word up to twelve
        for n in [int(span.new)] if span.new.isdigit() else range(13):
            for k, form in enumerate(surfaces(slot.type, n)):
                if n != old_value and form.casefold() == new:
                    yield n, k
    elif slot.type == "date":
        day = dt.date.fromisoformat(old_value)
        for delta in range(-DATE_REACH, DATE_REACH + 1):
            other = (day + dt.timedelta(days=delta)).isoformat()
            for k, form in enumerate(surfaces("date", other)):
                if delta and new in form.casefold():
                    yield other, k
    elif slot.type == "text":
        text = str(old_value)
        at = text.casefold().find(span.old.casefold())
        if at >= 0:
            yield text[:at] + span.new + text[at + len(span.old):], 0


def lm_resolve_edit(seed: EditSeed, rewrite: str, span: Span) -> Candidate | str:
    """The canonical call's reading of a rewrite (see the module docstring)."""
    s0: Seed = seed.data
    intent, want = intent_of(s0), normalize_text(rewrite)
    for slot in intent.slots:
        if slot.name in intent.keep:
            continue
        for value, form in _options(s0, slot, span):
            forms = tuple((n, form if n == slot.name else k) for n, k in s0.forms)
            variant = replace(s0.with_value(**{slot.name: value}), forms=forms)
            if normalize_text(render(variant)) != want:
                continue
            if slot.type == "text" and difflib.SequenceMatcher(None, span.old.casefold(),
                                                                span.new.casefold()).ratio() >= TYPO_RATIO:
                return "reads_as_a_typo"
            if not call_valid(variant) or (slot.name in intent.same_road_region
                                           and not same_road_region(intent, variant.value)):
                return "call_invalid"
            if call_text(variant) == call_text(s0):
                return "call_unchanged"
            if any(o is not slot and o.type == slot.type and variant.value[o.name] == value for o in intent.slots):
                return "same_value_twice"   # "What is three gallons in gal?": a unit converted to itself
            old = s0.value[slot.name]
            return from_seeds("ADVERSARIAL", "lm_generated", s0, variant, query_b=rewrite, what=slot.name,
                              template_id=f"{intent.id}/lm_edit", params={"slot": slot.name, "value_from": old,
                                                                          "value_to": value},
                              rationale=f"A model changed {slot.name} ({old} -> {value}); the canonical calls "
                                        f"differ: {call_text(s0)} vs {call_text(variant)}.")
    return "not_a_slot_value"
