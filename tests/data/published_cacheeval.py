"""A stand-in for the published CacheEval interface package: its own Row and Verdict classes with
the harness's names and fields, but no relation to pipeline.harness. A cache written against it
must run under `cacheeval eval` with only its import line changed (here: not changed at all)."""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Row:
    id: str
    query_a: str
    query_b: str
    extra: dict = field(default_factory=dict)


@dataclass
class Verdict:
    is_hit: bool
    confidence: float | None = None
    decision_ms: float | None = None
    tier_used: str | None = None
    cost_usd: float = 0.0
    extra: dict = field(default_factory=dict)

