"""Exact match on alias sets (qa_factual), its per-language form (multilingual) and regex.

Payloads:
- alias_exact_match: {"aliases_a": [...], "aliases_b": [...]} (each answer's accepted forms).
- translated_exact_match: the same plus {"lang_a": "de", "lang_b": "fr"}. A HIT needs a shared
  answer form AND the same language (a cached answer in the wrong language is a wrong answer). A
  MISS needs the two alias sets to share no normalised form, whatever the languages: when both
  sides accept one form ('Madrid', '12'), a cached answer in that form is right for both
  requests, so a language difference alone does not make the answers differ.
- regex: {"pattern_a": "...", "pattern_b": "..."}: a HIT needs each answer to match the other's
  pattern; a MISS needs at least one side not to.
"""
from __future__ import annotations

import re

from domains.base import HIT_LABELS, Candidate, Outcome, normalize_text
from domains.verify import register


def _forms(answer: str, aliases: list[str]) -> set[str]:
    return {normalize_text(a) for a in [answer, *aliases] if a.strip()}


def _alias_match(c: Candidate) -> tuple[bool, dict]:
    p = c.verification_payload
    a = _forms(c.expected_answer_a, list(p.get("aliases_a", [])))
    b = _forms(c.expected_answer_b, list(p.get("aliases_b", [])))
    shared = sorted(a & b)
    return bool(shared), {"shared_forms": shared[:5], "n_forms_a": len(a), "n_forms_b": len(b)}


def _decide(c: Candidate, same: bool, evidence: dict, tier: str = "deterministic") -> Outcome:
    want_same = c.label in HIT_LABELS
    if same == want_same:
        return Outcome(tier, True, "ok", evidence)
    reason = "answers_differ_for_hit" if want_same else "answers_equal_for_miss"
    return Outcome(tier, False, reason, evidence)


@register("alias_exact_match")
def alias_exact_match(c: Candidate) -> Outcome:
    same, ev = _alias_match(c)
    return _decide(c, same, ev)


@register("translated_exact_match")
def translated_exact_match(c: Candidate) -> Outcome:
    p = c.verification_payload
    if "lang_a" not in p or "lang_b" not in p:
        return Outcome("deterministic", False, "payload_missing_lang", {})
    same_answer, ev = _alias_match(c)
    ev = {**ev, "lang_a": p["lang_a"], "lang_b": p["lang_b"]}
    if c.label in HIT_LABELS:
        return _decide(c, same_answer and p["lang_a"] == p["lang_b"], ev)
    # A MISS is judged on the answers alone: a shared form (a number, a name spelt alike) is an
    # answer that serves both sides, so the pair is not a MISS even across languages.
    return _decide(c, same_answer, ev)


@register("regex")
def regex(c: Candidate) -> Outcome:
    p = c.verification_payload
    try:
        pa = re.compile(p["pattern_a"], re.IGNORECASE)
        pb = re.compile(p["pattern_b"], re.IGNORECASE)
    except (KeyError, re.error) as exc:
        return Outcome("programmatic", False, "bad_pattern", {"message": str(exc)})
    same = bool(pa.fullmatch(c.expected_answer_b.strip())) and bool(pb.fullmatch(c.expected_answer_a.strip()))
    return _decide(c, same, {"pattern_a": p["pattern_a"], "pattern_b": p["pattern_b"]}, tier="programmatic")
