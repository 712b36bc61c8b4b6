"""Multi-turn mined pairs: the same final message after two different real conversations.

Follow-up turns (a rule of domains.corpora.mining.context decided that the message's answer
depends on the earlier turns) are grouped by their normalised text (domains.base.normalize_text).
Inside a group, in corpus order (record id, message index), each turn pairs with the next unused
turn of ANOTHER conversation whose earlier turns differ (their kept context and the first
ANSWER_SNIPPET characters of the previous answer, normalised); at most MAX_PER_FINAL pairs per
final message, so "continue" cannot fill the cell, and a turn is used once. Label: ADVERSARIAL
(the message asks to go on, redo, pick from or answer what came before, and what came before
differs, so one conversation's answer is wrong for the other). Drops, counted: `same_conversation`,
`same_earlier_turns` (the pair would be one request twice), `cap_per_final`; repeated final
messages no rule decides never reach here (turns.py counts them as `later_turn_not_standalone` or
`courtesy`).

The same final message sent twice in ONE conversation, at two points whose earlier turns differ
(`repeat_pairs`: "continue" after part 1 and after part 3 of one story, "yes" to two of the
assistant's questions): RELATED_UNSAFE, the multi_turn domain's label for "the same final message
after a different conversation of the same kind, or another question in the same conversation"
(domains/multi_turn): one conversation, so one topic; what the message continues, redoes, picks
from or answers differs, so the answers differ. Each conversation gives at most one pair per final
message (its first two occurrences whose earlier turns differ), a turn already in an ADVERSARIAL
pair is not used again, and at most MAX_PER_FINAL pairs per final message
(`related_cap_per_final`); `related_same_earlier_turns` counts repeats whose kept earlier turns
are the same. Only messages that must act on the answer just before them repeat this way: a
continuation, a reply to the assistant's question, a bare edit ("shorter", "10 more": context.
bare_edit). A numbered part ("write section 5", "explain the second point") may name the same part
of the same plan twice, and a longer edit may hold its own subject, so one conversation gives them
no label (`related_undecided`).

Rows fall under the mining rule "follow_up" and go to the domain whose spec names it (routes.py:
the project's multi_turn), with the `context_rubric` verifier: the facts each answer depends on are
the previous request and the beginning of the previous answer, and the two expected answers name
them (so they differ, as a MISS needs).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from domains.base import Candidate, Provenance, normalize_text
from domains.corpora.mining.context import bare_edit
from domains.corpora.mining.routes import Routes, routes as current_routes
from domains.corpora.mining.turns import CONTEXT_CHARS, CONTEXT_TURNS, QUERY_CHARS, Turn, cut_text, scrub_record
from sources.base import natural_key

RULE = "follow_up"
MAX_PER_FINAL = 2
ANSWER_SNIPPET = 160
RULE_TEXT = {
    "continuation": "asks to go on with the previous answer",
    "edit_previous": "asks to redo the previous answer",
    "item_reference": "refers to a numbered part of the previous answer",
    "reply_to_question": "answers the assistant's previous question",
}
RELATED_GROUNDING = ("A real user sent the same follow-up twice in one conversation; a cache keyed on the last "
                     "message alone would serve the answer given at one point of the conversation at the other.")
UNRELATED_GROUNDING = ("Two real users sent follow-ups in conversations about different things; neither answer "
                       "serves the other.")
GROUNDING = ("Two real users sent the same follow-up after different conversations; a cache keyed on the last "
             "message alone would serve one conversation's answer to the other.")


def _last(turn: Turn, role: str) -> str:
    return next((m["content"] for m in reversed(turn.context or ()) if m["role"] == role), "")


def _facts(turn: Turn) -> list[str]:
    answer = cut_text(_last(turn, "assistant"), ANSWER_SNIPPET)[0]
    request = cut_text(_last(turn, "user"), ANSWER_SNIPPET)[0]
    return [f"previous request: {request}" if request else "previous request: (none kept)",
            f"previous answer begins: {answer}"]


def _context_key(turn: Turn) -> tuple[str, str]:
    return (normalize_text(" ".join(m["content"] for m in turn.context or ())),
            normalize_text(_last(turn, "assistant")[:ANSWER_SNIPPET]))


def _context_record(turn: Turn) -> dict:
    return {"earlier_turns": turn.earlier, "kept_turns": len(turn.context or ()), "cut_turns": list(turn.cut)}


def candidate(a: Turn, b: Turn, label: str = "ADVERSARIAL", routes: Routes | None = None) -> Candidate | str:
    """The multi-turn candidate for two turns of one group (a first in corpus order): ADVERSARIAL
    for two conversations (follow_up_pairs), RELATED_UNSAFE for two points of one (repeat_pairs);
    `no_domain_takes:follow_up` when no domain takes the rule."""
    domain = (routes or current_routes()).takes(RULE)
    if domain is None:
        return f"no_domain_takes:{RULE}"
    fa, fb = _facts(a), _facts(b)
    what = RULE_TEXT[a.use] if label != "UNRELATED" else "follows up its own conversation"
    if label == "UNRELATED":
        sub, grounding = "real_unrelated_follow_ups", UNRELATED_GROUNDING
        rationale = (f"Mined from {a.corpus}: two different follow-ups after two real conversations on different "
                     "subjects (no content word in common); each answer belongs to its own conversation.")
    elif label == "RELATED_UNSAFE":
        sub, grounding = f"real_repeat_in_conversation_{a.use}", RELATED_GROUNDING
        rationale = (f"Mined from {a.corpus}: the same final message, which {what}, is sent twice in one real "
                     "conversation; the topic is the same, but what came just before differs, so the two answers "
                     "differ.")
    else:
        sub, grounding = f"real_follow_up_{a.use}", GROUNDING
        rationale = (f"Mined from {a.corpus}: the same final message, which {what}, follows two different real "
                     "conversations; its answer depends on the earlier turns, so one conversation's answer is wrong "
                     "for the other.")
    files = f"{a.corpus}/{a.source_file}" + ("" if b.source_file == a.source_file else f"|{b.corpus}/{b.source_file}")
    params = {**scrub_record(a, b), "context_a": _context_record(a), "context_b": _context_record(b),
              "limits": {"query_chars": QUERY_CHARS, "context_turns": CONTEXT_TURNS, "context_chars": CONTEXT_CHARS}}
    return Candidate(
        domain=domain, subcategory=sub, label=label, query_a=a.query, query_b=b.query,
        expected_answer_a=f"A reply that {what} in this conversation ({fa[1]}).",
        expected_answer_b=f"A reply that {what} in this conversation ({fb[1]}).",
        rationale=rationale,
        verification_method="context_rubric", verification_payload={"context_facts_a": fa, "context_facts_b": fb},
        construction_method="real_traffic_mined", source=a.corpus, real_world_grounding=grounding,
        provenance=Provenance(generator=f"{domain}.real_traffic_mined", generator_version="1", template_id=a.use,
                              source_file=files, source_record=f"{a.ref}|{b.ref}", scrubbed=a.scrubbed or b.scrubbed,
                              operator_params=params),
        licence=a.licence, context_a=a.context, context_b=b.context,
    )


def follow_up_pairs(turns: Iterable[Turn]) -> tuple[list[tuple[Turn, Turn]], Counter, int]:
    """The capped pairs of follow-up turns, drops by reason, and how many groups repeat a message."""
    groups: dict[str, list[Turn]] = {}
    for t in turns:
        if t.context is not None:
            groups.setdefault(normalize_text(t.query), []).append(t)
    pairs: list[tuple[Turn, Turn]] = []
    drops: Counter = Counter()
    repeated = 0
    for norm in sorted(groups):
        group = sorted(groups[norm], key=lambda t: (t.corpus, natural_key(t.record_id), t.index))
        if len(group) < 2:
            continue
        repeated += 1
        used: set[int] = set()
        made = 0
        for i, a in enumerate(group):
            if i in used:
                continue
            for j in range(i + 1, len(group)):
                b = group[j]
                if j in used:
                    continue
                if b.conversation == a.conversation:
                    drops["multi_turn:same_conversation"] += 1
                    continue
                if _context_key(a) == _context_key(b):
                    drops["multi_turn:same_earlier_turns"] += 1
                    continue
                if made >= MAX_PER_FINAL:
                    drops["multi_turn:cap_per_final"] += 1
                    break
                used.update((i, j))
                pairs.append((a, b))
                made += 1
                break
    return pairs, drops, repeated


def _where(t: Turn) -> tuple:
    return (t.corpus, natural_key(t.record_id), t.index)


def repeat_pairs(turns: Iterable[Turn], taken: Iterable[Turn] = ()) -> tuple[list[tuple[Turn, Turn]], Counter]:
    """RELATED_UNSAFE pairs: the same final message at two points of one conversation (see the
    module docstring), skipping the turns in `taken`; drops by reason."""
    skip = {(t.corpus, t.record_id, t.index) for t in taken}
    groups: dict[str, dict[tuple[str, str], list[Turn]]] = {}
    drops: Counter = Counter()
    for t in turns:
        if t.context is None or (t.corpus, t.record_id, t.index) in skip:
            continue
        groups.setdefault(normalize_text(t.query), {}).setdefault((t.corpus, t.conversation), []).append(t)
    pairs: list[tuple[Turn, Turn]] = []
    for norm in sorted(groups):
        made = 0
        for conv in sorted(groups[norm].values(), key=lambda ts: min(_where(t) for t in ts)):
            ts = sorted(conv, key=_where)
            found = next(((a, b) for a, b in zip(ts, ts[1:]) if _context_key(a) != _context_key(b)), None)
            if found is None:
                if len(ts) > 1:
                    drops["multi_turn:related_same_earlier_turns"] += 1
                continue
            a = found[0]
            if not (a.use in ("continuation", "reply_to_question")
                    or (a.use == "edit_previous" and bare_edit(a.query))):
                drops["multi_turn:related_undecided"] += 1
                continue
            if made >= MAX_PER_FINAL:
                drops["multi_turn:related_cap_per_final"] += 1
                continue
            pairs.append(found)
            made += 1
    return pairs, drops


UNRELATED_PER_RULE = 60


def unrelated_pairs(turns: Iterable[Turn]) -> tuple[list[tuple[Turn, Turn]], Counter]:
    """Pairs of follow-up turns from two conversations whose final messages differ and whose user
    texts (final message and kept earlier turns) share no content word: UNRELATED. In a seeded order
    (stable hash of record and message), each turn pairs with the next unused one that qualifies, at
    most UNRELATED_PER_RULE pairs, each turn once."""
    from domains.base import stable_hash
    from domains.text import content_stems

    follow = sorted((t for t in turns if t.context is not None),
                    key=lambda t: stable_hash("mined-unrelated-follow-ups", t.corpus, t.record_id, t.index))
    stems = [content_stems(" ".join([t.query] + [m["content"] for m in t.context if m["role"] == "user"]))
             for t in follow]
    pairs: list[tuple[Turn, Turn]] = []
    drops: Counter = Counter()
    used: set[int] = set()
    for i, a in enumerate(follow):
        if len(pairs) >= UNRELATED_PER_RULE:
            break
        if i in used:
            continue
        for j in range(i + 1, min(len(follow), i + 26)):
            b = follow[j]
            if j in used or a.conversation == b.conversation or a.corpus != b.corpus:
                continue
            if normalize_text(a.query) == normalize_text(b.query) or stems[i] & stems[j]:
                drops["multi_turn:unrelated_shares_words_or_final"] += 1
                continue
            used.update((i, j))
            pairs.append(tuple(sorted((a, b), key=lambda t: (natural_key(t.record_id), t.index))))
            break
    return pairs, drops
