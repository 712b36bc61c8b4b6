"""Follow-up traps: the same final user message after other earlier turns.

- `context_detail_change` (ADVERSARIAL): one single-turn operator applied to one earlier user turn,
  the latest one it applies to; everything else is kept byte for byte. BENCHMARK.md: "the same last
  message after different earlier turns" must MISS. The check: the two contexts differ in exactly one
  message, a user one, and `accept` names the operator on that message.
- `context_topic_swap` (RELATED_UNSAFE): the earlier turns are replaced by those of another
  conversation (chosen seeded from `other_contexts`, sharing no content word of 5+ letters with the
  original's user turns); the final request is the same kind of request about other material, so the
  answer differs materially.
- `context_chatter_inserted` (PARA_SAFE, HIT): a greeting exchange ("Hi! How are you today?" / "Doing
  well, thanks. What can I help you with?") is put before the first turn. Why the answer stays the
  same: a greeting carries no content, asks for nothing the later turns or the final message could
  refer to, and being first it is never the exchange the final message follows up on; every later
  turn is kept in order. Refused when the final message refers to the conversation as a whole
  ("so far", "above", "everything", "summarise", "first", "our conversation", ...), which would reach
  the inserted exchange, or when the context already opens with a greeting.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Mapping, Sequence

from domains.base import stable_rng
from domains.corpora import traps as _api

CHATTER = (
    ({"role": "user", "content": "Hi! How are you today?"},
     {"role": "assistant", "content": "I'm doing well, thanks for asking. What can I help you with?"}),
    ({"role": "user", "content": "Hello there."},
     {"role": "assistant", "content": "Hello! How can I help you today?"}),
    ({"role": "user", "content": "Good morning!"},
     {"role": "assistant", "content": "Good morning! What would you like to work on?"}),
)
_WHOLE = re.compile(r"\b(?:so far|above|everything|all of (?:this|that|it|the)|summar\w+|recap|first|earlier|previous|"
                    r"conversation|chat|we (?:discussed|talked)|you said|i said|start|beginning|history|"
                    r"greet\w*|hello|hi|how are you)\b", re.I)
_GREETING = re.compile(r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening)|greetings)\b", re.I)
_CONTENT = re.compile(r"[a-z]{5,}")


def _turns(context: Sequence[Mapping[str, str]]) -> tuple[dict[str, str], ...]:
    return tuple({"role": str(m["role"]), "content": str(m["content"])} for m in context)


def followup_traps(context: Sequence[Mapping[str, str]], final: str, seed: str,
                   other_contexts: Sequence[Sequence[Mapping[str, str]]] = ()) -> tuple[list["_api.FollowTrap"], Counter]:
    """At most one trap per follow-up operator, and drops by reason."""
    ctx = _turns(context)
    drops: Counter = Counter()
    out = []
    if not ctx or not any(m["role"] == "user" for m in ctx):
        drops["context:no_user_turn"] += 1
        return out, drops
    for make in (_detail, _topic, _chatter):
        trap = make(ctx, final, seed, other_contexts, drops)
        if trap is not None:
            out.append(trap)
    return out, drops


def _detail(ctx, final, seed, others, drops):
    name = "context_detail_change"
    for idx in reversed(range(len(ctx))):
        if ctx[idx]["role"] != "user":
            continue
        found, why = _api.traps(ctx[idx]["content"], f"{seed}|turn{idx}")
        if not found:
            continue
        rng = stable_rng(_api.VERSION, name, seed, final)
        t = rng.choice(sorted(found, key=lambda x: x.operator))
        new_ctx = tuple({**m, "content": t.query_b} if i == idx else dict(m) for i, m in enumerate(ctx))
        ok, reason = check_detail(ctx, new_ctx)
        if ok != t.operator:
            drops[f"{name}:accept_failed"] += 1
            continue
        return _api.FollowTrap(name, final, new_ctx, t.old, t.new, f"{t.operator}:{t.kind}", "ADVERSARIAL",
                               {"turn": idx, "operator": t.operator, "accept": reason, "seed": seed,
                                "version": _api.VERSION})
    drops[f"{name}:no_operator_applies"] += 1
    return None


def check_detail(a: Sequence[Mapping[str, str]], b: Sequence[Mapping[str, str]]) -> tuple[str | None, str]:
    """The acceptance rule of context_detail_change: same roles, one user message differs, and that
    message passes `accept`."""
    if len(a) != len(b) or any(x["role"] != y["role"] for x, y in zip(a, b)):
        return None, "the turns differ in number or roles"
    diff = [i for i, (x, y) in enumerate(zip(a, b)) if x["content"] != y["content"]]
    if len(diff) != 1 or a[diff[0]]["role"] != "user":
        return None, f"{len(diff)} messages differ (need exactly one user message)"
    return _api.accept(a[diff[0]]["content"], b[diff[0]]["content"])


def _words(ctx) -> set[str]:
    return {w for m in ctx if m["role"] == "user" for w in _CONTENT.findall(m["content"].lower())}


def _topic(ctx, final, seed, others, drops):
    name = "context_topic_swap"
    mine = _words(ctx)
    pool = [_turns(o) for o in others if o and _turns(o) != ctx and any(m["role"] == "user" for m in o)]
    pool = [o for o in pool if not (_words(o) & mine) and o[-1]["role"] == ctx[-1]["role"]]
    if not pool:
        drops[f"{name}:no_disjoint_context"] += 1
        return None
    rng = stable_rng(_api.VERSION, name, seed, final)
    other = pool[rng.randrange(len(pool))]
    first = next(m["content"] for m in other if m["role"] == "user")
    was = next(m["content"] for m in ctx if m["role"] == "user")
    return _api.FollowTrap(name, final, other, was[:80], first[:80], "other_conversation", "RELATED_UNSAFE",
                           {"seed": seed, "version": _api.VERSION, "shared_content_words": 0})


def _chatter(ctx, final, seed, others, drops):
    name = "context_chatter_inserted"
    if _WHOLE.search(final):
        drops[f"{name}:final_refers_to_whole_conversation"] += 1
        return None
    if _GREETING.match(ctx[0]["content"]) or ctx[0]["role"] != "user":
        drops[f"{name}:context_opens_with_greeting_or_system"] += 1
        return None
    rng = stable_rng(_api.VERSION, name, seed, final)
    user, bot = CHATTER[rng.randrange(len(CHATTER))]
    new_ctx = (dict(user), dict(bot)) + tuple(dict(m) for m in ctx)
    return _api.FollowTrap(name, final, new_ctx, "", user["content"], "greeting_first", "PARA_SAFE",
                           {"position": 0, "seed": seed, "version": _api.VERSION})
