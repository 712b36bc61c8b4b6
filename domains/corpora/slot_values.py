"""One-slot changes of MASSIVE's intent frames that are no change of the request (intents.py drops
them after its pick, `slot_values_synonyms`)."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from domains.base import Candidate

# Slot values between which a change is no change of the request, by slot. Every one-slot change the
# corpora gave (124 in sources/extract/pairs.jsonl on 2026-11-28) was read twice, once by the team and
# once blind (the two requests only: 114 different, 9 the same, 1 unsure). The 10 pairs read as the
# same request or unsure are dropped (`slot_values_synonyms`, by `without_same_values`), whoever read
# them so:
# - two words for one thing: "order some take-out" / "order takeaway" (twice), "resume" / "continue"
#   a book, "start robot cleaner" / "turn on my robot vacuum cleaner", sw "itanyesha" (will it rain) /
#   "dalili za mvua" (signs of rain), sw "habari za dunia" (world news) / "habari za kimataifa"
#   (international news), de "morgen früh" / "morgen morgen" (tomorrow morning), "any runs" /
#   "running competitions";
# - one ask read either way: sw "nilete mwavuli kesho" (should I bring an umbrella tomorrow) / "kutakuwa
#   na mvua kesho" (will it rain tomorrow), "restart american gods" / "start playing american gods
#   where I last stopped".
SAME_VALUE: dict[str, tuple[frozenset[str], ...]] = {
    "order_type": (frozenset({"take-out", "takeout", "take out", "takeaway", "take away", "carry out", "carryout"}),),
    "player_setting": (frozenset({"resume", "continue"}), frozenset({"restart", "start playing"})),
    "device_type": (frozenset({"robot cleaner", "robot vacuum cleaner", "robot vacuum"}),),
    "event_name": (frozenset({"runs", "running competitions", "running events", "races"}),),
    "timeofday": (frozenset({"früh", "morgen", "morgens"}),),
    "place_name": (frozenset({"dunia", "kimataifa"}),),
    "weather_descriptor": (frozenset({"itanyesha", "mvua", "kunyesha"}), frozenset({"mwavuli", "mvua"})),
}


def changed_slot(c: Candidate) -> tuple[str, Any, Any] | None:
    """(slot, value in A, value in B) when the candidate's two frames (its expected answers, the
    canonical frames its label was decided from) have one intent and one set of slots, and exactly
    one slot's value differs; None otherwise (another intent, a localised translation)."""
    fa, fb = json.loads(c.expected_answer_a), json.loads(c.expected_answer_b)
    sa, sb = fa.get("slots", {}), fb.get("slots", {})
    if fa.get("intent") != fb.get("intent") or sa.keys() != sb.keys():
        return None
    changed = [k for k in sa if sa[k] != sb[k]]
    return (changed[0], sa[changed[0]], sb[changed[0]]) if len(changed) == 1 else None


def without_same_values(picked: list[Candidate], drops: Counter) -> list[Candidate]:
    """The picked candidates but those whose one changed slot stays within a SAME_VALUE family
    (`slot_values_synonyms`). They are dropped after the pick, not from its pools: a pool's shuffle
    and the texts each pick uses up stay what they were, so no other pair of the extract changes."""
    out = []
    for c in picked:
        change = changed_slot(c)
        if change is not None and same_value(*change):
            drops["slot_values_synonyms"] += 1
            continue
        out.append(c)
    return out


def same_value(slot: str, a: Any, b: Any) -> bool:
    """Whether a change of `slot` from one value to the other is within a family of SAME_VALUE."""
    if not isinstance(a, str) or not isinstance(b, str):  # several values of one slot: never one family
        return False
    return any(a in family and b in family for family in SAME_VALUE.get(slot, ()))
