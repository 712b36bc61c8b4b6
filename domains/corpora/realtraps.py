"""The open-world trap operators (domains.corpora.traps) applied to real requests: candidates for the
extract (domains.corpora.extract).

Seeds, per corpus, each a request a person sent (never a declarative corpus sentence):
- sharegpt, lmsys_arena: a conversation's opening message (scrubbed first; a message the scrubber
  changed is not used, nor one longer than SEED_CHARS or a follow-up word), routed like a mined
  prompt (domains.corpora.mining.single.route: conversational, qa_open's explanatory questions are
  left to conversational here, creative and time-sensitive requests under their policies);
- qqp: either question of a pair -> qa_open; ambigqa: the question -> qa_factual (TriviaQA's
  clue chains are kept out, see CORPUS_DOMAIN);
- massive (en-US), banking77: the utterance -> conversational.
Each corpus's seeds are taken in a seeded order (stable hash of corpus and text), at most MAX_SEEDS
of them, and each single-turn operator keeps at most PER_OPERATOR traps per corpus: the extract
offers a spread, and selection decides how many enter a profile.

Follow-ups: ShareGPT conversations whose final user message is a follow-up (the mining rules of
domains.corpora.mining.context, with the earlier turns scrubbed and cut as mining keeps them) take
the follow-up operators (one detail of an earlier user turn changed, or the earlier turns of another
conversation: MISS; a greeting exchange inserted before the first turn: HIT) -> multi_turn.

A candidate's verification is the rubric (single turn: three criteria from each side's own text, the
changed token among them, domains.corpora.mining.single.criteria) or the context rubric (follow-ups:
the facts of the earlier turns each answer depends on); provenance names the operator, its old and
new span, its kind and the acceptance evidence. Method: adversarial_perturbation (the requests are
real, the change is the operator's).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable, Iterator

from domains import get_domain
from domains.base import Candidate, Provenance, normalize_text, stable_hash
from domains.corpora import traps as T
from domains.corpora.mining.context import follow_up_rule
from domains.corpora.mining.single import criteria, route
from domains.corpora.mining.turns import conversation_turns
from domains.corpora.scrub import scrub

METHOD = "adversarial_perturbation"
VERSION = "1"
SEED_CHARS = 300
MAX_SEEDS = 4000
PER_OPERATOR = 40
FOLLOW_UP_RECORDS = 4000     # ShareGPT conversations read for follow-up seeds
FOLLOW_UP_PER_OPERATOR = 60
# Operators kept out of the build, each with the reason: blind reading of a 40-pair sample per
# operator (issue #27; binary agreement with the operator's label, 97% needed).
LEFT_OUT = {
    "number_change": "36/40 (90%): a price, a counter or a count that is a side detail of the request",
    "date_time_change": "32/40 (80%): a year or a duration that is a clue or a side detail, not what is asked",
    "scope_change": "35/40 (87.5%): a region or time window that still holds the same answer",
    "context_detail_change": "22/40 (55%): the assistant turns stay as they were, so a follow-up acting on the "
                             "previous answer ('shorter', 'continue') gets the same answer",
    "context_chatter_inserted": "23/30 on real follow-ups (77%): every miss continued a story, script or game, "
                                "which readers never serve from a cache; a creative-conversation test caught 4 of 7",
}
# The seed corpora and the domain each feeds. TriviaQA is not one: its questions are chains of clues (a
# changed year or unit leaves the answer the same entity); 11 of the 15 disagreements of the blind
# reading were TriviaQA seeds.
CORPUS_DOMAIN = {"qqp": "qa_open", "ambigqa": "qa_factual", "massive": "conversational",
                 "banking77": "conversational"}
ROUTED = ("sharegpt", "lmsys_arena")
GROUNDING = ("A real request from {corpus}, and the same request with one answer-determining detail changed "
             "({what}): a cache that matches on wording or meaning serves the first answer to the second.")
FOLLOW_GROUNDING = {
    "ADVERSARIAL": "A real follow-up from {corpus} sent after earlier turns that differ ({what}): its answer depends "
                   "on them, so a cache keyed on the last message serves the wrong answer.",
    "PARA_SAFE": "A real follow-up from {corpus} after the same earlier turns, one of them opening with a greeting "
                 "exchange that changes nothing the answer depends on.",
}


def _seeds(datasets: Any, corpus: str) -> Iterator[tuple[str, Any, str]]:
    """(request text, record, domain or '' to route) of `corpus`, in record order."""
    for r in datasets.load(corpus):
        if corpus in ROUTED:
            yield r.text, r, ""
        elif corpus == "qqp":
            yield r.text_a, r, CORPUS_DOMAIN[corpus]
            yield r.text_b, r, CORPUS_DOMAIN[corpus]
        elif corpus == "massive":
            if r.locale == "en-US":
                yield r.text, r, CORPUS_DOMAIN[corpus]
        elif corpus == "ambigqa":
            yield r.question, r, CORPUS_DOMAIN[corpus]
        else:
            yield r.text, r, CORPUS_DOMAIN[corpus]


def _usable(text: str) -> str | None:
    """The scrubbed request when it may seed a trap, else None."""
    if not text or len(text) > SEED_CHARS or "\n" in text.strip():
        return None
    s = scrub(text)
    if s.scrubbed or follow_up_rule(s.text) is not None:
        return None
    return s.text.strip()


def single_turn(datasets: Any) -> tuple[list[Candidate], Counter]:
    """The single-turn trap candidates of every seed corpus present, and drops by reason."""
    out: list[Candidate] = []
    drops: Counter = Counter()
    present = set(datasets.found())
    for corpus in (*ROUTED, *CORPUS_DOMAIN):
        if corpus not in present:
            continue
        seen: dict[str, tuple[Any, str]] = {}
        for text, record, domain in _seeds(datasets, corpus):
            clean = _usable(text)
            if clean is not None:
                seen.setdefault(normalize_text(clean), (record, domain, clean))
        order = sorted(seen, key=lambda n: stable_hash("realtraps", corpus, n))[:MAX_SEEDS]
        kept: Counter = Counter()
        for norm in order:
            record, domain, text = seen[norm]
            if not domain:
                domain, _ = route(text)
                if domain is None:
                    drops[f"{corpus}:no_domain"] += 1
                    continue
            found, why = T.traps(text, f"{corpus}:{record.record_id}")
            drops.update(f"{corpus}:{k}" for k in why.elements())
            out += [_single(corpus, record, domain, text, trap) for trap in found
                    if _admit(trap.operator, corpus, kept, PER_OPERATOR, drops)]
    return out, drops


def _admit(operator: str, corpus: str, kept: Counter, cap: int, drops: Counter) -> bool:
    """Whether a trap of `operator` is kept: its operator is not LEFT_OUT and it is under `cap`
    (counted in `kept`); a refusal is counted in `drops`."""
    if operator in LEFT_OUT:
        drops[f"{corpus}:{operator}:operator_left_out"] += 1
        return False
    if kept[operator] >= cap:
        drops[f"{corpus}:{operator}:cap_per_corpus"] += 1
        return False
    kept[operator] += 1
    return True


def _policy(domain: str, c: Candidate) -> Candidate:
    return c.under_policy(get_domain(domain).policy(c))


def _single(corpus: str, record: Any, domain: str, text: str, trap: Any) -> Candidate:
    what = f"{trap.kind}: '{trap.old}' became '{trap.new}'"
    crit = {"criteria_a": criteria(text, trap.old.lower()), "criteria_b": criteria(trap.query_b, trap.new.lower())}
    c = Candidate(
        domain=domain, subcategory=f"real_request_{trap.operator}", label=trap.label, query_a=text,
        query_b=trap.query_b,
        expected_answer_a=f"A response that {crit['criteria_a'][0]}, for '{trap.old}'.",
        expected_answer_b=f"A response that {crit['criteria_b'][0]}, for '{trap.new}'.",
        rationale=(f"A real request from {corpus} with one answer-determining detail changed by the {trap.operator} "
                   f"operator ({what}); nothing else differs, and the answer depends on that detail."),
        verification_method="rubric", verification_payload=crit, construction_method=METHOD, source=corpus,
        real_world_grounding=GROUNDING.format(corpus=corpus, what=what),
        provenance=Provenance(generator=f"{domain}.{METHOD}.real_request", generator_version=VERSION,
                              template_id="real_request", operator=trap.operator,
                              operator_params={"old": trap.old, "new": trap.new, "kind": trap.kind,
                                               "evidence": dict(trap.evidence)},
                              source_file=f"{corpus}/{record.source_file}", source_record=str(record.record_id)),
        licence=record.licence)
    return _policy(domain, c)


def follow_ups(datasets: Any) -> tuple[list[Candidate], Counter]:
    """The follow-up trap candidates (multi_turn) of ShareGPT's conversations, and drops by reason."""
    drops: Counter = Counter()
    if "sharegpt" not in datasets.found():
        return [], drops
    turns = []
    for k, record in enumerate(datasets.load("sharegpt")):
        if k >= FOLLOW_UP_RECORDS:
            break
        for t in conversation_turns("sharegpt", record):
            if not isinstance(t, str) and t.context and not t.scrubbed:
                turns.append(t)
    turns.sort(key=lambda t: stable_hash("realtraps-follow", t.record_id, t.index))
    contexts = [t.context for t in turns]
    kept: Counter = Counter()
    out: list[Candidate] = []
    for i, t in enumerate(turns):
        others = contexts[max(0, i - 20):i] + contexts[i + 1:i + 21]
        found, why = T.followup_traps(t.context, t.query, f"sharegpt:{t.ref}", others)
        drops.update(f"sharegpt:{k}" for k in why.elements())
        out += [_follow(t, trap) for trap in found if _admit(trap.operator, "sharegpt", kept, FOLLOW_UP_PER_OPERATOR, drops)]
    return out, drops


