"""PairStore (pipeline/references/pair_store.py): a pair cache run as a store/lookup cache. A lookup
hands the pair cache every pair it is about to ask in one `prepare_pairs` call first (so the verified
cache embeds their changed spans in one pass, not one fixed-shape batch per text), and decides as
it would without it. Hand-written pair caches: no model."""
from __future__ import annotations

import numpy as np

from pipeline.harness.interface import Request, Verdict
from pipeline.harness.stateful import Response
from pipeline.references.pair_store import PairStore

WORDS = ["sort", "list", "python", "reverse", "string", "java", "parse", "date"]


def _vec(text: str):
    v = np.array([float(text.lower().count(w)) for w in WORDS]) + 0.01
    return v / np.linalg.norm(v)


class _Vectors:
    def get(self, i: int):
        return _vec


class _SharedWords:
    """HIT when the two queries share at least half their words; confidence = that share."""

    model_snapshot = "test-double"
    settings = {"name": "shared-words"}

    def __init__(self) -> None:
        self.vectors = _Vectors()
        self.asked: list = []

    def __call__(self, pair) -> Verdict:
        a, b = set(pair.query_a.lower().split()), set(pair.query_b.lower().split())
        share = len(a & b) / max(len(a | b), 1)
        self.asked.append((pair.query_a, pair.query_b))
        return Verdict(is_hit=share >= 0.5, confidence=round(share, 6))


class _Preparing(_SharedWords):
    def __init__(self) -> None:
        super().__init__()
        self.prepared: list[list[tuple[str, str]]] = []
        self.prefetched: list = []

    def prepare_pairs(self, pairs) -> None:
        self.prepared.append([(p.query_a, p.query_b) for p in pairs])

    def prefetch_pairs(self, pairs) -> None:
        self.prefetched.append(list(pairs))


STORED = ["sort a list in python", "reverse a string in python", "parse a date in java", "sort a list in java"]


def _run(cache) -> list:
    store = PairStore(cache, top_k=3)
    for q in STORED:
        store.store(Request(q), Response(f"answer to {q}"))
    return [(store.lookup(Request(q)), store.last_confidence)
            for q in ("sort my list in python", "reverse a python string", "what time is it")]


def test_a_lookup_prepares_every_pair_it_asks_in_one_call_and_decides_as_without_it():
    plain, preparing = _SharedWords(), _Preparing()
    assert _run(preparing) == _run(plain)
    assert preparing.asked == plain.asked
    assert len(preparing.prepared) == 3                        # one call per lookup
    asked = iter(preparing.asked)
    for batch in preparing.prepared:                           # exactly the pairs then asked, in order
        assert batch == [next(asked) for _ in batch] and len(batch) == 3


def test_prefetch_reaches_the_wrapped_cache_when_it_has_one():
    preparing = _Preparing()
    PairStore(preparing).prefetch_pairs(["p1", "p2"])
    assert preparing.prefetched == [["p1", "p2"]]
    PairStore(_SharedWords()).prefetch_pairs(["p1"])          # a pair cache without one: nothing to do
