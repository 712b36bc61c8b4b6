"""Reference caches, registered by name: the floor and ceiling every real cache is read against.

- always_miss: never hits (FHR 0, recall 0: the FHR floor);
- always_hit: always hits (recall 1, the worst FHR);
- exact_match: hits only when query, context, system prompt and tools are verbatim equal.

Standard library only, like the harness.
"""
from __future__ import annotations

from typing import Any, Callable

from pipeline.harness import Row, Verdict
from pipeline.core.registry import Registry

Cache = Callable[[Row], Any]
BASELINES: Registry[Cache] = Registry("baseline")


def always_miss(row: Row) -> Verdict:
    """Never serve from the cache."""
    return Verdict(is_hit=False, tier_used="exact")


def always_hit(row: Row) -> Verdict:
    """Always serve the stored response."""
    return Verdict(is_hit=True, tier_used="exact")


def exact_match(row: Row) -> Verdict:
    """HIT only when both requests are verbatim the same: query text, earlier turns, system prompt
    and tool schemas (JSON values compared structurally, strings byte for byte)."""
    same = (row.query_a == row.query_b and row.context_a == row.context_b
            and row.system_prompt_a == row.system_prompt_b and row.tools_a == row.tools_b)
    return Verdict(is_hit=same, tier_used="exact")


for _fn in (always_miss, always_hit, exact_match):
    BASELINES.register(_fn.__name__, _fn)


def get_baseline(name: str) -> Cache:
    """The baseline registered under `name`; an unknown name lists the available ones."""
    return BASELINES[name]
