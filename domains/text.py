"""Small text features shared by the rules that label pairs without a model (mining, corpus
guards, LM paraphrase checks, the domains' time-sensitive policy). Standard library only."""
from __future__ import annotations

import re
import unicodedata
from collections import Counter


def script(text: str) -> str:
    """The writing system most of a text's letters are in ("LATIN", "CYRILLIC", "CJK", ...); LATIN
    for a text without letters. Ties go to the alphabetically first."""
    counts: Counter = Counter()
    for ch in text:
        if ch.isalpha():
            counts[unicodedata.name(ch, "OTHER").split()[0]] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if counts else "LATIN"


def stem(word: str) -> str:
    """A crude English stem of a lower-case word, enough to see "flow"/"flows"/"flowing" or
    "city"/"cities" as one word: -ing, -ies (-> y), -ed, -es, -ly, -s, keeping at least 3 letters."""
    for suffix in ("ing", "ies", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


# Number words and the number they state ("seven" = "7", "dozen" = "12").
NUMBER_WORDS: dict[str, str] = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000",
                     "million": "1000000", "billion": "1000000000", "once": "1", "twice": "2", "single": "1",
                     "double": "2", "half": "0.5", "dozen": "12"})
ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth".split())


# The words that tie a request to the moment it is sent, by time scope: a request that names one
# asks about the present (or a moment relative to it), so its answer can change and it is never
# served from a cache (the time_sensitive policy). The scopes also tell live paraphrases apart:
# "open right now" and "open today" are different questions. English first, then the words of
# the multilingual domain's languages (de, fr, es, it, pt, nl). Matched case-insensitively.
TIME_SCOPES: tuple[tuple[str, str], ...] = (
    ("last_night", r"last night"),
    ("latest", r"latest|most recent(?:ly)?|recent"),
    ("now", r"right now|at the moment|currently|current|nowadays|now|aktuell|derzeit|actuellement|actualmente|"
            r"attualmente|atualmente|momenteel|tegenwoordig"),
    ("this_month", r"this month"),
    ("this_week", r"this week"),
    ("this_weekend", r"this weekend"),
    ("this_year", r"this year"),
    ("today", r"today|heute|aujourd'hui|hoy|oggi|hoje|vandaag"),
    ("tomorrow", r"tomorrow"),
    ("tonight", r"tonight"),
)
_SCOPE_PATTERNS = tuple((name, re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)) for name, pattern in TIME_SCOPES)


def time_scopes(text: str) -> set[str]:
    """The time scopes (now, today, last_night, latest, ...) a text asks or talks about."""
    return {name for name, pattern in _SCOPE_PATTERNS if pattern.search(text)}


def time_sensitive(*texts: str) -> bool:
    """Whether any of the texts asks about the present: it names a time scope."""
    return any(pattern.search(t) for t in texts for _, pattern in _SCOPE_PATTERNS)


# Topics whose answer changes by the hour whether or not a time is named ("weather in Paris",
# "AAPL stock price"). Real traffic asks about them without a time word, so mining routes such a
# prompt to the time_sensitive policy; the curated domains ask about them only with a time scope
# (their policies use `time_sensitive`), since "the weather in Paris in July" is climate, not news.
LIVE_TOPICS = (r"weather|forecast|latest news|breaking news|news today|stock price|share price|exchange rate|"
               r"live score|current (?:price|weather|president|prime minister|time|date|score|events|news)")
_LIVE_TOPICS = re.compile(rf"\b(?:{LIVE_TOPICS})\b", re.IGNORECASE)


def live_request(*texts: str) -> bool:
    """Whether any text asks for live information: a time scope (`time_sensitive`) or a live topic."""
    return time_sensitive(*texts) or any(_LIVE_TOPICS.search(t) for t in texts)


# Function words of the corpora's languages (English, German, Swahili): what `content_stems` leaves out.
STOPWORDS = frozenset("""
a an the i me my mine myself you your yours we our us it its is are am was were be been being do does did
done doing have has having had can could would will shall should may might must please just so that this
these those there then than to of in on at for with by from about into as and but what how hey okay ok
im i'm ive id s m ll re ve d get got some one ones thing things anyone someone something
der die das den dem des ein eine einen einem einer eines ich mich mir mein meine meinen du dich dir dein
deine wir uns unser sie es ist sind war bin bitte und zu im am um in an auf mit von für was wie
ya la na wa kwa za cha vya katika ni je
""".split())


def content_stems(text: str) -> frozenset[str]:
    """Stemmed content words: word tokens (NFKC, casefold; number words included) minus STOPWORDS."""
    return frozenset(stem(NUMBER_WORDS.get(w, w)) for w in re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
                     if w not in STOPWORDS)
