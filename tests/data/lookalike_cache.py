"""A cache written against the published interface (its Verdict, not pipeline.harness.Verdict):
token-overlap similarity of the two queries, HIT at Jaccard >= 0.5."""
from published_cacheeval import Verdict


class TokenOverlapCache:
    threshold = 0.5

    def decide(self, row):
        a, b = set(row.query_a.lower().split()), set(row.query_b.lower().split())
        score = len(a & b) / len(a | b)
        return Verdict(is_hit=score >= self.threshold, confidence=score, decision_ms=0.25,
                       tier_used="programmatic", cost_usd=0.0001)


def cache(row):
    return TokenOverlapCache().decide(row)
