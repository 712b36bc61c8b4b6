"""The answer-token rules: whether a model's rewording of a curated question may stand beside it.

A rewording is kept only if it keeps every token that decides the answer and adds none:

- the seed's entity or subject appears verbatim, every number of the seed appears and no new one;
- no new entity: no capitalised word absent from the seed, no other entity or subject of the
  domain's table, and no answer form the seed lacks (the model answered instead);
- the attribute or aspect asked for is still named (a keyword of its own, none of another's);
- it differs from the seed and from every curated phrasing after normalisation; it is a question
  or a request in the imperative (a usual verb, or one the item's own phrasings start with);
- the content words it shares with the seed come in the seed's order (a reordering can swap subject
  and object: "Which ocean flows into the Volga?"), both words of a seed's "X or Y" stay, no
  agreement slip ("does ... has?", "is Japan has", "do helium have"), and the entity is not
  asked about twice ("When was Emma published? Emma came out in which year?");
- it asks one question when the seed does ("What are the effects of X? How can I prevent it?"
  asks for more);
- for an item with a vocabulary (free-text requests, e.g. conversational), every content word is
  one of the item's own wordings or a common request word ("suggest", "tips", "could"): a rewording
  that brings in a new topic word ("features", "price") may ask something else;
- it asks for one thing when the seed does, not for a kind of thing ("type of podcast"), names the
  same kind of holiday ("public" is not "national"), and reads as a person would write it
  (naturalness.py: no "Which continent does Estonia live in?", reason `unnatural:<kind>`).

`paraphrase_problem` names the first rule broken (a short countable reason), or None.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from domains.base import LMItem, normalize_text
from domains.lm.naturalness import pair_problem, unnatural
from domains.text import NUMBER_WORDS, ORDINALS, stem

MIN_WORDS, MAX_WORDS = 3, 30

_NUMBER_WORDS = frozenset(NUMBER_WORDS) | ORDINALS
_IMPERATIVES = ("name", "tell", "give", "list", "explain", "describe", "state", "identify")
_PREFIX = re.compile(r"^\s*(?:rewritten question|rewritten|rewrite this question|rewrite|question|paraphrase|"
                     r"answer|q)\s*[:\-]\s*", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_DANGLING = re.compile(r"\b(?:of|the|a|an|and|is)\s*\?\s*$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Seed:
    """One curated phrasing sent to the model: the `index`-th phrasing of a domain's LM item."""

    item: LMItem
    index: int

    @property
    def text(self) -> str:
        return self.item.phrasings[self.index]

    @property
    def record(self) -> str:
        """`<item>#<phrasing index>`: the source record of a kept rewording."""
        return f"{self.item.group}#{self.index}"

    @property
    def known(self) -> frozenset[str]:
        """The item's curated phrasings, normalised: a rewording must not copy one."""
        return frozenset(map(normalize_text, self.item.phrasings))


def parse_output(text: str) -> str | None:
    """The rewording in a raw completion: first non-empty line, label prefixes and quotes removed."""
    for line in text.splitlines():
        line = _PREFIX.sub("", line.strip()).strip().strip('"“”\'` ').strip()
        if line:
            return line
    return None


def _has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None


def _count(text: str, phrase: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE))


def _do_entity(text: str, entity: str) -> bool:
    """"do <entity>": a plural verb on a name ("What symbol do helium have?")."""
    return re.search(rf"\bdo\s+(?:the\s+|an?\s+)?{re.escape(entity)}(?!\w)", text, re.IGNORECASE) is not None


def _numbers(text: str) -> Counter:
    words = [w.casefold() for w in _WORD.findall(text)]
    return Counter(_NUMBER.findall(text)) + Counter(w for w in words if w in _NUMBER_WORDS)


def _new_capitalised(seed: str, para: str) -> list[str]:
    """Capitalised words of `para` that the seed lacks (a sentence's first word is not counted)."""
    def bare(w: str) -> str:   # "Algeria's" names Algeria
        return _POSSESSIVE.sub("", w).casefold()

    seed_words = {bare(w) for w in _WORD.findall(seed)}
    out = []
    for sentence in re.split(r"(?<=[?.!])\s+", para):
        for w in _WORD.findall(sentence)[1:]:
            if w[:1].isupper() and bare(w) not in seed_words and w != "I":
                out.append(w)
    return out


_DOES_HAS = re.compile(r"\b(?:does|do|did)\b[^?.!]*\b(?:has|does|is)\b\s*\?", re.IGNORECASE)
_OR = re.compile(r"([^\W\d_]+) or ([^\W\d_]+)", re.IGNORECASE)
_FUNCTION_WORDS = frozenset("""
a an the of in on at to into from for by with about as and or but which what who whom whose when where why how
is are was were be been being do does did have has had can could should would will shall may might must
it its this that these those there their they them you your i me my we our he she his her one some any
""".split())


_GENITIVE = re.compile(r"([^\W_]+)['’]s\s+([^\W_]+)")


def _content_stems(text: str) -> list[str]:
    out: list[str] = []
    for w in _WORD.findall(_GENITIVE.sub(r"\2 of \1", text)):  # "Algeria's capital" reads "capital of Algeria"
        s = stem(_POSSESSIVE.sub("", w.casefold()))
        if w.casefold() not in _FUNCTION_WORDS and s not in out:
            out.append(s)
    return out


def _shared_order(text: str, other: str) -> list[str]:
    """`text`'s content words (first occurrences, stemmed) that `other` also has, in `text`'s order.
    A paraphrase must keep them in the seed's order: a reordering can swap subject and object."""
    theirs = set(_content_stems(other))
    return [w for w in _content_stems(text) if w in theirs]


