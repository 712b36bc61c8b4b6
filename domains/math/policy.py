"""The math domain's caching policy: none applies."""
from __future__ import annotations

from domains.base import Candidate


def policy(c: Candidate) -> str | None:
    """Math answers are deterministic and user-independent, never creative, mutating or
    time-sensitive: no policy forces a MISS."""
    return None
