"""Single-turn mined pairs: a pair of real prompts labelled by `rules.decide` becomes a candidate.

Rules (`prompt_rule`; the domain that takes each is the one whose spec names it, routes.py): a
creative request (write a poem, story, song...) -> "creative", under policy_no_cache ("creative");
a time-sensitive one (weather, news, prices...) -> "time_sensitive", subcategory "time_sensitive"
under policy_no_cache; a prompt a domain's own rule accepts -> that rule; a pair of explanatory or
how-to questions (`explanatory`: "Explain X ...", "What is ...", "How do I ...", "Why does ...",
"Define ...") -> "explanatory" (the project's qa_open: "explanatory and how-to questions judged by
a 3-criterion rubric"); every other prompt -> "general" (conversational). The rubric rows use the
rubric verifier (3 criteria derived from the prompt itself). A pair whose two prompts fall under
different rules is dropped (`domain_mismatch`), except that an explanatory question paired with
another general prompt stays general.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

from domains.base import Candidate, Provenance, normalize_text
from domains.corpora.mining.routes import Routes, routes as current_routes
from domains.corpora.mining.rules import _CODE, _NUMBER, DIRECTION_WORDS, LANGUAGES, Decision, tokens
from domains.corpora.mining.turns import Turn, scrub_record
from domains.text import live_request, script, time_sensitive

METHOD = "real_traffic_mined"
VERSION = "5"  # 2: every human turn, MinHash/LSH candidates, negation rule, scrub kinds in provenance; 3: qa_open route;
               # 4: asking the time is live, "for now" is not; 5: filler_or_typo PARA_SAFE rule
SNIPPET = 160
# The creative-request rule of `route`: a creative verb, then within 60 characters a creative noun.
# Public, with its noun pattern, because the reference verified cache's features read both
# (pipeline/references/verified_lexicon.py): editing either changes that cache's features.
CREATIVE_NOUNS = (r"\b(poem|poems|poetry|story|stories|haiku|limerick|sonnet|song|lyrics|rap|ballad|verse|fable|"
                  r"fairy tale|screenplay|script for a|scene|joke|jokes|slogan|tagline|novel|short story)\b")
_CREATIVE = CREATIVE_REQUEST = re.compile(
    r"\b(write|compose|create|generate|give me|make|draft|tell me|come up with|continue)\b.{0,60}?" + CREATIVE_NOUNS)



# Not a request for live information, though it holds a time word: a discourse "now" opening a
# sentence ("Now extract the adjectives", "now I get the error ...") and Python's "Traceback (most
# recent call last)" (blind readers of mined rows caught both routed to the time-sensitive policy),
# and "for now" ("remember this for now", "that's all for now": until later, not the present).
_NOT_LIVE = re.compile(r"traceback \(most recent call last\)|(?:^|(?<=[.!?:\n]))\s*(?:(?:ok|okay|and|so|but),? )?now\b|"
                       r"\bfor now\b", re.IGNORECASE)
# Asking for the time or the date itself names no time word ("what time is it"): live all the same
# (two blind readers of mined rows flagged it served from a cache).
_ASKS_TIME = re.compile(r"\bwhat time is it\b|\bwhat(?:'s| is) the (?:time|date)\b|\bwhat day is (?:it|today)\b|"
                        r"\bwhat(?:'s| is) today'?s date\b|\bwhat(?:'s| is) the date today\b", re.IGNORECASE)


# An explanatory or how-to question: it opens (after "please", "can you"...) with explain, define,
# describe, what is/are/does, how do/does/can/to, why is/does...; at least 4 tokens; no "you" after
# the opener (a question about the assistant's last answer: "why did you stop"); no code and no
# arithmetic (a program to fix or a sum to compute, not an explanation: those stay conversational).
_POLITE = r"(?:(?:please|pls|can you|could you|would you|kindly) )*"
_EXPLANATORY = re.compile(r"^" + _POLITE + r"(?P<opener>explain|define|describe|"
                          r"what (?:is|are|was|were|does|do|' s|’ s)|"
                          r"how (?:do|does|did|can|could|to|is|are|would|should)|"
                          r"why (?:is|are|was|were|do|does|did|would|should|can))\b")
_ARITHMETIC = re.compile(r"\d\s*[-+*/^=×÷]\s*\d")


def explanatory(text: str) -> bool:
    """An explanatory or how-to question (qa_open), by the opener rule above."""
    toks = tokens(text)
    m = _EXPLANATORY.match(" ".join(toks))
    if m is None or len(toks) < 4 or _ARITHMETIC.search(text) or _CODE.search(text):
        return False
    rest = " ".join(toks)[m.end():].split()
    return not {"you", "your", "yourself"} & set(rest)


def prompt_rule(text: str, own: Sequence[tuple[str, Callable[[str], bool]]] = ()) -> tuple[str, str | None]:
    """(mining rule, policy reason or None) for a prompt; `own`: the domains' own rules (Routes.own)."""
    t = " ".join(tokens(text)[:60])
    if _CREATIVE.search(t):
        return "creative", "creative"
    if live_request(normalize_text(_NOT_LIVE.sub(" ", text))) or _ASKS_TIME.search(text):
        return "time_sensitive", "time_sensitive"
    return next(((name, None) for name, test in own if test(text)), ("general", None))


def route(text: str, routes: Routes | None = None) -> tuple[str | None, str | None]:
    """(domain, policy reason or None) a prompt routes to (None: no domain takes its rule); a pair
    of explanatory questions is routed as a pair (`candidate`)."""
    rt = routes or current_routes()
    rule, reason = prompt_rule(text, rt.own)
    return rt.takes(rule), reason


