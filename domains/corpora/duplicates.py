"""The duplicate-question guard: when two questions a Q&A site's readers marked duplicates (QQP
is_duplicate=1) may be served one answer, judged by the answer-determining-token rule rather than
by "the same words" (paraphrase_guard, domains.corpora.common, which PAWS, PAWS-X and MRPC keep).

`duplicate_question_guard(a, b)` returns a drop reason, or None when nothing in the texts shows a
different answer. Each check below names a way two rewordings ask for different answers:
- script_differs, numbers_differ, title_case_text, entities_differ: as in paraphrase_guard (a
  name or a number is repeated by the answer; a title-cased text hides which words are names);
- negation_differs: one side negated ("why can't I ..." vs "why do I ...");
- scope_differs: other scope or quantity words (all, some, only, every, any, most, none, each...:
  "What are the Romance languages?" vs "What were some of the Romance languages?") or time and
  place windows (today, this year, online, abroad...);
- polarity_differs: other polarity or comparison words (best/worst, more/less, increase/decrease,
  pros/cons, before/after, with/without, good/bad, easy/hard, fast, cheap..., "for and against");
- constraint_word_one_side: any other CONSTRAINT_WORDS word on one side only (e.g. "or": a
  second request; a third person: "his", "their");
- person_differs: a question to the reader ("what have you done ...") against one about the asker
  or nobody; "how do you ..." (generic you), "how can one ..." and "how can I ..." are one;
- question_type_differs: why / how-to / how-is / how-many / what / which / who / when / where /
  yes-no (and a different number of questions: "What is X? And why?", or why/who/when/where/
  whether on one side only: "... and why?");
- words_added: a content word on one side with nothing in its place on the other (an added
  modifier narrows the request: "war" vs "nuclear war"; "modifier_added" when it stands right
  before a shared word);
- words_moved_between_names: content words moved in a text with two numbers or names (a role may
  have moved: "a 15 year old girl and an 18 year old boy" / "... boy and ... girl");
- reworded_too_much: more content words swapped than kept;
- word_swapped: a word swapped for one that is not its synonym (SYNONYMS) nor its inflection;
- modal_differs: other modal verbs ("why shouldn't ..." vs "why won't ..."; a how-to opener's
  "how should I" = "how can I" aside);
- modifier_swapped: a swapped adjective or adverb ("use a condom effectively" vs "safely").

Swaps one for one of listed synonyms ("begin" / "start", "film" / "movie") and of one word's
inflections ("blog" / "blogging", "economics" / "economic") are let through, and a name misspelt
on one side ("Qoura" / "Quora"). A few how-to openers are one question type ("how do I X" = "how to X" = "what is the
best way to X" = "what are some ways to X").
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher

from domains.corpora.common import CONSTRAINT_WORDS, STOPWORDS, entities, number_set, spelling_variants, words
from domains.text import script, stem

NEGATION = frozenset("not no never none nothing nobody neither nor cannot t without unable nowhere".split())
SCOPE = frozenset("""all some only every each any most none both either neither whole entire several few many
much always ever everything everyone everybody anything anybody
today tonight tomorrow yesterday now currently current soon later recently latest weekend week month year
daily weekly monthly morning evening night future past ago
here there abroad nearby near local online offline overseas international world worldwide""".split())
POLARITY = frozenset("""best worst better worse good bad great poor more less fewer most least increase decrease
increasing decreasing pros cons advantages disadvantages benefits drawbacks before after with without positive
negative easy easiest easier hard hardest harder difficult fast fastest faster quick quickest quickly slow
cheap cheapest cheaper expensive safe safest safely free top effective effectively efficient efficiently
right wrong true false""".split())
QUESTION_WORDS = frozenset("why when where who whom whose which whether how what".split())
ASKER = frozenset("i me my mine myself one".split())     # the asker, or anyone ("how can one ...")
READER = frozenset("you your yours yourself".split())    # the person who answers
_ASKS_FOR = frozenset("why when where who whom whose whether".split())
MODALS = {"should": "should", "shouldn": "should", "must": "must", "will": "will", "won": "will", "would": "would",
          "wouldn": "would", "may": "may", "might": "might", "shall": "shall", "ought": "should"}
_AUX = frozenset("is are am was were can could do does did will would should shall has have had may might must"
                 .split())
# How-to openers that ask the same as "how do I": removed before the question type is read.
_HOW_TO = re.compile(r"^(?:what (?:is|are|s) (?:the |some )?(?:best |good )?(?:ways?|methods?|steps?) "
                     r"(?:to|of|for)|what (?:should|can|do) i do to|how (?:do|can|could|should|would|does) "
                     r"(?:i|one|you|we) ?|how to)\b")
_FOR_AGAINST = re.compile(r"\bfor (?:and|or) against\b")
_ADDED_QUESTION = re.compile(r"\b(?:and|or|but) (how|why|what|when|where|who|which)\b")
_GENERIC_YOU = re.compile(r"^(?:how|what|where|when|why|which) (?:do|can|could|should|would|does|will) you\b")
# Words that a duplicate question may swap one for another (stems, as `_content` gives them): plain
# synonyms in the sense a question uses them, irregular plurals and common misspellings. A swap
# outside these (and outside one word's inflections and derivations) is dropped: in QQP's
# duplicates most other swaps change the request ("change" / "reset" a password, "shoes" /
# "wires", "learn language c++" / "learn advanced c++").
SYNONYM_GROUPS = [
    "begin start commence", "learn study", "film movie movy flim", "photo picture pic image", "kind type sort",
    "way method", "know tell", "baby infant", "child kid", "earn make", "enhance improve hone", "cause lead",
    "effect impact", "avoid prevent", "pee urinate", "site website websit", "phone smartphone mobile cellphone",
    "fix repair", "buy purchase", "obtain get gain", "need requir require", "choose select pick", "use utilize utilise",
    "help assist", "talk speak", "quit stop", "big large", "man men", "woman women", "person people peopl",
    "meaning mean", "job career", "examination exam", "add upload", "receive receiv reciev", "tip advice",
    "country nation", "car vehicle", "doctor physician", "happen occur", "reason cause", "build create",
    "money cash", "guy man", "girlfriend gf", "boyfriend bf", "add introduce",
]
SYNONYMS: dict[str, frozenset[str]] = {}     # by stem, as `_content` gives the words
for _group in SYNONYM_GROUPS:
    _stems = frozenset(f for w in _group.split() for f in (w, stem(w), stem(w + "d")))   # "introduce": "introduc"
    for _w in _stems:
        SYNONYMS[_w] = SYNONYMS.get(_w, frozenset()) | _stems
_MODIFIER_SUFFIX = ("ly", "ful", "less", "ive", "ous", "able", "ible", "al", "ic", "est", "er")
_FILLERS = frozenset("really actually exactly basically simply generally please kindly".split())
_SENTENCE = re.compile(r"[^?.!]+[?.!]*")


def question_type(sentence_words: list[str]) -> str:
    """The kind of answer a question asks for, from its opening words (see the module docstring)."""
    t = " ".join(sentence_words)
    if not t:
        return "empty"
    if _HOW_TO.match(t):
        return "how_to"
    first, second = sentence_words[0], (sentence_words[1] if len(sentence_words) > 1 else "")
    if first == "how":
        if second in ("many", "much", "long", "old", "far", "often", "big"):
            return "how_" + second
        return "how_is"
    if first in ("what", "which") and " ".join(sentence_words[1:4]) in ("is the best", "are the best", "s the best"):
        return "best_choice"
    if first in QUESTION_WORDS:
        return {"whom": "who", "whose": "who"}.get(first, first)
    if first in _AUX:
        return "yes_no"
    return "other"


def _named(entity: str, other: set[str]) -> bool:
    """The other side names the entity too, maybe misspelt ("Qoura" / "Quora")."""
    return entity in other or len(entity) >= 5 and any(spelling_variants(entity, w) or _transposed(entity, w)
                                                       for w in other if len(w) >= 5)


def _transposed(x: str, y: str) -> bool:
    """Two neighbouring letters swapped ("qoura" / "quora")."""
    at = [i for i in range(len(x)) if len(x) == len(y) and x[i] != y[i]]
    return len(at) == 2 and at[1] == at[0] + 1 and (x[at[0]], x[at[1]]) == (y[at[1]], y[at[0]])


def _questions(text: str) -> list[str]:
    """The question type of each sentence that holds a word, in order."""
    out = []
    for m in _SENTENCE.finditer(text):
        ws = words(m.group(0))
        if ws:
            out.append(question_type(ws))
    return out


def _person(ws: list[str]) -> tuple[bool, frozenset[str]]:
    """(asks the reader about themselves, the third persons named)."""
    t = " ".join(ws)
    generic = bool(_GENERIC_YOU.match(t))
    reader = bool(READER & set(ws)) and not generic
    return reader, frozenset(set(ws) & {"we", "our", "us", "they", "their", "them", "he", "she", "his", "her"})


def _modals(ws: list[str]) -> frozenset[str]:
    """The modal verbs past a how-to opener ("how should I" = "how can I"; "should I buy" is not
    "can I buy")."""
    m = _HOW_TO.match(" ".join(ws))
    rest = " ".join(ws)[m.end():].split() if m else ws
    return frozenset(MODALS.get(w, w) for w in rest if w in MODALS)


def _content(ws: list[str]) -> list[str]:
    skip = STOPWORDS | QUESTION_WORDS | ASKER | READER | _FILLERS | NEGATION
    return [stem(w) for w in ws if w not in skip and not w.isdigit()]


def _same_word(x: str, y: str) -> bool:
    """One word for the other: listed synonyms (SYNONYMS), or one word's inflection or derivation
    (a shared beginning of 5+ letters: "substitute" / "substitution", "economics" / "economic")."""
    if y in SYNONYMS.get(x, ()):
        return True
    if x + "est" == y or y + "est" == x or x + "er" == y or y + "er" == x:
        return False        # "weird" / "weirdest": a comparison on one side only
    if x.endswith("ism") != y.endswith("ism"):
        return False        # "cannibalism" / "cannibal": the practice, not the person
    n = 0
    while n < min(len(x), len(y)) and x[n] == y[n]:
        n += 1
    return n >= 5


def _modifier(word: str) -> bool:
    return word in POLARITY or word.endswith(_MODIFIER_SUFFIX) and len(word) > 4


def answer_token_guard(a: str, b: str) -> str | None:
    """The answer-determining tokens of two requests differ (a drop reason), or None: the script,
    the numbers, the named entities, a negation, the scope words and the polarity words (the first
    checks of duplicate_question_guard; a curated rewording (domains.corpora.rewordings) must pass
    them and may change everything else)."""
    if script(a) != script(b):
        return "script_differs"
    if number_set(a) != number_set(b):
        return "numbers_differ"
    ea, eb = entities(a), entities(b)
    if ea is None or eb is None:
        return "title_case_text"
    wa, wb = words(a), words(b)
    sa, sb = set(wa), set(wb)
    if not all(_named(e, sb) for e in ea) or not all(_named(e, sa) for e in eb):
        return "entities_differ"
    if bool(NEGATION & sa) != bool(NEGATION & sb):
        return "negation_differs"
    if (SCOPE & sa) != (SCOPE & sb):
        return "scope_differs"
    if (POLARITY & sa) != (POLARITY & sb) or bool(_FOR_AGAINST.search(" ".join(wa))) != bool(_FOR_AGAINST.search(" ".join(wb))):
        return "polarity_differs"
    return None


def duplicate_question_guard(a: str, b: str) -> str | None:
    """Why two questions marked duplicates may still need different answers (a drop reason, see
    the module docstring), or None."""
    why = answer_token_guard(a, b)
    if why is not None:
        return why
    ea, eb = entities(a) or [], entities(b) or []
    wa, wb = words(a), words(b)
    sa, sb = set(wa), set(wb)
    qa, qb = _questions(a), _questions(b)
    if qa != qb:
        return "question_type_differs"
    if (sa ^ sb) & _ASKS_FOR or _ADDED_QUESTION.findall(" ".join(wa)) != _ADDED_QUESTION.findall(" ".join(wb)):
        return "question_type_differs"      # "What's your biggest pet peeve and why?", "... and how?"
    if _modals(wa) != _modals(wb):
        return "modal_differs"              # "why shouldn't NATO ..." vs "why won't NATO ..."
    if _person(wa) != _person(wb):
        return "person_differs"
    other = CONSTRAINT_WORDS - QUESTION_WORDS - READER - {"we", "our", "they", "their", "them", "he", "she", "his",
                                                         "her"}
    if (sa ^ sb) & other:
        return "constraint_word_one_side"
    bound = len(number_set(a)) + len(ea) >= 2     # numbers and names whose order binds roles
    return _content_change(_content(wa), _content(wb), bound)


def _content_change(ca: list[str], cb: list[str], bound: bool = False) -> str | None:
    """Added, swapped and kept content words (stems, spelling variants made one); `bound`: the text
    holds two numbers or names, so moving words may move a role between them ("a 15 year old girl
    and an 18 year old boy" / "a 15 year old boy and an 18 year old girl")."""
    if not ca or not cb:
        return "no_content_words"
    cb = [next((x for x in ca if spelling_variants(x, y) or _transposed(x, y)), y) if y not in ca else y for y in cb]
    shared = swapped = 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, ca, cb, autojunk=False).get_opcodes():
        if tag == "equal":
            shared += i2 - i1
            continue
        gone, added = ca[i1:i2], cb[j1:j2]
        if not gone or not added:
            extra = [w for w in gone + added if ca.count(w) != cb.count(w)]
            if not extra:
                if bound:
                    return "words_moved_between_names"
                continue        # moved, not added ("bleeding from nose and mouth" / "mouth and nose bleeding")
            nxt = ca[i2] if tag == "delete" and i2 < len(ca) else cb[j2] if tag == "insert" and j2 < len(cb) else ""
            return "modifier_added" if nxt and nxt in ca and nxt in cb else "words_added"
        if len(gone) != len(added):
            return "words_added"
        for x, y in zip(gone, added):
            if not _same_word(x, y):
                return "modifier_swapped" if _modifier(x) or _modifier(y) else "word_swapped"
        swapped += len(gone)
    if swapped > shared:
        return "reworded_too_much"
    return None
