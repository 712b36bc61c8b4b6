"""Every human turn of a real conversation, scrubbed, with what it may be used for.

`conversation_turns(record)` reads one loader record (a whole conversation) and yields a `Turn`
per non-empty user message, or a drop reason. Order of work, per turn:
1. the message is scrubbed (domains.corpora.scrub) before anything else reads it;
2. a message longer than QUERY_CHARS (1,000 characters after scrubbing; 93% of ShareGPT's human
   turns are shorter) is dropped as `query_too_long`: a row's query must stay readable, and a
   pasted document or program is never cut mid-text;
3. its use: `first` (a conversation's opening message: a single-turn prompt), a follow-up rule
   (domains.corpora.mining.context: a multi-turn candidate, with its earlier turns), `standalone`
   (a later message that reads the same without the conversation: a single-turn prompt), else a
   drop (`courtesy`, `later_turn_not_standalone`, `follow_up_without_earlier_turns`).
A follow-up keeps its last CONTEXT_TURNS earlier turns as its context, each scrubbed whole and then
cut at CONTEXT_CHARS characters (at a space, marked " [...]"); `cut` lists the cut turns' positions
in the kept context and `earlier` how many earlier turns the conversation had, so a row records
what it left out. ShareGPT splits long conversations into parts `<id>_<n>`: a part after the first
opens mid-conversation, so its first message is a later turn without earlier turns.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from domains.corpora.mining.context import courtesy, follow_up_rule, standalone
from domains.corpora.scrub import scrub

QUERY_CHARS = 1000
CONTEXT_TURNS = 4
CONTEXT_CHARS = 600
CUT_MARK = " [...]"
_PART = re.compile(r"^(.*)_(\d+)$")


@dataclass(frozen=True)
class Turn:
    """One usable user message of a real conversation, scrubbed."""

    corpus: str
    source_file: str
    licence: str
    record_id: str
    index: int                      # position of the message in the record's conversation
    conversation: str               # the conversation it belongs to (ShareGPT parts share one)
    query: str
    use: str                        # "first", "standalone" or a follow-up rule
    scrubbed: bool
    kinds: tuple[str, ...]          # the scrubber's kinds, over the query and its kept context
    context: tuple[Mapping[str, str], ...] | None = None
    cut: tuple[int, ...] = ()
    earlier: int = 0

    @property
    def ref(self) -> str:
        """`<record id>#<message index>`: where the message is in the corpus file."""
        return f"{self.record_id}#{self.index}"

    @property
    def single(self) -> bool:
        """Usable as a single-turn prompt (no earlier turns needed)."""
        return self.use in ("first", "standalone")


def scrub_record(*turns: Turn) -> dict[str, Any]:
    """What the scrubber replaced in a row's turns, for its provenance."""
    return {"scrubbed_kinds": sorted({k for t in turns for k in t.kinds})}


def conversation_key(corpus: str, record_id: str) -> tuple[str, int]:
    """(conversation, part): ShareGPT ids are `<conversation>_<part>` (a renamed repeat `~n` kept)."""
    m = _PART.match(record_id) if corpus == "sharegpt" else None
    return (m.group(1), int(m.group(2))) if m else (record_id, 0)


def cut_text(text: str, limit: int = CONTEXT_CHARS) -> tuple[str, bool]:
    """`text` cut at the last space before `limit` characters and marked, or as it is."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip() + CUT_MARK, True


def conversation_turns(corpus: str, record: Any) -> Iterator[Turn | str]:
    """Each user message of `record` as a Turn, or the reason it is not used."""
    conv = list(record.conversation) or [("user", record.text)]
    key, part = conversation_key(corpus, record.record_id)
    clean: dict[int, tuple[str, tuple[str, ...]]] = {}

    def scrubbed(i: int) -> tuple[str, tuple[str, ...]]:
        if i not in clean:
            s = scrub(conv[i][1])
            clean[i] = (s.text, tuple(s.kinds))
        return clean[i]

    for i, (role, text) in enumerate(conv):
        if role != "user":
            continue
        if not text.strip():
            yield "empty_turn"
            continue
        query, kinds = scrubbed(i)
        if len(query) > QUERY_CHARS:
            yield "query_too_long"
            continue
        base = dict(corpus=corpus, source_file=record.source_file, licence=record.licence, record_id=record.record_id,
                    index=i, conversation=key, query=query)
        if i == 0 and part == 0:
            yield Turn(**base, use="first", scrubbed=bool(kinds), kinds=kinds)
            continue
        rule = follow_up_rule(query)
        if rule is None:
            if standalone(query):
                yield Turn(**base, use="standalone", scrubbed=bool(kinds), kinds=kinds)
            else:
                yield "courtesy" if courtesy(query) else "later_turn_not_standalone"
            continue
        if i == 0 or conv[i - 1][0] != "assistant" or not conv[i - 1][1].strip():
            yield "follow_up_without_earlier_turns"
            continue
        start = max(0, i - CONTEXT_TURNS)
        context, cut, all_kinds = [], [], set(kinds)
        for k in range(start, i):
            text_k, kinds_k = scrubbed(k)
            all_kinds.update(kinds_k)
            shown, was_cut = cut_text(text_k)
            if was_cut:
                cut.append(k - start)
            context.append({"role": conv[k][0], "content": shown})
        yield Turn(**base, use=rule, scrubbed=bool(all_kinds), kinds=tuple(sorted(all_kinds)),
                   context=tuple(context), cut=tuple(cut), earlier=i)
