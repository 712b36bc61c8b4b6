"""Rubric verifiers: three atomic criteria describe what an answer must contain.

Payloads:
- rubric: {"criteria_a": [3 strings], "criteria_b": [3 strings]}: a HIT needs the two rubrics to
  be the same set of criteria (after normalisation); a MISS needs at least one criterion to differ.
- context_rubric (multi_turn): {"context_facts_a": [...], "context_facts_b": [...]}, the facts from
  earlier turns that the answer depends on. A HIT needs equal expected answers and equal fact
  sets; a MISS needs the expected answers to differ.
"""
from __future__ import annotations

from domains.base import HIT_LABELS, Candidate, Outcome, normalize_text
from domains.verify import register


def _criteria(values: object) -> frozenset[str]:
    if not isinstance(values, (list, tuple)):
        return frozenset()
    return frozenset(normalize_text(str(v)) for v in values if str(v).strip())


@register("rubric")
def rubric(c: Candidate) -> Outcome:
    a = _criteria(c.verification_payload.get("criteria_a"))
    b = _criteria(c.verification_payload.get("criteria_b"))
    if len(a) != 3 or len(b) != 3:
        return Outcome("rubric", False, "rubric_needs_3_criteria", {"n_a": len(a), "n_b": len(b)})
    ev = {"shared": len(a & b), "differing": sorted((a ^ b))[:6]}
    want_same = c.label in HIT_LABELS
    if (a == b) == want_same:
        return Outcome("rubric", True, "ok", ev)
    return Outcome("rubric", False, "rubric_differs_for_hit" if want_same else "rubric_equal_for_miss", ev)


@register("context_rubric")
def context_rubric(c: Candidate) -> Outcome:
    fa = _criteria(c.verification_payload.get("context_facts_a"))
    fb = _criteria(c.verification_payload.get("context_facts_b"))
    same_answer = normalize_text(c.expected_answer_a) == normalize_text(c.expected_answer_b)
    ev = {"answers_equal": same_answer, "facts_equal": fa == fb}
    if c.label in HIT_LABELS:
        ok = same_answer and fa == fb
        return Outcome("rubric", ok, "ok" if ok else "context_or_answer_differs_for_hit", ev)
    ok = not same_answer
    return Outcome("rubric", ok, "ok" if ok else "answers_equal_for_miss", ev)
