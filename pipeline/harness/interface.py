"""The published interface between the harness and a cache: a benchmark Row in, a Verdict out.

A cache is any callable `row -> verdict`. The verdict may be a `Verdict`, any object with the same
attribute names (a cache written against the published CacheEval interface runs with only its
import line changed), a dict with those keys, or a plain bool.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

# Enters every report and the build manifest; bump it when a score could change for the same input.
HARNESS_VERSION = "1"

ROW_FIELDS = (
    "id", "domain", "subcategory", "label", "binary_label", "difficulty", "query_a", "query_b",
    "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a", "tools_b",
    "expected_answer_a", "expected_answer_b", "rationale", "verification_method",
    "verification_payload", "construction_method", "source", "real_world_grounding",
)
_ROW_SET = frozenset(ROW_FIELDS)


@dataclass(frozen=True)
class Row:
    """One benchmark pair: the 22 fields of BENCHMARK.md, plus provenance fields in `extra`.

    JSON values are kept as loaded (lists, dicts), so a Row compares by value but is not hashable
    when it holds a context or tools list."""

    id: str
    domain: str
    subcategory: str
    label: str
    binary_label: str
    difficulty: str
    query_a: str
    query_b: str
    context_a: Any
    context_b: Any
    system_prompt_a: str | None
    system_prompt_b: str | None
    tools_a: Any
    tools_b: Any
    expected_answer_a: str
    expected_answer_b: str
    rationale: str
    verification_method: str
    verification_payload: Any
    construction_method: str
    source: str
    real_world_grounding: str
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Row":
        """Build a Row from a mapping holding at least the 22 row fields (KeyError otherwise)."""
        extra = {k: v for k, v in data.items() if k not in _ROW_SET}
        return cls(*[data[k] for k in ROW_FIELDS], extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict: the 22 fields in ROW_FIELDS order, then the extra fields."""
        out = {k: getattr(self, k) for k in ROW_FIELDS}
        out.update(self.extra)
        return out

    def __getitem__(self, key: str) -> Any:
        # Dict-style access for caches written against rows as plain dicts.
        if key in _ROW_SET:
            return getattr(self, key)
        return self.extra[key]


@dataclass
class Verdict:
    """A cache's decision on one row. `confidence` is the cache's score for HIT (optional),
    `decision_ms` its own timing (the harness measures wall clock when absent or not positive),
    `tier_used` names what decided: exact, programmatic, rubric, judge, ... ."""

    is_hit: bool
    confidence: float | None = None
    decision_ms: float | None = None
    tier_used: str | None = None
    cost_usd: float = 0.0
    extra: dict = field(default_factory=dict)


class VerdictError(TypeError):
    """A cache returned something that is not a verdict."""
