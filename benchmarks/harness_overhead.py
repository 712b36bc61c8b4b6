"""Decisions per second of the scoring harness itself, with trivial caches on 100,000 synthetic rows.

The time covers `evaluate()` end to end: the per-row loop (call, wall-clock timing, verdict
checks) and building the report (confusion matrix, five breakdowns, percentiles, sweep).
Target: >= 200,000 decisions/s for a trivial cache. Best of a few repeats, to keep noise from other
processes on a shared machine out of the number.

    .venv/bin/python benchmarks/harness_overhead.py [--rows 100000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.harness import Row, Verdict, evaluate  # noqa: E402

TARGET = 200_000
DOMAINS = ("qa_factual", "qa_open", "math", "code", "conversational", "tool", "creative",
           "personalized", "multi_turn", "multilingual")
LABELS = ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")


def synthetic_rows(n: int) -> list[Row]:
    """n rows spread over every domain, label, difficulty and 5 subcategories per domain."""
    rng = random.Random(20240601)
    rows = []
    for i in range(n):
        domain = DOMAINS[i % len(DOMAINS)]
        label = LABELS[rng.randrange(len(LABELS))]
        policy = domain == "creative"
        binary = "HIT" if label in ("EQUIV", "PARA_SAFE") and not policy else "MISS"
        q = f"question {rng.randrange(1000)}"
        rows.append(Row(
            id=f"cb-{domain}-{i:06d}", domain=domain, subcategory=f"sub{i % 5}", label=label,
            binary_label=binary, difficulty=("easy", "medium", "hard")[i % 3], query_a=q,
            query_b=q if rng.random() < 0.3 else q + "?", context_a=None, context_b=None,
            system_prompt_a=None, system_prompt_b=None, tools_a=None, tools_b=None,
            expected_answer_a="a", expected_answer_b="b", rationale="synthetic",
            verification_method="policy_no_cache" if policy else "rubric", verification_payload={},
            construction_method="curated", source="synthetic", real_world_grounding="synthetic",
        ))
    return rows


_HIT = Verdict(is_hit=True, tier_used="exact")
_MISS = Verdict(is_hit=False, tier_used="exact")


def bool_cache(row: Row) -> bool:
    return row.query_a == row.query_b


def verdict_cache(row: Row) -> Verdict:
    return _HIT if row.query_a == row.query_b else _MISS


def confidence_cache(row: Row) -> Verdict:
    same = row.query_a == row.query_b
    return Verdict(is_hit=same, confidence=0.9 if same else 0.1 + (len(row.id) % 7) / 10,
                   decision_ms=0.01, tier_used="programmatic", cost_usd=0.00001)


def measure(cache, rows: list[Row], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        evaluate(cache, rows, cache_name=cache.__name__)
        best = min(best, time.perf_counter() - t0)
    return len(rows) / best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = synthetic_rows(args.rows)
    print(f"harness overhead on {len(rows):,} synthetic rows (best of {args.repeats}; target >= {TARGET:,}/s)")
    results = {}
    for cache in (bool_cache, verdict_cache, confidence_cache):
        results[cache.__name__] = rate = measure(cache, rows, args.repeats)
        print(f"  {cache.__name__:<18} {rate:>12,.0f} decisions/s")
    ok = results["verdict_cache"] >= TARGET
    print(f"{'ok' if ok else 'BELOW TARGET'}: trivial Verdict cache at {results['verdict_cache']:,.0f} decisions/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
