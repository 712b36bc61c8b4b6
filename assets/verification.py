"""verified_rows: each candidate through its verifier, then de-duplication (one partition per domain)."""

from collections import Counter

from dagster import AssetExecutionContext, MetadataValue, Output, asset

from assets.generation import DOMAIN_PARTITIONS
from assets.groups import VERIFICATION
from domains.verify import verify


@asset(partitions_def=DOMAIN_PARTITIONS, group_name=VERIFICATION)
def verified_rows(context: AssetExecutionContext, candidate_rows: dict) -> Output[dict]:
    """Candidates whose label their domain's deterministic verifier confirms; drops counted by reason."""
    kept, seen = [], set()
    drops = Counter({f"generation:{k}": v for k, v in candidate_rows["drops"].items()})
    tiers = Counter()
    for cand in candidate_rows["candidates"]:  # content-key order: the first of duplicates wins
        sig = cand.pair_signature()
        if sig in seen:
            drops[f"{cand.label}:duplicate_pair"] += 1
            continue
        outcome = verify(cand)
        if not outcome.passed:
            drops[f"{cand.label}:{outcome.reason}"] += 1
            continue
        seen.add(sig)
        tiers[outcome.tier] += 1
        kept.append((cand, outcome))
    per_label = Counter(c.label for c, _ in kept)
    return Output(
        {"rows": kept, "drops": dict(drops)},
        metadata={"verified": len(kept), "per_label": MetadataValue.json(dict(sorted(per_label.items()))),
                  "tiers": MetadataValue.json(dict(sorted(tiers.items()))),
                  "drops": MetadataValue.json(dict(sorted(drops.items())))},
    )
