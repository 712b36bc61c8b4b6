"""verified_rows: each candidate through its verifier, then de-duplication (one partition per domain)."""

from collections import Counter

from dagster import AssetExecutionContext, MetadataValue, Output, asset

from assets.generation import DOMAIN_PARTITIONS
from assets.groups import VERIFICATION
from domains.check import verify_candidates


@asset(partitions_def=DOMAIN_PARTITIONS, group_name=VERIFICATION)
def verified_rows(context: AssetExecutionContext, candidate_rows: dict) -> Output[dict]:
    """Candidates whose label their domain's deterministic verifier confirms; drops counted by reason."""
    kept, ver_drops = verify_candidates(candidate_rows["candidates"])
    drops = Counter({f"generation:{k}": v for k, v in candidate_rows["drops"].items()})
    drops.update(ver_drops)
    tiers = Counter(outcome.tier for _, outcome in kept)
    per_label = Counter(c.label for c, _ in kept)
    return Output(
        {"rows": kept, "drops": dict(drops)},
        metadata={"verified": len(kept), "per_label": MetadataValue.json(dict(sorted(per_label.items()))),
                  "tiers": MetadataValue.json(dict(sorted(tiers.items()))),
                  "drops": MetadataValue.json(dict(sorted(drops.items())))},
    )