def criteria(text: str, changed: str | None = None) -> list[str]:
    """Three criteria an answer to `text` must meet, derived from the prompt alone (plus the token
    a mined ADVERSARIAL pair changed, which must be honoured)."""
    toks = tokens(text)
    snippet = " ".join(toks)
    snippet = snippet if len(snippet) <= SNIPPET else snippet[:SNIPPET].rsplit(" ", 1)[0] + " ..."
    keys = sorted({t for t in toks if _NUMBER.match(t) or t in LANGUAGES or t in DIRECTION_WORDS})
    keys = ([changed] if changed else []) + [k for k in keys if k != changed][:9]
    detail = ("uses exactly these answer-determining values from the request: " + ", ".join(keys)) if keys \
        else "keeps every detail the request states"
    return [f"answers the request: {snippet}", detail, f"replies in the request's script ({script(text).lower()})"]


# ---- candidates ----

GROUNDING = {
    "EQUIV": "Two users of a public chat service sent the same prompt, differing only in case, spacing or punctuation.",
    "PARA_SAFE": "Two users of a public chat service sent the same request, one more politely or with a typing slip "
                 "(please, can you, thanks; a misspelt word).",
    "ADVERSARIAL": "Two real chat prompts that read almost the same but change one answer-determining value "
                   "(a number, a name, a language or a direction, a number one of them leaves out, or a negation).",
}
GROUNDING_POLICY = {
    "creative": "A real creative request: each user expects a fresh piece, so it is never served from a cache.",
    "time_sensitive": "A real request for live information that must be answered fresh, never from a cache.",
}


def candidate(a: Turn, b: Turn, d: Decision, routes: Routes | None = None) -> Candidate | str:
    """The candidate for a labelled pair of turns (query_a: the smaller record id), or the reason
    there is none: the two prompts fall under different rules (`domain_mismatch`), or no domain
    takes their rule (`no_domain_takes:<rule>`). `routes`: the active registry's by default."""
    rt = routes or current_routes()
    rule, reason = prompt_rule(a.query, rt.own)
    if prompt_rule(b.query, rt.own) != (rule, reason):
        return "domain_mismatch"
    if rule == "general" and rt.takes("explanatory") and explanatory(a.query) and explanatory(b.query) \
            and not time_sensitive(a.query, b.query):  # qa_open's own policy would keep these from the cache
        rule = "explanatory"
    domain = rt.takes(rule)
    if domain is None:
        return f"no_domain_takes:{rule}"
    ca, cb = criteria(a.query, d.old), criteria(b.query, d.new)
    crit = {"criteria_a": ca, "criteria_b": cb}
    if reason:
        vm, payload = "policy_no_cache", {"policy": reason, "underlying_method": "rubric", "underlying_payload": crit}
    else:
        vm, payload = "rubric", crit
    sub = d.rule if reason != "time_sensitive" else f"time_sensitive+{d.rule}"
    if d.label == "EQUIV":
        rationale = (f"Mined from {a.corpus}: the two prompts differ only in case, spacing or sentence punctuation, "
                     "so they are the same request.")
        ans_a = ans_b = f"A response that {ca[0]}."
    elif d.label == "PARA_SAFE":
        # A HIT: one rubric for both sides (the rubric verifier needs them equal): the two prompts'
        # rubrics differ only in the filler words or the misspelling, so the shorter one (ties: the
        # smaller) serves both, the same choice whichever way round the pair is.
        ca = cb = min(ca, cb, key=lambda c: (len(c[0]), c))
        crit = {"criteria_a": ca, "criteria_b": list(cb)}
        payload = crit if not reason else {**payload, "underlying_payload": crit}
        rationale = (f"Mined from {a.corpus}: the prompts differ only by politeness or filler words (please, can you, "
                     "thanks...) or a misspelt word, so they are the same request.")
        ans_a = ans_b = f"A response that {ca[0]}."
    elif d.rule == "number_dropped":
        number = d.old or d.new
        rationale = (f"Mined from {a.corpus}: the prompts differ only in that one names the number '{number}' and the "
                     "other leaves it out; the answer must use that number, so a cached answer would be wrong.")
        ans_a, ans_b = (f"A response that {c[0]}" + (f", using '{t}'." if t else ", without assuming a number.")
                        for c, t in ((ca, d.old), (cb, d.new)))
    elif d.rule == "negation_change":
        rationale = (f"Mined from {a.corpus}: the prompts differ only by a negation, so one asks for the opposite of "
                     "the other and a cached answer would be wrong.")
        ans_a, ans_b = f"A response that {ca[0]}.", f"A response that {cb[0]}."
    else:
        rationale = (f"Mined from {a.corpus}: the prompts differ only in '{d.old}' vs '{d.new}' ({d.rule.replace('_', ' ')}); "
                     "the answer repeats or depends on that token, so a cached answer would be wrong.")
        ans_a, ans_b = f"A response that {ca[0]}, using '{d.old}'.", f"A response that {cb[0]}, using '{d.new}'."
    return Candidate(
        domain=domain, subcategory=sub, label=d.label, query_a=a.query, query_b=b.query,
        expected_answer_a=ans_a, expected_answer_b=ans_b, rationale=rationale, verification_method=vm,
        verification_payload=payload, construction_method=METHOD, source=a.corpus,
        real_world_grounding=GROUNDING_POLICY[reason] if reason else GROUNDING[d.label],
        provenance=Provenance(generator=f"{domain}.{METHOD}", generator_version=VERSION, template_id=d.rule,
                              source_file=f"{a.corpus}/{a.source_file}", operator_params=scrub_record(a, b),
                              source_record=f"{a.ref}|{b.ref}", scrubbed=a.scrubbed or b.scrubbed),
        licence=a.licence,
    )


