"""Reference caches, registered by name: the floor and ceiling every real cache is read against.
Like any cache they see a Pair (the two requests) only.

- always_miss: never hits (FHR 0, recall 0: the FHR floor);
- always_hit: always hits (recall 1, the worst FHR);
- exact_match: hits only when query, context, system prompt and tools are verbatim equal.

Standard library only, like the harness.
"""
from __future__ import annotations

from typing import Any, Callable

from pipeline.harness import Pair, Verdict
from pipeline.core.registry import Registry

Cache = Callable[[Pair], Any]
BASELINES: Registry[Cache] = Registry("baseline")


def always_miss(pair: Pair) -> Verdict:
    """Never serve from the cache."""
    return Verdict(is_hit=False, tier_used="exact")


def always_hit(pair: Pair) -> Verdict:
    """Always serve the stored response."""
    return Verdict(is_hit=True, tier_used="exact")


def exact_match(pair: Pair) -> Verdict:
    """HIT only when both requests are verbatim the same: query text, earlier turns, system prompt
    and tool schemas (JSON values compared structurally, strings byte for byte)."""
    same = (pair.query_a == pair.query_b and pair.context_a == pair.context_b
            and pair.system_prompt_a == pair.system_prompt_b and pair.tools_a == pair.tools_b)
    return Verdict(is_hit=same, tier_used="exact")


for _fn in (always_miss, always_hit, exact_match):
    BASELINES.register(_fn.__name__, _fn)


def get_baseline(name: str) -> Cache:
    """The baseline registered under `name`; an unknown name lists the available ones."""
    return BASELINES[name]
