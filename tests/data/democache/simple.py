"""Test caches in the shapes `cacheeval eval` accepts: a function returning a dict, a callable
class, a class with decide(), and classes it must refuse."""


def cache(row):
    same = row.query_a == row.query_b and row.system_prompt_a == row.system_prompt_b
    return {"is_hit": same, "tier_used": "exact", "decision_ms": 0.5}


class CallableCache:
    def __call__(self, row):
        return {"is_hit": row.query_a == row.query_b, "tier_used": "exact"}


class DecideCache:
    def decide(self, pair):
        return pair.query_a.startswith("Solve") or "%" in pair.query_a   # the math requests


class NeedsArgs:
    def __init__(self, threshold):
        self.threshold = threshold


class NotACache:
    pass
