"""UNRELATED pairs of real prompts: two users' opening messages that ask about different things.

A cache meets far more unrelated requests than near ones, and the benchmark's UNRELATED cells were
all curated or generated. Here both requests are real: the opening messages (`use == "first"`) of
two different conversations, each at most MAX_CHARS characters and MIN_TOKENS tokens, that route to
the same domain (the rule `single.prompt_rule` gives them; two explanatory questions go to the
domain that takes "explanatory", as `single.candidate` routes them). Deterministic pairing: each
routed group's prompts in a seeded order (stable hash of the normalised text), and each prompt
pairs with the next unused one that
- shares no content word with it (domains.text.content_stems: stems of the words left
  after stop words), so neither asks about the other's subject, and
- lies below MAX_COSINE in MiniLM cosine (the vectors mining already computed), so the two are not
  the same request in other words either (a paraphrase can share no word: "how do I get rid of
  hiccups" / "ways to stop hiccupping" would share "hiccup", and pairs that do not are further apart);
at most PER_DOMAIN pairs per domain, each prompt in one pair. Label UNRELATED (binary MISS by the
taxonomy: plainly different requests), verified by the rubric verifier with each side's criteria
derived from its own prompt (`single.criteria`), under the domain's policy where its rule has one
(creative, time-sensitive). Drops are counted by reason.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Sequence

import numpy as np

from domains.base import Candidate, Provenance, normalize_text, stable_hash
from domains.text import content_stems
from domains.corpora.mining.context import follow_up_rule
from domains.corpora.mining.routes import Routes
from domains.corpora.mining.rules import tokens
from domains.corpora.mining.single import METHOD, VERSION, criteria, explanatory, prompt_rule
from domains.corpora.mining.turns import Turn, scrub_record
from domains.text import time_sensitive
from sources.base import natural_key

RULE = "unrelated"
RELATED_RULE = "related_topic"
MAX_CHARS = 300
MIN_TOKENS = 4
MAX_COSINE = 0.25
# RELATED_UNSAFE: a shared content word, each side asking for at least RELATED_OWN content words the
# other does not name, and a cosine in RELATED_BAND (above it paraphrases gather, below it the shared
# word is often incidental).
RELATED_OWN = 2
RELATED_BAND = (0.45, 0.65)
PER_DOMAIN = 80
LOOKAHEAD = 25   # how many of the next prompts in the seeded order each prompt may try
GROUNDING = {
    "UNRELATED": "Two real users of a public chat service opened their conversations with requests about different "
                 "things; a cache must not serve one's answer to the other.",
    "RELATED_UNSAFE": "Two real users of a public chat service asked about the same subject, each wanting something "
                      "else; a cache that matches on the subject serves the wrong answer.",
}
GROUNDING_POLICY = {
    "creative": "Two real creative requests: each user expects a fresh piece, so neither is ever served from a cache.",
    "time_sensitive": "Two real requests for live information, each to be answered fresh.",
}


def _rule(text: str, rt: Routes) -> tuple[str, str | None]:
    rule, reason = prompt_rule(text, rt.own)
    if rule == "general" and rt.takes("explanatory") and explanatory(text) and not time_sensitive(text, text):
        rule = "explanatory"
    return rule, reason


def unrelated_pairs(turns: Sequence[Turn], vectors: dict[str, Any], rt: Routes,
                    label: str = "UNRELATED") -> tuple[list[Candidate], Counter]:
    """The UNRELATED (or, `label="RELATED_UNSAFE"`, same-topic) candidates of the opening messages
    `turns` (module docstring); `vectors`: the MiniLM vector of each normalised prompt text."""
    tag = "unrelated" if label == "UNRELATED" else "related"
    drops: Counter = Counter()
    groups: dict[tuple[str, str | None], dict[str, Turn]] = defaultdict(dict)
    for t in sorted(turns, key=lambda t: (natural_key(t.record_id), t.index)):
        if t.use != "first":
            continue
        norm = normalize_text(t.query)
        if len(t.query) > MAX_CHARS or len(tokens(t.query)) < MIN_TOKENS:
            drops[f"{tag}:prompt_too_long_or_short"] += 1
            continue
        if follow_up_rule(t.query) is not None or norm not in vectors:
            drops[f"{tag}:follow_up_or_not_embedded"] += 1
            continue
        groups[_rule(t.query, rt)].setdefault(norm, t)   # one turn per distinct prompt
    out: list[Candidate] = []
    per_domain: Counter = Counter()
    for (rule, reason), by_text in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        domain = rt.takes(rule)
        if domain is None:
            continue
        order = sorted(by_text, key=lambda n: stable_hash(f"mined-{tag}", n))
        stems = {n: content_stems(n) for n in order}
        used: set[str] = set()
        for i, na in enumerate(order):
            if per_domain[domain] >= PER_DOMAIN:
                drops[f"{tag}:cap_per_domain"] += 1
                break
            if na in used or not stems[na]:
                continue
            for nb in order[i + 1:i + 1 + LOOKAHEAD]:
                if nb in used or not stems[nb]:
                    continue
                a, b = by_text[na], by_text[nb]
                if a.conversation == b.conversation or a.corpus != b.corpus:
                    continue
                why = _why_not(stems[na], stems[nb], round(float(np.dot(vectors[na], vectors[nb])), 4), label)
                if why:
                    drops[f"{tag}:{why}"] += 1
                    continue
                used.update((na, nb))
                out.append(candidate(a, b, domain, reason, label))
                per_domain[domain] += 1
                break
    return out, drops


def _why_not(sa: frozenset, sb: frozenset, cosine: float, label: str) -> str | None:
    """Why two prompts' content stems and cosine (rounded, so a last-bit difference between machines
    cannot move a pair across a bound) do not make a `label` pair, or None."""
    if label == "UNRELATED":
        if sa & sb:
            return "shares_a_content_word"
        return "cosine_too_high" if cosine >= MAX_COSINE else None
    if not sa & sb:
        return "no_shared_content_word"
    if len(sa - sb) < RELATED_OWN or len(sb - sa) < RELATED_OWN:
        return "too_few_own_content_words"
    lo, hi = RELATED_BAND
    return None if lo <= cosine < hi else "cosine_outside_band"


def candidate(a: Turn, b: Turn, domain: str, reason: str | None, label: str = "UNRELATED") -> Candidate:
    """The UNRELATED or RELATED_UNSAFE candidate of two real opening messages (query_a: the smaller
    record id)."""
    rule = RULE if label == "UNRELATED" else RELATED_RULE
    a, b = sorted((a, b), key=lambda t: (natural_key(t.record_id), t.index))
    crit = {"criteria_a": criteria(a.query), "criteria_b": criteria(b.query)}
    vm, payload = ("policy_no_cache", {"policy": reason, "underlying_method": "rubric", "underlying_payload": crit}) \
        if reason else ("rubric", crit)
    return Candidate(
        domain=domain, subcategory=f"{reason}+{rule}" if reason == "time_sensitive" else rule, label=label,
        query_a=a.query, query_b=b.query,
        expected_answer_a=f"A response that {crit['criteria_a'][0]}.",
        expected_answer_b=f"A response that {crit['criteria_b'][0]}.",
        rationale=(f"Mined from {a.corpus}: two real opening requests that share no content word and are far apart "
                   "in meaning; each needs its own answer." if label == "UNRELATED" else
                   f"Mined from {a.corpus}: two real opening requests on a shared subject, each asking for things the "
                   "other does not name; the answers differ materially."),
        verification_method=vm, verification_payload=payload, construction_method=METHOD, source=a.corpus,
        real_world_grounding=GROUNDING_POLICY[reason] if reason else GROUNDING[label],
        provenance=Provenance(generator=f"{domain}.{METHOD}", generator_version=VERSION, template_id=rule,
                              source_file=f"{a.corpus}/{a.source_file}"
                              if a.source_file == b.source_file else f"{a.corpus}/{a.source_file}|{a.corpus}/{b.source_file}",
                              operator_params=scrub_record(a, b), source_record=f"{a.ref}|{b.ref}",
                              scrubbed=a.scrubbed or b.scrubbed),
        licence=a.licence,
    )
