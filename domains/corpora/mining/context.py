"""Which real user turns depend on the earlier turns: the follow-up rules (deterministic, on the
normalised final message) and the standalone test for later turns.

A follow-up's answer depends on the conversation before it, so the same final message after two
different conversations needs two different answers (a cache keyed on the last message serves one
conversation's answer to the other). `follow_up_rule(text)` names the rule that decides, or None:
- continuation: only a request to go on ("continue", "please continue", "go on", "keep going",
  "more", "next", "continue writing please", "continue from where you stopped", "finish your answer");
- edit_previous: a short instruction to redo the previous answer ("make it shorter", "shorter",
  "rewrite this in simpler words", "translate it to French", "summarise the above", "make this
  very short into points", "10 more", "another one");
- item_reference: a short message naming a numbered part of the previous answer ("explain the
  second point", "continue to step 3", "tell me more about option 2", "the first one");
- reply_to_question: a bare answer to the assistant's question ("yes", "no", "5", "b", "option 2",
  "go ahead").
Each needs at most MAX_FOLLOW_UP_TOKENS tokens. A message holding code is never an edit_previous by
its reference word alone ("explain promisify(this.client.del)": `this` is code, not the previous
answer; blind reading of mined rows); `bare_edit` tells the edits that name nothing but the
previous answer ("shorter", "10 more", "try again"). Courtesies ("thanks", "hi", "perfect") are not
follow-ups (their answer is a courtesy whatever came before): `courtesy(text)` names them, and the
miner drops them with that reason. Every other repeated final message is dropped as
`not_context_dependent`: no rule says whether its answer depends on the earlier turns.

A later turn is `standalone` (usable as a single-turn prompt without its earlier turns) when it is
not a follow-up and has none of the words that point back (it, this, that, above, previous, same,
again, ...). Such a turn reads the same without the conversation; anything else is kept out of
single-turn pairs.
"""
from __future__ import annotations

import re

from domains.base import normalize_text
from domains.corpora.mining.rules import _CODE, tokens

MAX_FOLLOW_UP_TOKENS = 12

_PLEASE = r"(?:(?:please|pls|plz|ok|okay|now|and|so|can you|could you|would you|kindly)[ ,]+)*"
_TAIL = r"(?:[ ,]+(?:please|pls|plz|thanks|thank you))*"
_CONTINUE = re.compile(
    r"^" + _PLEASE + r"(?:continue|cont|go on|keep going|carry on|proceed|more|next|finish|go ahead and continue|"
    r"keep writing|write more|tell me more|more please|go further|continue writing|continue generating|"
    r"finish (?:it|your answer|the answer|your response|the response|writing)|"
    r"continue (?:it|the story|the code|code|the list|the answer|your answer|your response|the text|"
    r"the script|the article|the essay|writing|generating|from where you (?:stopped|left off)|"
    r"from (?:the|your) last (?:line|sentence|point|word)|where you left off))"
    r"(?:[ ,]+(?:from where you (?:stopped|left off)|from (?:the|your) last (?:line|sentence|point|word)))?" + _TAIL + r"$")
_EDIT_VERB = (r"(?:make|rewrite|re-write|rephrase|reword|shorten|summari[sz]e|simplify|expand|elaborate|translate|"
              r"explain|improve|edit|correct|fix|format|condense|convert|turn|put|give me|write)")
_REFERENCE = r"\b(?:it|this|that|them|these|those|the above|above|the previous|previous|the last|your (?:last )?(?:answer|response|reply|text|code|list))\b"
_EDIT = re.compile(r"^" + _PLEASE + _EDIT_VERB + r"\b.*" + _REFERENCE)
_EDIT_BARE = re.compile(
    r"^" + _PLEASE + r"(?:shorter|longer|simpler|more concise|more detail|more details|in more detail|elaborate|"
    r"expand|summari[sz]e|rewrite|redo|try again|again|another one|another|one more|give me another|"
    r"\d{1,2} more|more examples|more ideas|create another \d{1,2} variations|give me \d{1,2} more|"
    r"make it (?:shorter|longer|simpler|better|funnier|more formal|less formal|more casual))" + _TAIL + r"$")
_ORDINAL = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d{1,2}(?:st|nd|rd|th)?)")
_PART = r"(?:point|step|item|option|one|paragraph|example|idea|section|question|answer|line|bullet|part|chapter|number)"
_ITEM = re.compile(r"(?:\bthe " + _ORDINAL + r" " + _PART + r"s?\b|\b" + _PART + r" (?:no\.? ?|number |#)?\d{1,2}\b|"
                   r"^" + _PLEASE + r"(?:the )?" + _ORDINAL + r" (?:one|option)$)")
_REPLY = re.compile(r"^(?:yes|yeah|yep|yes please|no|nope|sure|go ahead|do it|y|n|\d{1,2}|[a-e]|\(?[a-e1-9]\)|"
                    r"option [a-e1-9]|answer [a-e1-9]|both|neither|all of them|none of them)$")
_COURTESY = re.compile(r"^(?:thanks?|thank you(?: so much| very much)?|thx|ty|hi|hello|hey|good|great|perfect|"
                       r"nice|cool|awesome|ok|okay|wow|excellent|amazing|good job|well done|bye|goodbye|lol|hmm)"
                       r"(?:[ ,!]+(?:thanks?|thank you|chatgpt|gpt|a lot|so much))*$")
# Words that point back at earlier turns: a later turn holding one is not standalone.
_POINTERS = frozenset("""
it its this that these those them they their he she his her him above previous earlier same again also more
another other else continue here there then such former latter aforementioned said both either
""".split())
_FOLLOW_RULES = (("continuation", _CONTINUE), ("edit_previous", _EDIT_BARE), ("item_reference", _ITEM),
                 ("reply_to_question", _REPLY), ("edit_previous", _EDIT))


def _norm(text: str) -> str:
    return " ".join(tokens(normalize_text(text)))


def courtesy(text: str) -> bool:
    """A thanks, a greeting or praise: its answer does not depend on what came before."""
    return bool(_COURTESY.match(_norm(text)))


def follow_up_rule(text: str) -> str | None:
    """The follow-up rule that decides the message depends on the earlier turns, or None."""
    norm = _norm(text)
    if not norm or len(norm.split()) > MAX_FOLLOW_UP_TOKENS or _COURTESY.match(norm):
        return None
    for rule, pattern in _FOLLOW_RULES:
        if pattern is _EDIT and _CODE.search(text):
            continue
        if pattern.search(norm):
            return rule
    return None


def bare_edit(text: str) -> bool:
    """An edit_previous that names nothing but the previous answer ("shorter", "10 more", "try again")."""
    return follow_up_rule(text) == "edit_previous" and bool(_EDIT_BARE.search(_norm(text)))


def standalone(text: str) -> bool:
    """A later turn that reads the same without its conversation (not a follow-up, no pointer word)."""
    toks = tokens(text)
    return bool(toks) and follow_up_rule(text) is None and not courtesy(text) and not any(t in _POINTERS for t in toks)
