"""The values the assets hand each other: one small frozen record per in-memory artefact.

The IO manager pickles them between steps (and between processes under the multiprocess
executor), so they hold only picklable data: candidates, outcomes, strings, numbers, plain dicts.
Sequences are tuples so a value cannot be changed by the step that reads it. Artefacts that are
JSON documents or files (`source_manifest`, `cachebench`, the written-file maps, `build_manifest`)
stay plain dicts and lists; `row_difficulty` is `pipeline.stages.difficulty.DifficultyResult`;
mining's own types come from the layer that makes them (domains.corpora.mining: `PreparedShard` from
each slot step, `MinedPairs` from `mined_pairs`, which candidate_rows hands the generators as it is).
"""
from __future__ import annotations

from dataclasses import dataclass

from domains.base import Candidate, Outcome
from domains.corpora.mining import MinedPairs, PreparedShard  # noqa: F401 (mining's values, handed on as they are)
from pipeline.stages.selection import Selection, SelectedRow


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
