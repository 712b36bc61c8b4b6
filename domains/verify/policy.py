"""policy_no_cache: the pair must never be served from a cache, whatever its 5-class label.

Payload: {"policy": one of POLICY_REASONS, "underlying_method": optional verification method,
"underlying_payload": its payload}. The verifier checks that the domain's own policy, handed in by
the caller of `verify`, gives the same reason for this candidate (so a row cannot claim a policy
its domain does not hold), and, when an underlying method is named, that the 5-class label itself
verifies under it.
"""
from __future__ import annotations

from domains.base import POLICY_REASONS, Candidate, Outcome, Policy
from domains.verify import register, run


@register("policy_no_cache", uses_policy=True)
def policy_no_cache(c: Candidate, policy: Policy) -> Outcome:
    p = c.verification_payload
    reason = p.get("policy")
    if reason not in POLICY_REASONS:
        return Outcome("deterministic", False, "unknown_policy", {"policy": reason, "allowed": list(POLICY_REASONS)})
    held = policy(c)
    if held != reason:
        return Outcome("deterministic", False, "policy_not_held_by_domain", {"claimed": reason, "domain_says": held})
    underlying = p.get("underlying_method")
    if not underlying:
        return Outcome("deterministic", True, "ok", {"policy": reason})
    inner = c.with_(verification_method=underlying, verification_payload=dict(p.get("underlying_payload", {})))
    out = run(underlying, inner, policy)
    ev = {"policy": reason, "underlying": underlying, "underlying_reason": out.reason}
    return Outcome(out.tier, out.passed, "ok" if out.passed else f"underlying_{out.reason}", ev)
