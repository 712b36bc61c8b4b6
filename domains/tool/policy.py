"""The caching policy of the tool domain, held as data in the catalog (see the package docstring).

A call to a mutating tool is policy "mutation"; a read of mutable state is "time_sensitive"; a
read fixed by construction (state fixed, or a closed_range that ended before `as_of`) is
cacheable. A pair takes the stronger policy of its two calls.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from domains.base import Candidate
from domains.tool.catalog import load
from domains.verify.tool_call import parse_call


def reads_mutable_state(name: str, args: Mapping[str, Any]) -> bool:
    """True when a read's result can change between two identical calls: state mutable, or a
    closed_range whose range end is not before as_of (an open or future range). A tool this
    domain does not define (e.g. BFCL's) is not claimed."""
    data = load()
    st = data.state.get(name)
    if st == "mutable":
        return True
    if st != "closed_range":
        return False
    try:
        end = dt.date.fromisoformat(str(args[data.range_end[name]]))
    except (KeyError, ValueError):
        return True  # no readable end: not provably closed, so not cacheable
    return end >= dt.date.fromisoformat(data.as_of)


def call_policy(name: str, args: Mapping[str, Any]) -> str | None:
    """The policy one canonical call forces: mutation (a write), time_sensitive (a read of
    mutable state) or None (a read fixed by construction)."""
    if load().mutating.get(name, False):
        return "mutation"
    return "time_sensitive" if reads_mutable_state(name, args) else None


def policy(c: Candidate) -> str | None:
    """mutation if either canonical call mutates, else time_sensitive if either reads mutable state."""
    held = set()
    for text in (c.expected_answer_a, c.expected_answer_b):
        try:
            held.add(call_policy(*parse_call(text)))
        except ValueError:
            continue
    if "mutation" in held:
        return "mutation"
    return "time_sensitive" if "time_sensitive" in held else None