def _facts(context: Iterable[dict]) -> list[str]:
    users = [m["content"] for m in context if m["role"] == "user"]
    return [f"the earlier request: {normalize_text(users[-1])[:160]}" if users else "no earlier request",
            f"earlier user turns: {len(users)}"]


def _follow(t: Any, trap: Any) -> Candidate:
    label = "ADVERSARIAL" if trap.label != "PARA_SAFE" else "PARA_SAFE"
    fa = _facts(t.context)
    fb = fa if label == "PARA_SAFE" else _facts(trap.context_b) + [f"changed: '{trap.old}' -> '{trap.new}'"]
    what = {"context_detail_change": f"one earlier detail: '{trap.old}' became '{trap.new}'",
            "context_topic_swap": "the earlier turns come from another conversation",
            "context_chatter_inserted": "a greeting exchange before the first turn"}.get(trap.operator, trap.operator)
    ans_a = f"A reply to '{normalize_text(t.query)[:80]}' in this conversation ({fa[0]})."
    ans_b = ans_a if label == "PARA_SAFE" else f"A reply to '{normalize_text(t.query)[:80]}' in this conversation ({fb[0]}; {fb[-1]})."
    c = Candidate(
        domain="multi_turn", subcategory=f"real_request_{trap.operator}", label=label, query_a=t.query,
        query_b=trap.query_b, expected_answer_a=ans_a, expected_answer_b=ans_b,
        rationale=(f"A real follow-up from sharegpt and the same final message after earlier turns changed by the "
                   f"{trap.operator} operator ({what}); "
                   + ("nothing the answer depends on changed." if label == "PARA_SAFE" else
                      "the answer depends on the earlier turns, so it differs.")),
        verification_method="context_rubric", verification_payload={"context_facts_a": fa, "context_facts_b": fb},
        construction_method=METHOD, source="sharegpt",
        real_world_grounding=FOLLOW_GROUNDING[label].format(corpus="sharegpt", what=what),
        provenance=Provenance(generator=f"multi_turn.{METHOD}.real_request", generator_version=VERSION,
                              template_id="real_follow_up", operator=trap.operator,
                              operator_params={"old": trap.old, "new": trap.new, "kind": trap.kind,
                                               "evidence": dict(trap.evidence), "follow_up_rule": t.use},
                              source_file=f"sharegpt/{t.source_file}", source_record=t.ref),
        licence=t.licence, context_a=t.context, context_b=tuple(dict(m) for m in trap.context_b))
    return _policy("multi_turn", c)


def candidates(datasets: Any) -> tuple[list[Candidate], Counter]:
    """Every trap candidate of the datasets dir (single-turn and follow-ups), and drops by reason."""
    a, da = single_turn(datasets)
    b, db = follow_ups(datasets)
    return a + b, da + db
