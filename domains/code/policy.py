"""The code domain's caching policy: none applies."""
from __future__ import annotations

from domains.base import Candidate


def policy(candidate: Candidate) -> str | None:
    """Code answers are neither personal, mutating, creative nor time-sensitive: no policy."""
    return None
