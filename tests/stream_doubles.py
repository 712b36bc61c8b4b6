"""Doubles for the stream protocol's tests: store/lookup caches that evict, take feedback or declare an
error bound, and a synthetic workload where similarity predicts correctness (for the vCache-style
reference). A plain module, not a test module: `cacheeval eval --cache-module tests/stream_doubles.py
--cache-class ...` loads it by path."""
from __future__ import annotations

import math
import random

from harness_doubles import pair
from pipeline.harness.stateful import Request


class QueryStore:
    """Serves the response stored under the same query text (system prompt and turns ignored)."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}
        self.calls: list[tuple] = []

    def reset(self) -> None:
        self.entries = {}
        self.calls.append(("reset",))

    def store(self, request: Request, response: str) -> None:
        self.entries[request.query] = response
        self.calls.append(("store", request.query))

    def lookup(self, request: Request) -> str | None:
        self.calls.append(("lookup", request.query))
        return self.entries.get(request.query)


class EvictingStore(QueryStore):
    """QueryStore with evict(request)."""

    def __init__(self) -> None:
        super().__init__()
        self.evicted: list[str] = []

    def evict(self, request: Request) -> None:
        self.evicted.append(request.query)
        self.entries.pop(request.query, None)


class FirstWordFeedback:
    """Serves the first entry stored under the query's first word, but only after the harness said
    (through feedback) that an entry was right once; before that it explores, naming the entry it
    declines in `last_candidate`. Records every feedback call."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}
        self.feedback_calls: list[tuple[str, str, bool]] = []
        self.trusted = False
        self.last_candidate: str | None = None

    def reset(self) -> None:
        self.entries, self.trusted, self.last_candidate = {}, False, None

    def store(self, request: Request, response: str) -> None:
        self.entries.setdefault(request.query.split()[0].lower(), response)

    def lookup(self, request: Request) -> str | None:
        self.last_candidate = None
        found = self.entries.get(request.query.split()[0].lower())
        if found is not None and not self.trusted:
            self.last_candidate = found
            return None
        return found

    def feedback(self, request: Request, response: str, correct: bool) -> None:
        self.feedback_calls.append((request.query, response, correct))
        self.trusted = self.trusted or correct


class CarelessBounded(QueryStore):
    """Declares a 1% error bound and serves by the query's first word: it cannot keep the bound."""

    error_bound = 0.01

    def store(self, request: Request, response: str) -> None:
        self.entries.setdefault(request.query.split()[0].lower(), response)

    def lookup(self, request: Request) -> str | None:
        return self.entries.get(request.query.split()[0].lower())


class CarefulBounded(QueryStore):
    """Declares a 20% error bound and serves only the identical query (right on these rows)."""

    error_bound = 0.2


def repeated_rows(n: int = 60) -> list:
    """n HIT rows asking the same few questions again and again (verbatim), so an exact cache hits."""
    questions = [f"What is {k} times {k}?" for k in range(5)]
    return [pair(i + 1, "HIT", questions[i % 5], questions[i % 5]) for i in range(n)]


def similarity_rows(topics: int = 12, per_topic: int = 40, dim: int = 48, threshold: float = 0.85,
                    seed: int = 7) -> tuple[list, dict]:
    """(rows, vectors): per topic one A request asked by every row of the topic, and B requests at a
    cosine c ~ U(0.55, 1) from it; a row is HIT exactly when c >= threshold, so similarity predicts
    correctness. `vectors` maps every query text to its unit vector (an encoder stand-in)."""
    import numpy as np

    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    vectors, rows = {}, []
    for k in range(topics):
        u = nrng.normal(size=dim)
        u /= np.linalg.norm(u)
        a = f"topic {k}"
        vectors[a] = u
        for j in range(per_topic):
            c = rng.uniform(0.55, 1.0)
            w = nrng.normal(size=dim)
            w -= (w @ u) * u
            w /= np.linalg.norm(w)
            b = f"topic {k} variant {j}"
            vectors[b] = c * u + math.sqrt(1.0 - c * c) * w
            rows.append(pair(len(rows) + 1, "HIT" if c >= threshold else "MISS", a, b))
    return rows, vectors


def encoder_of(vectors: dict):
    """An encoder stand-in: texts -> their vectors (float32, as the real embedders give)."""
    import numpy as np

    return lambda texts: np.stack([vectors[t] for t in texts]).astype(np.float32)
