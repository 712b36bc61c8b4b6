"""Doubles for the harness tests (tests/harness): hand-made rows, hand-written store/lookup caches,
and GPTCache 0.1.44's hit rule computed by hand. A plain module, not a test module: tests import
it, and `cacheeval eval --cache-module tests/harness_doubles.py --cache-class ...` loads it by path."""
from __future__ import annotations

from pipeline.harness import Row
from pipeline.harness.stateful import Request


def pair(i: int, gold: str, query_a: str, query_b: str, **over) -> Row:
    """A valid row with these two queries; `gold` HIT or MISS (label EQUIV or ADVERSARIAL)."""
    fields = dict(
        id=f"cb-math-{i:04d}", domain="math", subcategory="s", label="EQUIV" if gold == "HIT" else "ADVERSARIAL",
        binary_label=gold, difficulty="easy", query_a=query_a, query_b=query_b, context_a=None,
        context_b=None, system_prompt_a=None, system_prompt_b=None, tools_a=None, tools_b=None,
        expected_answer_a="a", expected_answer_b="b", rationale="r", verification_method="rubric",
        verification_payload={}, construction_method="curated", source="curated", real_world_grounding="g",
    )
    fields.update(over)
    return Row(**fields)


# ---- store/lookup caches

class ExactStore:
    """Serves a stored response only for a verbatim equal request (query, system prompt, turns, tools)."""

    tier = "exact"

    def __init__(self) -> None:
        self.entries: list[tuple[Request, str]] = []
        self.resets = 0
        self.last_confidence: float | None = None

    def reset(self) -> None:
        self.entries.clear()
        self.resets += 1

    def store(self, request: Request, response: str) -> None:
        self.entries.append((request, response))

    def lookup(self, request: Request) -> str | None:
        for stored, response in self.entries:
            if stored == request:
                self.last_confidence = 1.0
                return response
        self.last_confidence = 0.0
        return None


class FirstWordStore:
    """A deliberately careless cache: keys on the query's first word only, first entry wins. Under
    the shared protocol it serves other rows' responses (wrong-entry hits)."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def reset(self) -> None:
        self.entries = {}

    def store(self, request: Request, response: str) -> None:
        self.entries.setdefault(request.query.split()[0].lower(), response)

    def lookup(self, request: Request) -> str | None:
        return self.entries.get(request.query.split()[0].lower())


# ---- GPTCache's hit rule, by hand (the adapter never computes it: GPTCache does)
# GPTCache stores L2-normalised vectors in a faiss `IDMap,Flat` L2 index, so the search distance is
# the squared L2 distance 2 - 2 cos. SearchDistanceEvaluation() (max_distance 4, positive False)
# turns it into rank = 4 - clamp(distance, 0, 4), and the adapter hits when
# rank >= (4 - 0) x similarity_threshold.

MAX_DISTANCE = 4.0


def gptcache_rank(cosine: float) -> float:
    """GPTCache's rank of a stored entry at this cosine."""
    distance = min(max(2.0 - 2.0 * cosine, 0.0), MAX_DISTANCE)
    return MAX_DISTANCE - distance


def gptcache_hits(cosine: float, threshold: float) -> bool:
    """Whether GPTCache at Config(similarity_threshold=threshold) serves the entry."""
    return gptcache_rank(cosine) >= MAX_DISTANCE * threshold


def gptcache_confidence(cosine: float) -> float:
    """The rank over its range: what the adapter reports as confidence."""
    return gptcache_rank(cosine) / MAX_DISTANCE
