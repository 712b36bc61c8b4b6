"""The values the assets hand each other: one small frozen record per in-memory artefact.

The IO manager pickles them between steps (and between processes under the multiprocess
executor), so they hold only picklable data: candidates, outcomes, strings, numbers, plain dicts.
Sequences are tuples so a value cannot be changed by the step that reads it. Artefacts that are
JSON documents or files (`source_manifest`, `cachebench`, the written-file maps, `build_manifest`)
stay plain dicts and lists; `row_difficulty` is `pipeline.stages.difficulty.DifficultyResult`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domains.base import Candidate, Outcome
from pipeline.stages.selection import Selection, SelectedRow


@dataclass(frozen=True)
class MinedShard:
    """One real-traffic shard prepared for pairing (domains.corpora.mining.PreparedShard: its usable
    turns, drops, and its single-turn prompts' MinHash signatures and MiniLM vectors)."""

    shard: str
    prepared: Any


@dataclass(frozen=True)
class MinedPairs:
    """mined_pairs: the shards in order, their candidates in content-key order, drops summed."""

    shards: tuple[str, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    drops: dict[str, int] = field(default_factory=dict)

    def for_generators(self) -> dict:
        """What GenContext.mined holds: domains/corpora/mining.py reads it as {"candidates", "drops"}."""
        return {"candidates": list(self.candidates), "drops": dict(self.drops)}


@dataclass(frozen=True)
class DomainCandidates:
    """candidate_rows of one domain: candidates in content-key order, generation drops by reason."""

    domain: str
    candidates: tuple[Candidate, ...]
    drops: dict[str, int]


@dataclass(frozen=True)
class VerifiedRows:
    """verified_rows of one domain: each kept candidate with its verifier's outcome; drops by reason
    (`generation:<reason>` for the generators', `<label>:<reason>` for the verifiers')."""

    domain: str
    rows: tuple[tuple[Candidate, Outcome], ...]
    drops: dict[str, int]


@dataclass(frozen=True)
class SelectedRows:
    """selected_rows: the rows chosen per cell (numbered and split when no cell is short), what each
    cell misses, and every domain's drops (which explain a shortfall)."""

    profile: str
    rows: tuple[SelectedRow, ...]
    shortfalls: dict[tuple[str, str], int]           # (domain, label) -> rows missing
    surplus: dict[tuple[str, str], int]              # (domain, label) -> candidates left unused
    methods: dict[tuple[str, str, str], int]         # (domain, label, method) -> rows
    drops: dict[str, dict[str, int]]                 # domain -> reason -> count

    @classmethod
    def of(cls, profile: str, sel: Selection, drops: dict[str, dict[str, int]]) -> SelectedRows:
        return cls(profile, tuple(sel.rows), dict(sel.shortfalls), dict(sel.surplus), dict(sel.methods), drops)


@dataclass(frozen=True)
class Similarities:
    """row_similarities: cosine(query_a, query_b) per embedder in row order, each embedder's snapshot
    (upstream name and weights sha256), and which embedders vote and which is held out."""

    sims: dict[str, list[float]]
    snapshots: dict[str, dict[str, str]]
    members: tuple[str, ...]
    held_out: str
