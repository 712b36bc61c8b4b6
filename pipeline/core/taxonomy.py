"""The label taxonomy of BENCHMARK.md: the five labels, which are HITs, construction methods,
verification methods and tiers, and the policy reasons that force a MISS. Standard library only;
the harness, the stages and the domains all read it from here."""
from __future__ import annotations

LABELS = ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")
HIT_LABELS = frozenset({"EQUIV", "PARA_SAFE"})
CONSTRUCTION_METHODS = (
    "real_traffic_mined",
    "intent_bottom_up",
    "adversarial_perturbation",
    "lm_generated",
    "existing_benchmark",
    "curated",
)
VERIFICATION_METHODS = (
    "alias_exact_match",
    "regex",
    "sympy_equivalence",
    "ast_sandbox",
    "json_schema_call",
    "rubric",
    "context_rubric",
    "translated_exact_match",
    "policy_no_cache",
    "judge",
)
TIERS = ("deterministic", "programmatic", "rubric", "judge")
# Why a pair must never be served from a cache, whatever its 5-class label.
POLICY_REASONS = ("creative", "mutation", "time_sensitive", "cross_user")


def binary_label(label: str, verification_method: str) -> str:
    """HIT exactly for EQUIV and PARA_SAFE, unless the policy override forces MISS."""
    if verification_method == "policy_no_cache":
        return "MISS"
    return "HIT" if label in HIT_LABELS else "MISS"
