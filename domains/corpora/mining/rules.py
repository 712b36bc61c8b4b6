"""The deterministic labelling rules of real-traffic pairs (no model, no corpus statistics).

`classify(a, b)` is the single-turn rule set (also a feature of the reference verified cache,
pipeline/references/verified_features.py, so its outputs are frozen: a new rule goes into
`decide`). On word tokens after NFKC + casefold, sentence punctuation . , ! ? ; : dropped,
operators and quotes kept:
- same tokens (the prompts differ only in case, spacing or sentence punctuation) -> EQUIV;
- one token substituted (possibly at several places, consistently) where both tokens are numbers,
  programming or natural languages, the two ends of a direction/operator pair (encode/decode,
  ascending/descending, to/from...), or capitalised names mid-sentence -> ADVERSARIAL (the
  answer-determining-token rule: the answer repeats or depends on that token);
- two capitalised names trading places throughout (role swap) -> ADVERSARIAL;
- one number present in one prompt and absent from the other, nothing else changed ("clause 23 of
  the contract" vs "clause of the contract") -> ADVERSARIAL (the answer must use that number);
- anything else (other one-word changes, insertions, reorderings, several changes) -> dropped.

`decide(a, b)` is what mining uses: `classify`, plus rules real traffic showed to be frequent and
decidable:
- negation_change: the prompts differ only by negation words inserted or deleted ("does not use
  recursion" vs "does use recursion", "without a loop" vs "with a loop") -> ADVERSARIAL (the
  negated request asks for the opposite);
- filler_or_typo: the prompts differ only by politeness or filler words inserted or deleted
  (please, kindly, can you, could you, hey, hi, thanks, an opening "just" ...: FILLERS) and/or misspellings
  fixed, each in a lower-case word of 5+ letters (one letter inserted, deleted, or two neighbours
  transposed; not a capitalised name, not in a prompt holding code) -> PARA_SAFE (the same request,
  worded more or less politely or typed with a slip);
and drops four of classify's calls that readers found wrong or doubtful (see `decide`).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|\w+|[^\w\s]")
_SENTENCE_PUNCT = frozenset(".,!?;:¿¡。，！？；：…")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
LANGUAGES = frozenset("""
python javascript typescript java kotlin swift rust golang ruby php perl scala haskell bash powershell sql
matlab julia lua dart elixir erlang clojure fortran cobol c cpp csharp html css r
english french german spanish italian portuguese chinese mandarin japanese korean russian arabic hindi dutch
swedish norwegian danish finnish polish turkish greek hebrew vietnamese thai indonesian ukrainian czech
""".split())
_DIRECTION_PAIRS = [
    ("encode", "decode"), ("encrypt", "decrypt"), ("compress", "decompress"), ("serialize", "deserialize"),
    ("ascending", "descending"), ("increase", "decrease"), ("increasing", "decreasing"), ("add", "subtract"),
    ("addition", "subtraction"), ("plus", "minus"), ("multiply", "divide"), ("to", "from"), ("before", "after"),
    ("above", "below"), ("max", "min"), ("maximum", "minimum"), ("largest", "smallest"), ("highest", "lowest"),
    ("first", "last"), ("pros", "cons"), ("advantages", "disadvantages"), ("buy", "sell"), ("import", "export"),
    ("upload", "download"), ("push", "pull"), ("left", "right"), ("north", "south"), ("east", "west"),
    ("celsius", "fahrenheit"), ("positive", "negative"), ("more", "less"), ("longer", "shorter"),
    ("faster", "slower"), ("older", "younger"), ("better", "worse"), ("uppercase", "lowercase"),
    ("horizontal", "vertical"), ("input", "output"), ("server", "client"), ("sender", "receiver"),
]
DIRECTIONS = {frozenset(p) for p in _DIRECTION_PAIRS}
DIRECTION_WORDS = frozenset(w for p in _DIRECTION_PAIRS for w in p)


def tokens(text: str) -> list[str]:
    """Word, number and symbol tokens (NFKC, casefold) without sentence punctuation."""
    return [t for t in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()) if t not in _SENTENCE_PUNCT]


def _capitalised_mid_sentence(text: str, token: str) -> bool:
    """The token occurs capitalised somewhere that is not the start of a sentence or line."""
    norm = unicodedata.normalize("NFKC", text)
    for m in re.finditer(r"(?<!\w)" + re.escape(token) + r"(?!\w)", norm, re.IGNORECASE):
        before = norm[:m.start()].rstrip(" \t\"'(")
        if m.group(0)[:1].isupper() and before and before[-1] not in ".!?\n:":
            return True
    return False


def substitution_kind(old: str, new: str, text_a: str, text_b: str) -> str | None:
    """Which answer-determining kind a one-token substitution is, or None when no rule decides."""
    if _NUMBER.match(old) and _NUMBER.match(new):
        return "number_change"
    if old in LANGUAGES and new in LANGUAGES:
        return "language_swap"
    if frozenset((old, new)) in DIRECTIONS:
        return "direction_swap"
    if (old.isalpha() and new.isalpha() and len(old) > 1 and len(new) > 1
            and _capitalised_mid_sentence(text_a, old) and _capitalised_mid_sentence(text_b, new)):
        return "entity_change"
    return None


@dataclass(frozen=True)
class Decision:
    label: str | None       # None: dropped
    rule: str               # the rule that decided, or the drop reason
    old: str | None = None
    new: str | None = None


def classify(text_a: str, text_b: str) -> Decision:
    """Label a pair of prompts by the deterministic rules, or say why no rule decides."""
    if text_a == text_b:
        return Decision(None, "identical_text")
    ta, tb = tokens(text_a), tokens(text_b)
    if not ta or not tb:
        return Decision(None, "no_tokens")
    if ta == tb:
        return Decision("EQUIV", "surface_variant")
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    subs = {(ta[i1], tb[j1]) for tag, i1, i2, j1, j2 in ops if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1}
    if all(tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1 for tag, i1, i2, j1, j2 in ops) and len(subs) == 1:
        old, new = next(iter(subs))
        kind = substitution_kind(old, new, text_a, text_b)
        if kind is None:
            return Decision(None, "one_token_undecided")
        return Decision("ADVERSARIAL", kind, old, new)
    # Position by position (same length): difflib may align a swap as insertions and deletions.
    at = [k for k, (x, y) in enumerate(zip(ta, tb)) if x != y] if len(ta) == len(tb) else []
    swaps = {(ta[k], tb[k]) for k in at}
    # Adjacent positions are a reordering ("HIA NSW" vs "NSW HIA"), not two roles trading places.
    apart = all(k2 - k1 > 1 for k1, k2 in zip(at, at[1:]))
    if len(swaps) == 2 and apart:
        (x, y), (u, v) = sorted(swaps)
        # Two names trading places (who is charged, who is the victim): the roles, hence the answer, change.
        if (x, y) == (v, u) and substitution_kind(x, y, text_a, text_b) == "entity_change":
            return Decision("ADVERSARIAL", "role_swap", ta[at[0]], tb[at[0]])
    if len(ops) == 1 and ops[0][0] in ("insert", "delete"):
        tag, i1, i2, j1, j2 = ops[0]
        gone = ta[i1:i2] if tag == "delete" else tb[j1:j2]
        if len(gone) == 1 and _NUMBER.match(gone[0]):
            # "clause 23" vs "clause": one side names a number the answer must use, the other leaves it open.
            return Decision("ADVERSARIAL", "number_dropped", gone[0] if tag == "delete" else None,
                            gone[0] if tag == "insert" else None)
    if sorted(ta) == sorted(tb):
        return Decision(None, "word_order_change")
    if all(tag in ("insert", "delete") for tag, *_ in ops):
        return Decision(None, "insertion_or_deletion")
    return Decision(None, "multi_token_change")



# Negation words: one side adds or removes only these (contractions split into "don", "'", "t").
NEGATIONS = frozenset("not no never without none nothing nobody neither nor n't don doesn didn isn aren wasn weren "
                      "won wouldn shouldn couldn can't cannot hasn haven hadn".split())
_NEG_PAIRS = {frozenset(p) for p in [("with", "without"), ("can", "cannot"), ("always", "never"), ("do", "don"),
                                     ("does", "doesn"), ("did", "didn"), ("is", "isn"), ("are", "aren"),
                                     ("was", "wasn"), ("should", "shouldn"), ("could", "couldn"),
                                     ("would", "wouldn"), ("has", "hasn"), ("have", "haven")]}


_APOSTROPHE_T = frozenset(("'", "\u2019", "t"))


def _negation_only(ta: list[str], tb: list[str]) -> bool:
    """The token lists differ only by negation: inserted/deleted negation words (and the "'" "t"
    of a contraction), or a word swapped for its negated form (with/without, is/isn't); never one
    negation swapped for another ("didn't work" / "doesn't work": both sides say no)."""
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return False
    negated = False
    for _, i1, i2, j1, j2 in ops:
        gone = [t for t in ta[i1:i2] if t not in _APOSTROPHE_T]
        added = [t for t in tb[j1:j2] if t not in _APOSTROPHE_T]
        if len(gone) == 1 and len(added) == 1 and frozenset((gone[0], added[0])) in _NEG_PAIRS:
            negated = True
            continue
        if any(t not in NEGATIONS for t in gone + added):
            return False
        if len(gone) == len(added):
            return False  # one negation for another ("didn't" / "doesn't"): both sides are negated
        negated = True
    return negated


# Code in a prompt: there, a change of letter case renames an identifier (Python's `Name` and `name`
# are two variables, and the answer repeats the one asked about).
_CODE = re.compile(r"[=;{}`]|>>|\w\(|\bdef |\bimport |\bclass |\breturn\b")


_QUESTION_WORD = re.compile(r"^\W*(?:what|how|why|who|whom|whose|when|where|which|can|could|is|are|am|was|were|do|"
                            r"does|did|will|would|should|shall|may|might|have|has|had)\b", re.IGNORECASE)


def _asks(text: str) -> bool:
    """A question: it holds a question mark or opens with a question word ("how do I ...")."""
    return "?" in text or bool(_QUESTION_WORD.match(text))


def _case_changed_in_code(text_a: str, text_b: str) -> bool:
    words_a, words_b = re.findall(r"\w+", text_a), re.findall(r"\w+", text_b)
    recased = len(words_a) == len(words_b) and any(x != y and x.casefold() == y.casefold()
                                                   for x, y in zip(words_a, words_b))
    return recased and bool(_CODE.search(text_a) or _CODE.search(text_b))


def _spelling_variant(a: str, b: str) -> bool:
    """One letter inserted, deleted or two neighbours transposed ("jupyter"/"jyupyter", "germany"/
    "germnay"), in words of 4+ letters: a misspelt name, not another one. (A substituted letter
    stays a change: "iran"/"iraq".)"""
    if a == b or min(len(a), len(b)) < 4:
        return False
    if abs(len(a) - len(b)) == 1:
        short, long_ = sorted((a, b), key=len)
        return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
    at = [i for i in range(len(a)) if len(a) == len(b) and a[i] != b[i]]
    return len(at) == 2 and at[1] == at[0] + 1 and (a[at[0]], a[at[1]]) == (b[at[1]], b[at[0]])


def _line_number(text: str, number: str | None) -> bool:
    """`number` stands in `text` as a line number: "line 87", or a source location's line or column
    ("app.js:12:6", "main.py:87")."""
    n = re.escape(number or "")
    return bool(number) and bool(re.search(rf"\bline {n}\b|\.\w{{1,8}}:(?:\d+:)?{n}\b", text, re.IGNORECASE))


# Politeness and filler phrases that a request may gain or lose without changing what it asks
# (longest first, so "thank you" is read before "you" would be left over).
_FILLER_PHRASES = ["please", "pls", "plz", "kindly", "hey", "hi", "hello", "thanks", "thx", "just", "ok", "okay",
                   "can you", "could you", "would you", "will you", "can u", "could u", "hey there", "hi there",
                   "thank you", "thank you so much", "thanks a lot", "thanks in advance"]
FILLERS = tuple(sorted({tuple(f.split()) for f in _FILLER_PHRASES}, key=lambda f: (-len(f), f)))


def _fillers_only(gone: list[str]) -> bool:
    """The tokens are a sequence of FILLERS phrases (and nothing else)."""
    k = 0
    while k < len(gone):
        phrase = next((f for f in FILLERS if tuple(gone[k:k + len(f)]) == f), None)
        if phrase is None:
            return False
        k += len(phrase)
    return True


def _lower_word(text: str, word: str) -> bool:
    """`word` stands in `text` only in lower case (a common word, not a name or an identifier)."""
    found = re.findall(r"(?<![\w.])" + re.escape(word) + r"(?![\w.])", unicodedata.normalize("NFKC", text),
                       re.IGNORECASE)
    return bool(found) and all(f == word for f in found)


def _filler_or_typo(text_a: str, text_b: str) -> bool:
    """The filler_or_typo rule (module docstring): at least one change, each one a FILLERS phrase
    inserted or deleted or one misspelling fixed."""
    ta, tb = tokens(text_a), tokens(text_b)
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    kept = [t for tag, i1, i2, _, _ in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if tag == "equal"
            for t in ta[i1:i2] if t.isalnum() and not _fillers_only([t])]
    if not ops or len(kept) < 2:
        return False    # a request must be left besides the fillers ("Hi [NAME]" / "Hey [NAME]" asks nothing)
    for tag, i1, i2, j1, j2 in ops:
        gone, added = ta[i1:i2], tb[j1:j2]
        if ("just" in gone and not _fillers_only(ta[:i1])) or ("just" in added and not _fillers_only(tb[:j1])):
            return False    # past the opening "just" may mean "only" ("list just the names")
        if _fillers_only(gone) and _fillers_only(added):
            continue
        if len(gone) == len(added) == 1 and _typo_fixed(gone[0], added[0], text_a, text_b):
            continue
        return False
    return True


def _typo_fixed(x: str, y: str, text_a: str, text_b: str) -> bool:
    return (x.isalpha() and y.isalpha() and min(len(x), len(y)) >= 5 and _spelling_variant(x, y)
            and not {x, y} & (LANGUAGES | DIRECTION_WORDS) and _lower_word(text_a, x) and _lower_word(text_b, y)
            and not _CODE.search(text_a) and not _CODE.search(text_b))


def decide(text_a: str, text_b: str) -> Decision:
    """`classify`, then the mining-only rules: what it leaves undecided, and four of its calls that
    readers of mined real-traffic rows showed to be wrong or doubtful (each dropped with its reason):
    - a question mark that alone makes one side a question ("correct?" vs "Correct!") asks on one
      side and states on the other: not a surface variant (`question_mark_changed`; "How do I
      boil an egg?" vs "how do I boil an egg" still is one);
    - a change of letter case where the prompt holds code renames an identifier, not a surface
      variant (`case_change_in_code`);
    - a number changed only where it is a line number ("line 87" vs "line 88" in a traceback, or a
      source location: "app.js:12:6" vs "app.js:21:6"): whether the answer repeats it is a matter
      of taste, so no label (`line_number_undecided`);
    - a name changed by one inserted, deleted or transposed letter ("Jupyter" vs "Jyupyter") is
      more likely a typo than another entity (`spelling_variant_undecided`)."""
    d = classify(text_a, text_b)
    if d.label == "EQUIV":
        if _asks(text_a) != _asks(text_b):
            return Decision(None, "question_mark_changed")
        if _case_changed_in_code(text_a, text_b):
            return Decision(None, "case_change_in_code")
        return d
    if d.rule == "number_change" and _line_number(text_a, d.old) and _line_number(text_b, d.new):
        return Decision(None, "line_number_undecided")
    if d.rule == "entity_change" and _spelling_variant(d.old or "", d.new or ""):
        return Decision(None, "spelling_variant_undecided")
    if d.label is not None or d.rule in ("identical_text", "no_tokens"):
        return d
    if _negation_only(tokens(text_a), tokens(text_b)):
        return Decision("ADVERSARIAL", "negation_change")
    if _filler_or_typo(text_a, text_b):
        return Decision("PARA_SAFE", "filler_or_typo")
    return d
