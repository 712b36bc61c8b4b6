"""A pair cache (`Pair -> Verdict`, e.g. the verified cache) run as a store/lookup cache, so that the
stream protocol can serve a workload through it, as an application would deploy it: every stored
request is an entry; a lookup retrieves the TOP_K entries nearest by MiniLM cosine of the query
(the verified cache's own recall gate embedder), asks the pair cache about each (the stored request
as A, the new one as B, with the stored response's status) and serves the response of the hit with
the highest confidence (the nearest on a tie), or nothing.

It sees requests only, like the cache it wraps; `model_snapshot` and `settings` are the wrapped
cache's, plus the adapter's (TOP_K), so the evaluation-result cache keys on both.
"""
from __future__ import annotations

from typing import Any

from pipeline.harness.interface import Pair
from pipeline.harness.stateful import Request, marker
from pipeline.references import verified  # noqa: F401 - its code keys the wrapped cache's results

TOP_K = 5


class PairStore:
    """Store/lookup over a pair cache with a `vectors.get(0)` text -> unit vector (the verified cache)."""

    tier = "programmatic"

    def __init__(self, pair_cache: Any, top_k: int = TOP_K) -> None:
        self.pair_cache = pair_cache
        self.top_k = top_k
        self.vec = pair_cache.vectors.get(0)
        self.reset()

    @property
    def model_snapshot(self) -> Any:
        return self.pair_cache.model_snapshot

    @property
    def settings(self) -> dict:
        return {"adapter": "pair_store", "top_k": self.top_k, "pair_cache": self.pair_cache.settings}

    def reset(self) -> None:
        self.entries: list[tuple[Request, str, Any]] = []
        self.last_confidence: float | None = None

    def prefetch_pairs(self, pairs: Any) -> None:
        """The wrapped cache's prefetch (the workload's own pairs, embedded in one pass over every
        core before the stream starts), when it has one."""
        if hasattr(self.pair_cache, "prefetch_pairs"):
            self.pair_cache.prefetch_pairs(pairs)

    def store(self, request: Request, response: str) -> None:
        self.entries.append((request, response, self.vec(request.query)))

    def evict(self, request: Request) -> None:
        m = marker(request)
        self.entries = [e for e in self.entries if marker(e[0]) != m]

    def lookup(self, request: Request) -> str | None:
        self.last_confidence = None
        if not self.entries:
            return None
        import numpy as np

        v = np.asarray(self.vec(request.query), dtype=np.float64)
        sims = [float(np.einsum("i,i->", np.asarray(e[2], dtype=np.float64), v)) for e in self.entries]
        nearest = sorted(range(len(sims)), key=lambda i: (-round(sims[i], 6), i))[:self.top_k]
        asked = [Pair.from_requests("pair-store", self.entries[i][0], request, getattr(self.entries[i][1], "status", None))
                 for i in nearest]
        if hasattr(self.pair_cache, "prepare_pairs"):
            self.pair_cache.prepare_pairs(asked)   # their texts in one pass, not one embedding call each
        best, best_conf = None, None     # the candidate with the highest confidence, served if a hit
        for i, pair in zip(nearest, asked):
            response = self.entries[i][1]
            verdict = self.pair_cache(pair)
            conf = verdict.confidence if verdict.confidence is not None else float(verdict.is_hit)
            if best_conf is None or conf > best_conf:
                best_conf, best = conf, (response if verdict.is_hit else None)
        self.last_confidence = best_conf
        return best
