"""intent_bottom_up rows from MASSIVE and BANKING77: labels follow from the canonical
`(intent, {slot: value})` frame (slot values NFKC-casefolded, spaces collapsed).

Mappings (MAPPINGS; a domain's spec names the ones that feed it and their shares,
domains/corpora/feeds.py): "massive/en-US" and "banking77" (the project's conversational domain),
"massive/translations" (MASSIVE de-DE/sw-KE, the multilingual domain):
- same frame, different text -> PARA_SAFE (EQUIV when the texts differ only in case, spacing or
  punctuation), and only when the two texts pass common.paraphrase_guard (same numbers and names,
  no constraint word on one side, same content words): one intent is not one answer ("Top up on
  my Google Pay isn't working" vs "where do I top up my google pay?"), so each utterance is paired
  with the first one of its frame group that the guard accepts. MASSIVE frames must hold at least one slot and an intent whose frame determines
  the answer (OPEN_INTENTS such as qa_factoid leave the asked thing unannotated); BANKING77 has
  no slots, so its 77 fine-grained FAQ intents are the frame.
- same intent and slot names, exactly one slot value clearly changed (not the same value spelt
  with digits vs number words, not one value inside the other, not a change that a reader took
  for none: domains/corpora/slot_values.py) -> ADVERSARIAL when word overlap
  >= 0.5, RELATED_UNSAFE when < 0.3, otherwise left out.
- MASSIVE: same scenario, different intent (alarm_set vs alarm_query) -> RELATED_UNSAFE;
  different scenario -> UNRELATED. BANKING77: intents sharing a name word (card_arrival vs
  card_linking) -> RELATED_UNSAFE; no shared word and text overlap < 0.2 -> UNRELATED.
- massive/translations, MASSIVE parallel ids: the en-US utterance and its de-DE/sw-KE version ->
  ADVERSARIAL only when the translators localised a name (`localised_change`: "time in new york"
  -> "uhrzeit in berlin"), so the request itself differs; a plain translation is dropped (an
  assistant action or a frame is the same in any language: "volume up" en/de is no MISS).
- Utterances cut off mid-sentence (`common.unfinished`; for MASSIVE's unpunctuated English
  transcripts also a final preposition without its object, `common.cut_off`: "what are the train
  times for"), and BANKING77 records that are not a user's request (agent replies such as
  "Transfers may show up as pending for up to one day"), are not used.

Policies, as in the curated domains. An intent that asks for live or changing information
(TIME_SENSITIVE_INTENTS: weather, news, stocks and exchange rates, the time, traffic and train
times, what is on the user's own calendar, lists, alarms, inbox or feed) is answered fresh every
time; an intent that changes state (MUTATION_INTENTS: set an alarm or a reminder, book a ticket,
send an email, switch a light) must be carried out every time. Neither gives a HIT pair, and a
pair with such an intent on either side carries `+time_sensitive` or `+mutation` in its
subcategory, which the conversational and multilingual policies hold, so `make` puts the row
under policy_no_cache with that reason. BANKING77's intents are FAQ topics answered from the
bank's help text (one answer per intent, which is why the corpus can label by intent), not from
the user's account, so they stay cacheable; only `exchange_rate` ("How is the exchange rate
doing?") asks for a live figure.

Verification: the expected answer is the canonical frame as canonical JSON (the thing the label
was decided from): alias_exact_match for massive/en-US and banking77, translated_exact_match (with
the locale's language) for massive/translations.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from typing import Any, Mapping

from domains.base import Candidate, GenContext, canonical_json, normalize_text
from domains.text import NUMBER_WORDS
from domains.corpora.common import cut_off, make, overlap, paraphrase_guard, pick, records, request_form, unfinished
from domains.corpora.slot_values import without_same_values

OPEN_INTENTS = frozenset({"general_quirky", "qa_factoid", "qa_maths", "general_joke", "general_greet",
                          "audio_volume_other", "cooking_query", "social_post", "email_sendemail"})
MUTATION_INTENTS = frozenset({
    "alarm_set", "alarm_remove", "calendar_set", "calendar_remove", "email_addcontact", "email_sendemail",
    "lists_createoradd", "lists_remove", "social_post", "takeaway_order", "transport_taxi", "transport_ticket",
    "music_likeness", "music_dislikeness", "music_settings", "play_audiobook", "play_game", "play_music",
    "play_podcasts", "play_radio", "audio_volume_down", "audio_volume_mute", "audio_volume_up",
    "iot_cleaning", "iot_coffee", "iot_hue_lightchange", "iot_hue_lightdim", "iot_hue_lightoff",
    "iot_hue_lighton", "iot_hue_lightup", "iot_wemo_off", "iot_wemo_on"})
TIME_SENSITIVE_INTENTS = frozenset({
    "weather_query", "news_query", "qa_stock", "qa_currency", "datetime_query", "transport_traffic",
    "transport_query", "alarm_query", "calendar_query", "email_query", "email_querycontact", "lists_query",
    "social_query", "takeaway_query", "music_query", "recommendation_events",
    "exchange_rate"})   # the last is BANKING77's
LANG = {"en-US": "en", "de-DE": "de", "sw-KE": "sw"}
# Slots whose value MASSIVE's translators may replace by a local name (New York -> Berlin); other
# slots are translated, so a different form there is the same value in another language.
LOCALISED_SLOTS = frozenset({"place_name", "person", "business_name", "artist_name"})
# Words that make a slot value a description rather than a name ("the city", "this location",
# "income tax department"): a description is translated, not localised.
GENERIC_VALUE_WORDS = frozenset("""the a an our my your this that here there home city town village world country
state downtown uptown location place area region local nearby department office ministry school work house
street market center centre""".split())
GROUNDING = {
    "EQUIV": "A user repeats the same assistant command with different casing or punctuation.",
    "PARA_SAFE": "Two users word the same assistant request (same intent, same slot values) differently.",
    "RELATED_UNSAFE": "Two assistant requests in the same area that need different answers.",
    "ADVERSARIAL": "An assistant request that reads almost the same as another but names a different slot value.",
    "UNRELATED": "Two unrelated requests to the same voice or support assistant.",
}


def _norm(value: str) -> str:
    return " ".join(normalize_text(value).split())


def frame(r) -> tuple[str, dict[str, Any]]:
    """The canonical frame with normalised slot values."""
    intent, slots = r.canonical()
    return intent, {k: (tuple(_norm(x) for x in v) if isinstance(v, tuple) else _norm(v)) for k, v in slots.items()}


def answer(r) -> str:
    intent, slots = frame(r)
    return canonical_json({"intent": intent, "slots": slots})


def clearly_different(a: Any, b: Any) -> bool:
    """Two slot values that are not one value in two spellings: after number words become digits
    and spaces and punctuation go, they differ and neither contains the other."""
    def squash(v: Any) -> str:
        text = " ".join(v) if isinstance(v, tuple) else v
        return "".join(NUMBER_WORDS.get(w, w) for w in re.findall(r"\w+", text))
    sa, sb = squash(a), squash(b)
    return bool(sa) and bool(sb) and sa not in sb and sb not in sa


def _hit_ok(intent: str) -> bool:
    return policy_reason(intent) is None


def policy_reason(*intents_: str) -> str | None:
    """The no-cache policy a pair of these intents falls under: `mutation` when either changes
    state, else `time_sensitive` when either asks for live information, else None."""
    if any(i in MUTATION_INTENTS for i in intents_):
        return "mutation"
    if any(i in TIME_SENSITIVE_INTENTS for i in intents_):
        return "time_sensitive"
    return None


def marked_policy(subcategory: str) -> str | None:
    """The no-cache reason a subcategory carries as one of its "+" parts ("massive_alarm+mutation"
    -> "mutation"; curated live seeds are subcategory `time_sensitive`), or None. The policies of
    the domains that take intent rows read their reason from here."""
    parts = subcategory.split("+")
    return next((reason for reason in ("mutation", "time_sensitive") if reason in parts), None)


def _sub(ra, rb) -> str:
    """The first side's corpus and scenario, plus the pair's policy marker (see policy_reason)."""
    base = f"{ra.corpus}_{ra.scenario}" if ra.scenario else f"{ra.corpus}_{ra.intent.split('_')[0]}"
    reason = policy_reason(ra.intent, rb.intent)
    return f"{base}+{reason}" if reason else base


def _cand(ctx: GenContext, label: str, ra, rb, why: str, translated: bool) -> Candidate:
    la, lb = LANG.get(ra.locale, ra.locale[:2]), LANG.get(rb.locale, rb.locale[:2])
    ans_a, ans_b = answer(ra), answer(rb)
    if translated:
        method, payload = "translated_exact_match", {"lang_a": la, "lang_b": lb, "aliases_a": [], "aliases_b": []}
    else:
        method, payload = "alias_exact_match", {"aliases_a": [], "aliases_b": []}
    return make(
        ctx, method="intent_bottom_up", label=label, subcategory=_sub(ra, rb), query_a=_text(ra), query_b=_text(rb),
        answer_a=ans_a, answer_b=ans_b, rationale=why, verification_method=method, payload=payload,
        source=ra.corpus, licence=ra.licence, grounding=GROUNDING[label],
        source_file=ra.source_file if ra.source_file == rb.source_file else f"{ra.source_file}|{rb.source_file}",
        source_record=f"{ra.split}/{ra.record_id}|{rb.split}/{rb.record_id}",
        original_label=f"{ra.intent}|{rb.intent}", template_id=f"{ra.corpus}:{ra.intent}", generator=ra.corpus)


def _pools(ctx: GenContext, recs: list, drops: Counter, translated: bool) -> dict[str, list[Candidate]]:
    """Candidate pools per label from one locale's utterances (mapping in the module docstring);
    `translated`: verified by translated_exact_match (massive/translations)."""
    pools: dict[str, list[Candidate]] = defaultdict(list)
    recs = [r for r in recs if r.intent not in OPEN_INTENTS and _usable(r, drops)]
    german = bool(recs) and recs[0].locale.startswith("de")
    # same frame -> PARA_SAFE/EQUIV: pairs inside each frame group whose texts pass the paraphrase
    # guard (one intent or frame is not one answer: "top up isn't working" vs "how do I top up")
    groups: dict[str, list] = defaultdict(list)
    for r in recs:
        groups[answer(r)].append(r)
    for key in sorted(groups):
        g = groups[key]
        if not g[0].slots and g[0].corpus == "massive":
            continue
        if not _hit_ok(g[0].intent):
            continue
        seen: dict[str, Any] = {}
        for r in g:
            seen.setdefault(_text(r), r)     # BANKING77 texts may hold stray newlines
        distinct = [seen[t] for t in sorted(seen)]
        ctx.rng("frame", key).shuffle(distinct)
        for ra, rb in _guarded_pairs(distinct, german, drops):
            label = "EQUIV" if normalize_text(ra.text) == normalize_text(rb.text) else "PARA_SAFE"
            why = (f"Same canonical frame {key}, and the wordings differ only in function words, word forms or "
                   "punctuation (same numbers, names and content words, no added constraint).")
            pools[label].append(_cand(ctx, label, ra, rb, why, translated))
    # one slot value changed: bucket by (intent, frame without that slot)
    buckets: dict[str, list] = defaultdict(list)
    for r in recs:
        intent, slots = frame(r)
        for s in sorted(slots):
            rest = {k: v for k, v in slots.items() if k != s}
            buckets[canonical_json([intent, s, rest])].append(r)
    for key in sorted(buckets):
        b = sorted(buckets[key], key=lambda r: (r.split, r.record_id))
        slot = canonical_json_loads(key)[1]
        ctx.rng("slot", key).shuffle(b)
        for ra, rb in zip(b[0::2], b[1::2]):
            va, vb = frame(ra)[1][slot], frame(rb)[1][slot]
            if not clearly_different(va, vb):
                drops["slot_values_not_clearly_different"] += 1
                continue
            ov = overlap(ra.text, rb.text)
            label = "ADVERSARIAL" if ov >= 0.5 else "RELATED_UNSAFE" if ov < 0.3 else None
            if label is None:
                drops["slot_change_overlap_between_bands"] += 1
                continue
            pools[label].append(_cand(ctx, label, ra, rb, f"Same intent {ra.intent}; slot '{slot}' changed from "
                                                          f"'{va}' to '{vb}' (word overlap {ov:.2f}).", translated))
    # different intents: pair each intent's utterances with the next intent's, in a seeded order
    by_intent: dict[str, list] = defaultdict(list)
    for r in recs:
        by_intent[r.intent].append(r)
    intents = sorted(by_intent)
    rng = ctx.rng("intents", recs[0].corpus if recs else "", recs[0].locale if recs else "")
    for i, ia in enumerate(intents):
        for ib in intents[i + 1:]:
            ra, rb = rng.choice(by_intent[ia]), rng.choice(by_intent[ib])
            if ra.corpus == "massive":
                label = "RELATED_UNSAFE" if ra.scenario == rb.scenario else "UNRELATED"
            else:
                shared = set(ia.split("_")) & set(ib.split("_"))
                label = "RELATED_UNSAFE" if shared else "UNRELATED" if overlap(ra.text, rb.text) < 0.2 else None
            if label is None:
                drops["different_intents_overlapping_text"] += 1
                continue
            pools[label].append(_cand(ctx, label, ra, rb, f"Different intents {ia} and {ib}.", translated))
    return pools


def _bigrams(value: str) -> set[str]:
    letters = "".join(ch for ch in unicodedata.normalize("NFKD", value) if ch.isalpha())
    return {letters[i:i + 2] for i in range(len(letters) - 1)}


def looks_translated(en_value: str, other: str) -> bool:
    """Whether `other` may be `en_value` translated or transliterated rather than replaced by
    another name: a shared word ("new york city" / "jiji la new york") or similar spelling
    (character-bigram Dice >= 0.15: "andrew" / "andreas", "america" / "amerika", "claire" / "klara")."""
    if set(en_value.split()) & set(other.split()):
        return True
    ba, bb = _bigrams(en_value), _bigrams(other)
    return not ba or not bb or 2 * len(ba & bb) / (len(ba) + len(bb)) >= 0.15


def localised_change(src, r, third: list) -> tuple[str, str, str] | None:
    """(slot, en value, localised value) when MASSIVE's translators replaced a name in `src`
    (en-US) by another one in `r` ("new york" -> "berlin"), else None. Only name slots count
    (LOCALISED_SLOTS: a "kitchen" becomes "küche", the same room) and only a name, not a description
    (GENERIC_VALUE_WORDS: "the city" becomes "der stadt"); the value must not look like a
    translation of the English one, in `r` nor in any other locale's version of the utterance
    (`third`): "america" -> sw "marekani" passes the spelling test, but de "amerika" shows it is
    the same country."""
    fa, fb = frame(src)[1], frame(r)[1]
    if fa.keys() != fb.keys():
        return None
    for slot in sorted(fa):
        va, vb = fa[slot], fb[slot]
        if slot not in LOCALISED_SLOTS or isinstance(va, tuple) or isinstance(vb, tuple) or va == vb:
            continue
        if set(va.split()) & GENERIC_VALUE_WORDS:
            continue
        others = [frame(x)[1].get(slot) for x in third]
        if looks_translated(va, vb) or any(isinstance(o, str) and looks_translated(va, o) for o in others):
            continue
        return slot, va, vb
    return None


def _text(r) -> str:
    return " ".join(r.text.split())


def _usable(r, drops: Counter) -> bool:
    """Whether an utterance can be a row side: not cut off mid-sentence, and for BANKING77 a user's
    request rather than one of the agent replies among its queries."""
    if r.locale.startswith("en") and unfinished(r.text):     # English cues ("an" ends German "mach ... an")
        drops["utterance_unfinished"] += 1
        return False
    if r.corpus == "massive" and r.locale.startswith("en") and cut_off(r.text):
        drops["utterance_cut_off"] += 1
        return False
    if r.corpus == "banking77" and not request_form(r.text):
        drops["utterance_not_a_request"] += 1
        return False
    return True


def _guarded_pairs(rs: list, german: bool, drops: Counter) -> list[tuple[Any, Any]]:
    """Disjoint pairs from one frame group, in the group's (seeded) order: each utterance is paired
    with the first later unpaired one that the paraphrase guard accepts; the rest are counted."""
    taken = [False] * len(rs)
    out = []
    for i, ra in enumerate(rs):
        if taken[i]:
            continue
        for j in range(i + 1, len(rs)):
            if not taken[j] and paraphrase_guard(ra.text, rs[j].text, german=german) is None:
                taken[i] = taken[j] = True
                out.append((ra, rs[j]))
                break
        else:
            drops["same_frame_no_safe_paraphrase"] += 1
    return out


def canonical_json_loads(text: str) -> Any:
    import json
    return json.loads(text)


def massive_en_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                       drops: Counter) -> list[Candidate]:
    """MASSIVE en-US intent pairs (alias_exact_match)."""
    massive = [r for r in records(ctx, "massive") if r.locale == "en-US"]
    return without_same_values(pick(ctx, "massive/en-US", _pools(ctx, massive, drops, False), shares, drops, used), drops)


def banking77_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                      drops: Counter) -> list[Candidate]:
    """BANKING77 intent pairs (alias_exact_match)."""
    return pick(ctx, "banking77", _pools(ctx, list(records(ctx, "banking77")), drops, False), shares, drops, used)


def massive_translations_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                                 drops: Counter) -> list[Candidate]:
    """MASSIVE's other locales (de-DE, sw-KE): within-language pairs and en-US -> localised
    translation pairs (translated_exact_match); the shares are spread evenly over the locales."""
    allrecs = records(ctx, "massive")
    locales = sorted({r.locale for r in allrecs} - {"en-US"})
    out: list[Candidate] = []
    share = {k: v / max(1, len(locales)) for k, v in shares.items()}
    en = {r.parallel_id: r for r in allrecs if r.locale == "en-US"}
    by_id: dict[str, list] = defaultdict(list)
    for r in allrecs:
        by_id[r.parallel_id].append(r)
    for loc in locales:
        recs = [r for r in allrecs if r.locale == loc]
        pools = _pools(ctx, recs, drops, True)
        pools["ADVERSARIAL"] = []   # within-language slot swaps are left to the curated operators here
        for r in recs:
            src = en.get(r.parallel_id)
            if src is None:
                drops["no_parallel_en_utterance"] += 1
                continue
            if r.intent in OPEN_INTENTS or not _usable(r, drops) or not _usable(src, drops):
                continue
            change = localised_change(src, r, [x for x in by_id[r.parallel_id] if x.locale not in ("en-US", loc)])
            if change is None:
                # a translation of the same request: the action or answer is the same in any language
                drops["translation_without_localised_value"] += 1
                continue
            slot, va, vb = change
            pools["ADVERSARIAL"].append(_cand(
                ctx, "ADVERSARIAL", src, r,
                f"MASSIVE id {r.parallel_id}: the {loc} translators localised {slot} '{va}' to '{vb}', so the {loc} "
                f"request is about another {slot.replace('_', ' ')} (and in another language); a cached answer "
                f"to one does not answer the other.", True))
        out += without_same_values(pick(ctx, f"massive/{loc}", pools, share, drops, used), drops)
    return out


MAPPINGS = {"massive/en-US": massive_en_mapping, "banking77": banking77_mapping,
            "massive/translations": massive_translations_mapping}
