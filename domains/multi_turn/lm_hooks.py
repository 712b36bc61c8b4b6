"""The multi_turn domain's part in LM-written follow-ups (domains/lm/followups.py).

Items: one per conversation state, question type and target (12 °C / convert / Fahrenheit; the
novels list / ordinal / second), with the earlier turns of one wording, the curated final messages
of that target (the model rewords one at a time), the target a follow-up must keep and the other
targets it must not name, and the facts of every conversation of the same kind, which it must not
restate (so that it fits after any of them).

Rows, decided by the conversations, never by the model (the same labels as the curated rows):
- ADVERSARIAL: the same follow-up after the conversation's one-fact perturbation (12 °C -> 16 °C,
  Austria -> Australia), when the answers differ;
- RELATED_UNSAFE: the same follow-up after another conversation of the same kind, worded
  differently and with other facts (as the curated rows: the earlier turns differ in more than
  one token), when the answers differ; only a follow-up that uses no word of its own earlier
  turns' wording, so that it fits the other wording too;
- PARA_SAFE: two follow-ups of the same target after the same earlier turns (two of this
  conversation's, or one of its and one written for another conversation of the same kind and
  target, when neither uses a word of its own earlier turns' wording).
Expected answers and context facts come from the scenario (scenarios.py), as for curated rows.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from domains.base import Candidate
from domains.lm.followups import FollowUpItem
from domains.lm.rules import new_words
from domains.multi_turn.scenarios import Instance

# What a question type's follow-up must name when its target is empty (the countries' questions).
_QTYPE_WORDS = {"capital": ("capital",), "continent": ("continent",)}


def _fact_values(inst: Instance) -> list[str]:
    """The values of an instance's facts ("list = A; B; C" -> A, B, C) and its answers' forms."""
    out = [v for f in inst.facts for v in f.split(" = ", 1)[1].split("; ")]
    for by_target in inst.answers.values():
        for answer in by_target.values():
            out += [a.strip(" )") for a in answer.replace("(also:", ",").split(",")]
    return out


def _peers() -> dict[str, list[Instance]]:
    from domains.multi_turn import scenarios   # the package imports this module to register SPEC

    by_kind: dict[str, list[Instance]] = {}
    for inst in scenarios()[0]:
        by_kind.setdefault(inst.kind, []).append(inst)
    return by_kind


@lru_cache(maxsize=1)
def follow_ups() -> tuple[FollowUpItem, ...]:
    """Every conversation state, question type and target, in file order; the wording of the
    earlier turns rotates over the states."""
    out = []
    for kind, insts in _peers().items():
        facts = tuple(sorted({v for j in insts for v in _fact_values(j) if v}))
        for k, inst in enumerate(insts):
            for qtype in sorted(inst.finals):
                targets = sorted(inst.answers[qtype])
                for target in targets:
                    ci = k % len(inst.contexts)
                    keep = (target,) if target else _QTYPE_WORDS.get(qtype, ())
                    foreign = tuple(t for t in targets if t != target) + tuple(
                        w for q, ws in _QTYPE_WORDS.items() if q != qtype and q in inst.finals for w in ws)
                    out.append(FollowUpItem(
                        group=f"{inst.name}|{qtype}|{target}", spread_key=f"{kind}/{qtype}", context=inst.contexts[ci],
                        finals=tuple(f.replace("{t}", target) for f in inst.finals[qtype]),
                        keep=keep, foreign=foreign, facts=tuple(f for f in facts if f not in keep),
                        topic=kind.replace("_", " "), target=f"{kind}|{qtype}|{target}", data=(inst, ci, qtype, target)))
    return tuple(out)


def _portable(item: FollowUpItem, text: str) -> bool:
    """Whether a follow-up fits any wording of the earlier turns: it uses no word of its own turns
    that the curated follow-ups and the topic lack ("the crate" fits only the crate's wording)."""
    return not new_words(text, item.finals + (item.topic,))


def pair_follow_ups(item: FollowUpItem, texts: Sequence[str], others: Sequence[str] = ()) -> list[Candidate]:
    """The rows the kept follow-ups `texts` of `item` make, with `others` (kept for earlier items
    of the same target) as PARA_SAFE partners (module docstring)."""
    from domains.multi_turn import OPERATORS, _cand, _side

    inst, ci, qtype, target = item.data
    answer = inst.answers[qtype][target]
    out: list[Candidate] = []
    p = OPERATORS["context_swap"].apply(inst)
    peers = [j for j in _peers()[inst.kind] if j != inst and (p is None or j != p.variant)
             and j.finals[qtype] == inst.finals[qtype] and j.answers.get(qtype, {}).get(target, answer) != answer]
    for n, text in enumerate(texts):
        me = _side(inst, ci, qtype, 0, target, text)
        if p is not None and p.variant.answers.get(qtype, {}).get(target, answer) != answer:
            out.append(_cand("ADVERSARIAL", me, _side(p.variant, ci, qtype, 0, target, text), "lm_generated",
                             "lm_followup_context_swap", "A model-written follow-up after earlier turns that differ in one "
                             f"answer-determining fact: '{answer}' vs '{p.variant.answers[qtype][target]}'.",
                             p.operator, p.params))
        if peers and len(inst.contexts) > 1 and _portable(item, text):
            j = peers[(len(item.group) + n) % len(peers)]
            out.append(_cand("RELATED_UNSAFE", me, _side(j, ci + 1, qtype, 0, target, text), "lm_generated",
                             "lm_followup_other_conversation", "The same model-written follow-up after another "
                             f"conversation of the same kind, so the answer changes: '{answer}' vs '{j.answers[qtype][target]}'."))
    partners = [(a, b) for a in texts for b in texts if a < b]
    partners += [(a, b) for a in texts for b in reversed(others) if _portable(item, a) and _portable(item, b)]
    for a, b in partners:
        out.append(_cand("PARA_SAFE", _side(inst, ci, qtype, 0, target, a), _side(inst, ci, qtype, 0, target, b),
                         "lm_generated", "lm_followup_paraphrase",
                         "Same earlier turns; two model-written follow-ups asking for the same target."))
    return out
