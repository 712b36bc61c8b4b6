"""Verifier registry: `verification_method` name → function(Candidate) → Outcome.

A verifier confirms a candidate's label deterministically: for a HIT label the two expected
answers must be equivalent under the method, for a MISS label they must differ. Each verifier
module registers itself on import; `load_all()` imports every module listed here.
"""
from __future__ import annotations

import importlib
from typing import Callable

from domains.base import Candidate, Outcome
from pipeline.core.registry import Registry

Verifier = Callable[[Candidate], Outcome]
VERIFIERS: Registry[Verifier] = Registry("verifier")

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


def register(name: str) -> Callable[[Verifier], Verifier]:
    def deco(fn: Verifier) -> Verifier:
        return VERIFIERS.register(name, fn)
    return deco


def get(name: str) -> Verifier:
    if name not in VERIFIERS and name in _MODULES:
        importlib.import_module(_MODULES[name])
    return VERIFIERS[name]


def verify(candidate: Candidate) -> Outcome:
    """Run the candidate's own verification method. An exception inside a verifier is a failed
    verification with its message as evidence, never a crash of the build."""
    fn = get(candidate.verification_method)
    try:
        return fn(candidate)
    except Exception as exc:  # noqa: BLE001 - recorded as a drop reason, not swallowed
        return Outcome("deterministic", False, f"verifier_error:{type(exc).__name__}", {"message": str(exc)[:300]})
