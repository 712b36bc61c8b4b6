"""Open-world trap operators for real user requests (issue #27 item 2).

Each single-turn operator takes a real request and proposes a copy in which exactly one
answer-determining token or span changed (the answer repeats or depends on it: BENCHMARK.md's rule),
so a cache must MISS: label ADVERSARIAL. Each proposal must pass `accept(a, b)`, a check written apart
from the operators (one differing span, a known pair of the operator's kind), or it is dropped.
Everything is deterministic given (text, seed): randomness comes from `domains.base.stable_rng`.

API (what the extract job calls): `traps`, `followup_traps`, `accept`, `OPERATORS`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import re

from domains.base import stable_rng
from domains.text import script
from domains.corpora.traps import entities as _entities
from domains.corpora.traps import lexical as _lexical
from domains.corpora.traps import numeric as _numeric
from domains.corpora.traps.accept import accept
from domains.corpora.traps.text import Edit, replace

VERSION = "traps-1"
MAX_CHARS = 2000

OPERATORS: dict[str, str] = {
    "entity_swap": "a named entity becomes another of the same type (country, city, person, organisation, "
                   "product, programming language)",
    "number_change": "a count or an amount becomes another number in the same format",
    "date_time_change": "a year, weekday, month, clock time, duration or relative day becomes another",
    "scope_change": "a quantifier (all/some, always/sometimes), a time window or a region is widened or narrowed",
    "polarity_flip": "an evaluative or directional word becomes its opposite, or a negation is added or removed",
    "comparison_flip": "a comparative becomes its opposite, or the two sides of 'X ... than Y' swap",
    "unit_change": "a unit becomes another unit of the same quantity (km/miles, kg/lbs, GB/MB, USD/EUR, C/F)",
    "context_detail_change": "one detail of an earlier user turn changes (a single-turn operator applied to it)",
    "context_topic_swap": "the earlier turns come from another conversation, the final message is the same",
    "context_chatter_inserted": "a greeting exchange is inserted before the first turn (HIT)",
}

_SINGLE: dict[str, Callable[[str, Any], tuple[list[Edit], list[str]]]] = {
    "entity_swap": _entities.entities,
    "number_change": _numeric.numbers,
    "date_time_change": _numeric.dates,
    "scope_change": lambda text, rng: _lexical.scope(text),
    "polarity_flip": lambda text, rng: _lexical.polarity(text),
    "comparison_flip": lambda text, rng: _lexical.comparison(text),
    "unit_change": lambda text, rng: _lexical.unit(text),
}
SINGLE_TURN = tuple(_SINGLE)


@dataclass(frozen=True)
class Trap:
    operator: str
    query_b: str
    old: str
    new: str
    kind: str
    label: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FollowTrap:
    operator: str
    query_b: str
    context_b: tuple[Mapping[str, str], ...]
    old: str
    new: str
    kind: str
    label: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


def traps(text: str, seed: str) -> tuple[list[Trap], Counter]:
    """Every single-turn operator that applies to `text`, at most one trap each, and the drops by
    reason (`<operator>:<reason>`)."""
    out: list[Trap] = []
    drops: Counter = Counter()
    if not text.strip():
        drops["all:empty"] += 1
        return out, drops
    if len(text) > MAX_CHARS:
        drops["all:too_long"] += 1
        return out, drops
    if script(text) != "LATIN" or not re.search(r"\b(?:the|an?|is|are|was|to|of|in|on|at|my|me|i|you|your|it|this|that|what|how|and|for|with|can|do|please|set|be|will|from|have|not)\b", text, re.I):
        drops["all:not_english"] += 1
        return out, drops
    for name, fn in _SINGLE.items():
        trap = _one(name, fn, text, seed, drops)
        if trap is not None:
            out.append(trap)
    return out, drops


def _one(name: str, fn, text: str, seed: str, drops: Counter) -> Trap | None:
    rng = stable_rng(VERSION, name, seed, text)
    edits, reasons = fn(text, rng)
    for r in reasons:
        drops[f"{name}:{r}"] += 1
    if not edits:
        drops[f"{name}:no_candidate"] += 1
        return None
    edits = sorted(set(edits), key=lambda e: (e.start, e.end, e.new))
    rng.shuffle(edits)
    for e in edits:
        b = replace(text, e.start, e.end, e.new)
        got, why = accept(text, b)
        if got == name:
            return Trap(name, b, e.old, e.new, e.kind, "ADVERSARIAL",
                        {"start": e.start, "end": e.end, "accept": why, "seed": seed, "version": VERSION,
                         **dict(e.evidence)})
        drops[f"{name}:accept_failed"] += 1
    return None


from domains.corpora.traps.followups import followup_traps  # noqa: E402  (uses traps above)

__all__ = ["OPERATORS", "SINGLE_TURN", "Trap", "FollowTrap", "traps", "followup_traps", "accept", "VERSION"]