# Words any request may use to ask for advice, a recommendation or an opinion (stemmed on use).
REQUEST_WORDS = frozenset("""
suggest suggestion recommend recommendation good best great nice idea tip advice advise know tell think
thought could would like want need please help any some something way kind pick choose option try really
opinion worth should let us give show share quick easy simple just ever also else anything sort type
go-to top favourite favorite well better right take i'm i'd you're let's
""".split())
_IS_HAS = re.compile(r"\b(?:is|are|was|were)\s+(?:[^\W\d_]+\s+){1,2}(?:has|have|does|do)\b", re.IGNORECASE)


def _forms(word: str) -> set[str]:
    """A word, its crude stem and both without a final s: "copes" and "cope" share a form."""
    w = word.casefold().replace("’", "'")
    return {w, stem(w), w.rstrip("s"), stem(w).rstrip("s")}


def new_words(para: str, vocabulary: tuple[str, ...]) -> list[str]:
    """Content words of `para` that neither `vocabulary` nor REQUEST_WORDS has (in any form)."""
    known = set().union(*(_forms(w) for v in vocabulary for w in _WORD.findall(v)), *(_forms(w) for w in REQUEST_WORDS))
    out = []
    for w in _WORD.findall(para):
        bare = _POSSESSIVE.sub("", w)        # "what's" reads "what", "Kenya's" reads "Kenya"
        if not ({w.casefold(), bare.casefold()} & _FUNCTION_WORDS or w.isdigit() or (_forms(w) | _forms(bare)) & known):
            out.append(w)
    return out


def shared_words(texts: list[str], skip: str = "") -> tuple[str, ...]:
    """The content words every text has (whole words, any case; function words and the words of
    `skip` aside), in the first text's order: the subject a rewording of any of them must keep."""
    skipped = {w.casefold() for w in _WORD.findall(skip)}
    first = [w for w in _WORD.findall(texts[0]) if w.casefold() not in _FUNCTION_WORDS | skipped]
    out: list[str] = []
    for w in first:
        if w.casefold() not in {o.casefold() for o in out} and all(_has(t, w) for t in texts[1:]):
            out.append(w)
    return tuple(out)


def _alternatives(text: str) -> list[str]:
    """Both words of every "X or Y" in `text`: a paraphrase that keeps one narrows the question."""
    return [w for pair in _OR.findall(text) for w in pair if w.casefold() not in _FUNCTION_WORDS]


def paraphrase_problem(seed: Seed, para: str | None) -> str | None:
    """Why a paraphrase breaks the answer-token rules (a short countable reason), or None."""
    item = seed.item
    if not para:
        return "empty"
    n_words = len(_WORD.findall(para))
    if n_words < MIN_WORDS:
        return "too_short"
    if n_words > MAX_WORDS:
        return "too_long"
    norm = normalize_text(para)
    if norm == normalize_text(seed.text):
        return "identical_to_seed"
    if norm in seed.known:
        return "copies_curated_phrasing"
    # an imperative is a request too: the usual ones, and the first word of the item's own
    # imperative phrasings ("Solve ...", "Differentiate ...")
    verbs = set(_IMPERATIVES) | {p.split()[0].casefold() for p in item.phrasings if not p.rstrip().endswith("?")}
    if not (para.rstrip().endswith("?") or para.split()[0].casefold().strip(",:") in verbs):
        return "not_a_question"
    if para.count("?") > max(1, seed.text.count("?")):
        return "several_questions"   # "What are the effects of X? How can I prevent it?": a second request
    if _DANGLING.search(para) and not _DANGLING.search(seed.text):
        return "ungrammatical"   # "Which city in Algeria is the capital of?": the object went missing
    if _DOES_HAS.search(para) and not _DOES_HAS.search(seed.text):
        return "ungrammatical"   # "Which atomic number does gold has?"
    if _IS_HAS.search(para) and not _IS_HAS.search(seed.text):
        return "ungrammatical"   # "What public holiday is Japan has in 2025?"
    if any(_do_entity(para, k) and not _do_entity(seed.text, k) for k in item.keep):
        return "ungrammatical"   # "What symbol do helium have?"
    if any(_count(para, k) > max(1, _count(seed.text, k)) for k in item.keep):
        return "repeated"        # "When was Emma published? Emma came out in which year?": asked twice
    if any(not _has(para, x) for x in _alternatives(seed.text)):
        return "alternative_dropped"  # "sea or ocean" -> "ocean": the question now presumes the answer's kind
    if _shared_order(seed.text, para) != _shared_order(para, seed.text):
        return "order_changed"   # "Which ocean flows into the Volga?": who does what to whom may have flipped
    if any(not _has(para, k) for k in item.keep):
        return "entity_missing"
    if _numbers(para) != _numbers(seed.text):
        return "number_changed"
    if any(_has(para, a) and not _has(seed.text, a) for a in item.leaks):
        return "answers_instead"
    if any(_has(para, o) and not _has(seed.text, o) for o in item.others) or _new_capitalised(seed.text, para):
        return "new_entity"
    if not any(_has(para, k) for k in item.keywords):
        return "attribute_missing"
    if any(_has(para, f) and not _has(seed.text, f) for f in item.foreign):
        return "attribute_changed"
    if item.vocabulary and new_words(para, item.vocabulary):
        return "new_word"
    # "your favourite podcast" -> "what type of podcast" (a kind, not one item); "public holidays" ->
    # "national holidays" (another set of days)
    problem = pair_problem(seed.text, para)
    if problem:
        return problem
    kind = unnatural(para)
    return f"unnatural:{kind}" if kind else None
