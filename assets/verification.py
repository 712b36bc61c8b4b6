"""verified_rows: each candidate through its verifier, then de-duplication (one partition per domain).

A verifier that raises is a bug in the verifier, not a reason to drop the row: the asset fails,
naming the verifier and the candidate, instead of letting the build come up short of quota. A run may
cover several domains, and the Dagster UI holds its unpartitioned form (see assets/generation.py)."""

from collections import Counter

from dagster import AssetExecutionContext, AssetIn, MetadataValue

from assets.generation import CANDIDATES, DOMAIN_PARTITIONS
from assets.groups import VERIFICATION
from domains.base import Candidate
from pipeline.core.errors import BuildError
from pipeline.orchestration import cached_steps
from pipeline.orchestration.partitions import by_domain, for_each_domain, per_domain, per_domain_asset
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages.values import VerifiedRows

# The reason domains.verify.verify gives a candidate whose verifier raised ("verifier_error:<exception>").
VERIFIER_ERROR = "verifier_error:"
VERIFIED = per_domain(VerifiedRows, "verified_rows")


@per_domain_asset(DOMAIN_PARTITIONS, group_name=VERIFICATION, dagster_type=VERIFIED,
                  ins={"candidate_rows": AssetIn(dagster_type=CANDIDATES)})
def verified_rows(context: AssetExecutionContext, build: BuildSettings, candidate_rows):
    """Candidates whose label their domain's deterministic verifier confirms; drops counted by reason."""
    domains = by_domain(candidate_rows)

    def one(domain: str) -> tuple[VerifiedRows, dict]:
        cands = domains[domain]
        kept, ver_drops = cached_steps.verify(build.caches, list(cands.candidates))
        if any(VERIFIER_ERROR in reason for reason in ver_drops):
            raise BuildError(verifier_crashes(domain, cands.candidates))
        drops = Counter({f"generation:{k}": v for k, v in cands.drops.items()})
        drops.update(ver_drops)
        tiers = Counter(outcome.tier for _, outcome in kept)
        per_label = Counter(c.label for c, _ in kept)
        return VerifiedRows(domain, tuple(kept), dict(drops)), {
            "verified": len(kept), "per_label": MetadataValue.json(dict(sorted(per_label.items()))),
            "tiers": MetadataValue.json(dict(sorted(tiers.items()))),
            "drops": MetadataValue.json(dict(sorted(drops.items())))}

    return for_each_domain(context, one)


def verifier_crashes(domain: str, candidates: tuple[Candidate, ...]) -> str:
    """The error for candidates whose verifier raised: the first one named (verifier, candidate key,
    both queries, the exception) and how many there are. verify_candidates only counts drops, so the
    candidates are verified again to find them; this runs only once a crash was counted."""
    from domains.verify import verify

    crashed = []
    for c in candidates:
        out = verify(c)
        if out.reason.startswith(VERIFIER_ERROR):
            crashed.append((c, out))
    if not crashed:  # the verifier raised only the first time: still a bug, but no row to name
        return f"a verifier of {domain} raised during verification. A verifier that raises is a bug: fix it"
    c, out = crashed[0]
    more = f" (and {len(crashed) - 1} more {domain} candidates)" if len(crashed) > 1 else ""
    message = " ".join(str(out.evidence.get("message", "")).split())  # one line: the CLI shows the first
    return (f"verifier '{c.verification_method}' raised {out.reason[len(VERIFIER_ERROR):]} on candidate "
            f"{c.key} ({_short(c.query_a)!r} / {_short(c.query_b)!r}): {message}{more}. "
            f"A verifier that raises is a bug, not a drop: fix the verifier in domains/verify/")


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
