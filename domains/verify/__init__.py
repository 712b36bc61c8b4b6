"""Verifier registry: `verification_method` name → function(Candidate) → Outcome.

A verifier confirms a candidate's label deterministically: for a HIT label the two expected
answers must be equivalent under the method, for a MISS label they must differ. Each verifier
module registers itself on import; `get` imports the module of a method on first use.

A verifier never looks a domain up. One that needs the domain's caching policy (policy_no_cache
checks that the domain holds the policy a row claims) registers with `uses_policy=True` and is
handed the policy by `verify(candidate, policy)`, whose caller holds the domain's spec. (For
now `verify` without a policy still looks the domain's up in the registry: a transitional
default for the callers not yet passing it, see `verify`.)
"""
from __future__ import annotations

import importlib
from typing import Callable

from domains import get_domain
from domains.base import Candidate, Outcome, Policy
from pipeline.core.registry import Registry

Verifier = Callable[..., Outcome]   # (candidate) -> Outcome, or (candidate, policy) -> Outcome
VERIFIERS: Registry[Verifier] = Registry("verifier")
_USES_POLICY: set[str] = set()

# verification_method → module that registers it
_MODULES = {
    "alias_exact_match": "domains.verify.alias",
    "translated_exact_match": "domains.verify.alias",
    "regex": "domains.verify.alias",
    "sympy_equivalence": "domains.verify.sympy_equiv",
    "ast_sandbox": "domains.verify.code",
    "json_schema_call": "domains.verify.tool_call",
    "rubric": "domains.verify.rubric",
    "context_rubric": "domains.verify.rubric",
    "policy_no_cache": "domains.verify.policy",
}


def register(name: str, *, uses_policy: bool = False) -> Callable[[Verifier], Verifier]:
    """Register a verifier; `uses_policy` ones take (candidate, policy)."""
    def deco(fn: Verifier) -> Verifier:
        if uses_policy:
            _USES_POLICY.add(name)
        return VERIFIERS.register(name, fn)
    return deco


def get(name: str) -> Verifier:
    """The verifier registered for `name`, importing its module on first use."""
    if name not in VERIFIERS and name in _MODULES:
        importlib.import_module(_MODULES[name])
    return VERIFIERS[name]


def run(name: str, candidate: Candidate, policy: Policy) -> Outcome:
    """The verifier `name` on `candidate` (handed `policy` if it uses one); exceptions propagate."""
    fn = get(name)
    return fn(candidate, policy) if name in _USES_POLICY else fn(candidate)


def verify(candidate: Candidate, policy: Policy | None = None) -> Outcome:
    """Run the candidate's own verification method. `policy` is the candidate's domain policy
    (`DomainSpec.policy`), used by policy_no_cache. An exception inside a verifier is a failed
    verification with its message as evidence, never a crash of the build."""
    name = candidate.verification_method
    fn = get(name)
    try:
        if name not in _USES_POLICY:
            return fn(candidate)
        if policy is None:
            # Transitional (issue #11): a caller that does not pass the policy yet gets the
            # registered domain's. Remove once every caller passes it (domains/check.py,
            # domains/corpora/mining.py, assets/verification.py, tests).
            policy = get_domain(candidate.domain).policy
        return fn(candidate, policy)
    except Exception as exc:  # noqa: BLE001 - recorded as a drop reason, not swallowed
        return Outcome("deterministic", False, f"verifier_error:{type(exc).__name__}", {"message": str(exc)[:300]})
