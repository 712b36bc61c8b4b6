"""Mining in two steps: `prepare` one shard (per-shard, parallel), then `pair` every prepared shard.

prepare(records) -> PreparedShard: each conversation's user messages scrubbed and sorted into uses
(turns.py), and for the distinct normalised single-turn prompts their MinHash signatures and MiniLM
vectors (near.py): all the per-text work, so it fans out over shards.

pair(prepared shards) -> MinedPairs, over the union of the shards (a duplicate in another shard is
still found):
1. turns repeated across files (ShareGPT's 500-prompt file is drawn from the V3 file: same record
   id, message index and text) are kept once, the first in shard order (`duplicate_turn`);
2. single-turn prompts: exact duplicates after normalize_text are chained (each distinct wording
   once), near-duplicates come from MinHash/LSH and from the MiniLM ANN index (near.py); each pair
   is labelled only by rules.decide, routed (routes.py: the domain whose spec names the pair's
   rule) and built by single.py, and offered to one family guard (EQUIV first, then PARA_SAFE and
   ADVERSARIAL, by record ids); a HIT pair (EQUIV, PARA_SAFE) needs two opening turns;
3. multi-turn: follow-ups grouped by final message and paired across conversations (ADVERSARIAL),
   then the same final message at two points of one conversation (RELATED_UNSAFE, from turns no
   ADVERSARIAL pair used) (followups.py);
4. opening messages of two conversations that share no content word and lie far apart (UNRELATED),
   or share a subject and each ask for more (RELATED_UNSAFE) (unrelated.py).
A pair no rule decides is kept out and counted by reason (`MinedPairs.drops`). The candidates are
not verified here: the build verifies every candidate once, with its domain's (verified_rows).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from domains.base import Candidate, normalize_text
from domains.corpora.mining import followups, near, single, unrelated
from domains.corpora.mining.context import follow_up_rule
from domains.corpora.mining.routes import routes
from domains.corpora.mining.rules import decide
from domains.corpora.mining.turns import Turn, conversation_turns
from domains.families import FamilyGuard
from sources.base import natural_key


@dataclass(frozen=True)
class PreparedShard:
    """One shard's usable turns, drops by reason, and per distinct normalised single-turn prompt
    (`texts`, sorted) its MinHash signature and MiniLM vector (rows aligned with `texts`)."""

    shard: str
    turns: tuple[Turn, ...]
    drops: dict[str, int]
    human_turns: int
    texts: tuple[str, ...] = ()
    signatures: Any = None
    vectors: Any = None


@dataclass(frozen=True)
class MinedPairs:
    """What mining gives (`pair`, the mined_pairs asset, `mine`): the shards paired, in order, their
    candidates in content-key order (not verified yet: verified_rows verifies them with the rest of
    their domain's), the drops by reason (sorted), and counts for the metadata and the benchmark.
    GenContext.mined holds it: a domain's real_traffic_mined rows are `of(domain)`."""

    shards: tuple[str, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    drops: Mapping[str, int] = field(default_factory=dict)
    n_prompts: int = 0        # human turns read
    n_pairs: int = 0          # candidate pairs considered (duplicate, LSH, ANN and follow-up pairs)
    sources: Mapping[str, int] = field(default_factory=dict)  # pairs considered, by finder (duplicate, lsh, ann, ...)

    def of(self, domain: str) -> list[Candidate]:
        """The candidates routed to `domain`, in content-key order."""
        return [c for c in self.candidates if c.domain == domain]


@dataclass
class _Tally:
    """pair's running counts."""

    candidates: list[Candidate] = field(default_factory=list)
    drops: Counter = field(default_factory=Counter)
    n_prompts: int = 0
    sources: Counter = field(default_factory=Counter)


def prepare(shard: str, corpus: str, records: Iterable[Any], cache_dir: Path | None = None) -> PreparedShard:
    """Scrub and sort every user message of `records` (one corpus), then sign and embed the
    shard's distinct single-turn prompts."""
    turns: list[Turn] = []
    drops: Counter = Counter()
    human = 0
    for record in records:
        items = list(conversation_turns(corpus, record))
        if not items:
            drops["empty_prompt"] += 1  # a record without a user message (only system or assistant turns)
        human += len(items)
        for item in items:
            if isinstance(item, str):
                drops[item] += 1
            else:
                turns.append(item)
    texts = sorted({normalize_text(t.query) for t in turns if t.single})
    sigs = near.signatures(texts) if texts else None
    vecs = near.embed(texts, cache_dir) if len(texts) > 1 else None
    return PreparedShard(shard, tuple(turns), dict(sorted(drops.items())), human, tuple(texts), sigs, vecs)


def _single_pairs(singles: list[Turn], parts: Sequence[PreparedShard], res: _Tally) -> list[tuple[Turn, Turn]]:
    groups: dict[str, list[Turn]] = {}
    for t in singles:
        groups.setdefault(normalize_text(t.query), []).append(t)
    norms = sorted(groups)
    pairs: list[tuple[Turn, Turn]] = []
    for norm in norms:
        distinct: dict[str, Turn] = {}
        for t in groups[norm]:
            distinct.setdefault(t.query, t)
        if len(groups[norm]) > len(distinct):
            res.drops["identical_text"] += len(groups[norm]) - len(distinct)
        reps = list(distinct.values())
        pairs.extend(zip(reps, reps[1:]))
    res.sources["duplicate"] += len(pairs)
    if len(norms) < 2:
        return pairs
    where: dict[str, tuple[int, int]] = {}
    for k, part in enumerate(parts):
        for row, text in enumerate(part.texts):
            where.setdefault(text, (k, row))
    rows = [where[n] for n in norms]
    sigs = np.stack([parts[k].signatures[r] for k, r in rows])
    near_pairs = set(near.lsh_pairs(sigs))
    res.sources["lsh"] += len(near_pairs)
    if all(parts[k].vectors is not None for k, _ in rows):
        ann = near.neighbour_pairs(np.stack([parts[k].vectors[r] for k, r in rows]))
        res.sources["ann"] += len(set(ann) - near_pairs)
        near_pairs.update(ann)
    pairs.extend((groups[norms[i]][0], groups[norms[j]][0]) for i, j in sorted(near_pairs))
    return pairs


def pair(parts: Sequence[PreparedShard]) -> MinedPairs:
    """Pair, label, route and guard over every prepared shard, in the order given (module docstring)."""
    res = _Tally()
    rt = routes()
    seen: set[tuple] = set()
    turns: list[Turn] = []
    for part in parts:
        res.drops.update(part.drops)
        res.n_prompts += part.human_turns
        for t in part.turns:
            key = (t.corpus, t.record_id, t.index, t.query)
            if key in seen:
                res.drops["duplicate_turn"] += 1
                continue
            seen.add(key)
            turns.append(t)
    pairs = _single_pairs([t for t in turns if t.single], parts, res)
    # query_a is the turn with the smaller record id, whichever way the pair was found.
    pairs = [tuple(sorted(ab, key=lambda t: (natural_key(t.record_id), t.index))) for ab in pairs]
    proposals: list[tuple[int, Any, Any, Candidate]] = []
    for a, b in pairs:
        d = decide(a.query, b.query)
        if d.label is None:
            res.drops[d.rule] += 1
            continue
        if d.label in ("EQUIV", "PARA_SAFE") and not (a.use == "first" and b.use == "first"):
            # A later turn that passes the standalone test may still lean on its conversation ("what
            # did you change", "Too high!", "finish the code": blind readers of mined rows flagged
            # them); two of them are one request only when both open their conversations. (A MISS
            # pair of later turns stays a MISS whatever their conversations say.)
            res.drops["surface_variant_of_a_later_turn" if d.label == "EQUIV" else "paraphrase_of_a_later_turn"] += 1
            continue
        if d.label in ("EQUIV", "PARA_SAFE") and follow_up_rule(a.query) is not None:
            # "continue" / "Continue" opening two conversations: a follow-up word as the first
            # message points at a conversation we do not see (a ShareGPT part, a pasted chat), so
            # "the same request" is not decidable (blind readers flagged them as doubtful HITs).
            res.drops["follow_up_opening"] += 1
            continue
        c = single.candidate(a, b, d, rt)
        if isinstance(c, str):
            res.drops[c] += 1
            continue
        proposals.append((0 if d.label == "EQUIV" else 1, (natural_key(a.record_id), a.index),
                          (natural_key(b.record_id), b.index), c))
    guard = FamilyGuard()
    for _, _, _, c in sorted(proposals, key=lambda t: t[:3]):
        if not guard.offer(c):
            res.drops["family_limit_or_duplicate"] += 1
            continue
        res.candidates.append(c)
    follow, drops, _ = followups.follow_up_pairs(turns)
    res.drops.update(drops)
    res.sources["follow_up"] += len(follow)
    for a, b in follow:
        _keep(followups.candidate(a, b, routes=rt), res)
    related, drops = followups.repeat_pairs(turns, [t for ab in follow for t in ab])
    res.drops.update(drops)
    res.sources["repeat_in_conversation"] += len(related)
    for a, b in related:
        _keep(followups.candidate(a, b, "RELATED_UNSAFE", routes=rt), res)
    apart, drops = followups.unrelated_pairs(turns)
    res.drops.update(drops)
    res.sources["unrelated_follow_ups"] += len(apart)
    for a, b in apart:
        _keep(followups.candidate(a, b, "UNRELATED", routes=rt), res)
    vectors = {text: part.vectors[row] for part in parts if part.vectors is not None
               for row, text in enumerate(part.texts)}
    openings = [t for t in turns if t.use == "first"]
    for label in ("UNRELATED", "RELATED_UNSAFE"):
        found, drops = unrelated.unrelated_pairs(openings, vectors, rt, label)
        res.drops.update(drops)
        res.sources[label.lower()] += len(found)
        res.candidates.extend(found)
    return MinedPairs(shards=tuple(p.shard for p in parts), candidates=tuple(sorted(res.candidates, key=lambda c: c.key)),
                      drops=dict(sorted(res.drops.items())), n_prompts=res.n_prompts, n_pairs=sum(res.sources.values()),
                      sources=dict(sorted(res.sources.items())))


def _keep(c: Candidate | str, res: _Tally) -> None:
    if isinstance(c, str):
        res.drops[c] += 1
    else:
        res.candidates.append(c)
