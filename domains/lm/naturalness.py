"""Wordings no user writes: the patterns blind readers flagged in model-written rows.

An LM row must read as a person would write it. Both blind readers of the first 130 LM rows
flagged the same 41 as unnatural ("Which continent does Estonia live in?", "synonyms for X in
thesaurus", "What are my tips for beginners ..."); each pattern below names one kind of slip they
found, or one of the same kinds found reading the rows of the widened run, so a rewording or a
rewrite showing it is dropped with the counted reason `unnatural:<kind>` (never edited). The rules
look at one text at a time and say nothing about the answer; the answer-token rules (rules.py) and
the domains' resolvers decide that.

`unnatural(text)` names the first pattern `text` shows, or None. `pair_problem(a, b)` applies two
checks to any two texts that stand side by side (a seed and its rewording, the two sides of a
pair): `scope_changed` catches a request for one thing turned into one for a kind of thing ("your
favourite podcast" / "what type of podcast"), `kind_changed` a holiday calendar swapped for
another ("public" / "national holidays": India has three national holidays and many public ones).
"""
from __future__ import annotations

import re

_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_VERBS = re.compile(r"\b(?:is|are|was|were|am|be|do|does|did|can|could|should|would|will|shall|may|might|must|"
                    r"have|has|had)\b|['’](?:s|re|ve|ll|d|m)\b", re.IGNORECASE)

# kind -> pattern; a text matching one reads as no user would write it
_CASED = {"place_that_lives", "continent_is_place", "country_having"}   # a capital letter marks a name
PATTERNS: dict[str, re.Pattern] = {k: re.compile(p, 0 if k in _CASED else re.IGNORECASE) for k, p in {
    # "Which continent does Estonia live in?": a country does not live on a continent
    "place_that_lives": r"\b(?:[Dd]oes|[Dd]o)\s+(?:the\s+)?[A-Z][a-z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*\s+lives?\b",
    # "the largest moon in Saturn", "the moon that is the largest on Saturn"
    "moon_in_planet": r"\bmoons?\s+in\s+(?:Mercury|Venus|Earth|Mars|Jupiter|Saturn|Uranus|Neptune|Pluto)\b",
    "relative_superlative": r"\bthat\s+is\s+the\s+(?:largest|biggest|smallest|longest|highest|tallest|oldest)\b",
    # "What element does have atomic number 13?", "the Gambia part of belong to"
    "does_have": r"\b(?:what|which)\s+\w+\s+(?:does|do|did)\s+(?:have|has)\b",
    "verb_after_preposition": r"\b(?:of|in|on|for)\s+(?:belong|belongs|lie|lies|live|lives)\b",
    # "synonyms for X in thesaurus", "found in dictionary": no article
    "article_missing": r"\b(?:in|from|on)\s+(?:thesaurus|dictionary)\b",
    # "How do you show me the driving route ...": asks how the assistant does it, for the user
    "how_do_you_me": r"\bhow\s+(?:do|does)\s+(?:you\s+(?:show|give|tell|find|get|send)\s+me|I\s+(?:show|give|tell|send)\s+you)\b",
    # "How do you find the time zone of Seattle?", "How do you plan a driving route ...": asks for a
    # method, not for the information
    "asks_for_a_method": r"^\s*how\s+(?:do|can|should)\s+(?:you|I)\s+(?:find|look\s+up|plan|get|check|see|search)\b",
    # "What are my tips for beginners ...": the user asks for their own tips
    "own_tips": r"\b(?:what|which)\s+(?:are|is)\s+my\s+(?:tips|advice|suggestions|recommendations|precautions)\b"
                r"|\b(?:tips|advice)\s+are\s+you\s+using\b",
    # "The best way to treat a hangover is to what?", "Strength training can be effective for experts.
    # What should I do?": a claim (or half an answer) before the question
    "states_a_claim": r"^\s*the\s+best\s+way\s+to\b.*\bis\s+to\b|\bcan\s+be\s+(?:very\s+)?effective\s+for\b",
    # "What should I start gardening?", "What should a beginner just start running?"
    "start_object": r"\bwhat\s+should\s+(?:a\s+beginner|I|you)\s+(?:just\s+)?start\s+(?!with\b|by\b|on\b)",
    # "What problems are problems with electric cars?", "Which public holidays are public in France?"
    "word_repeated": r"\b(\w{4,})(?:\s+\w+)?\s+(?:are|is)\s+\1\b",
    # "What time zone is Seattle located?"
    "located_no_preposition": r"^\s*(?:what|which)\s+time\s+zone\s+is\b.*\blocated\s*\?",
    # "What does "ubiquitous" mean in terms of fashion?": a scope no user adds to a lookup
    "in_terms_of": r"\bin\s+terms\s+of\b",
    # "What public holiday is India having in 2026?"
    "country_having": r"\bis\s+(?:the\s+)?[A-Z][\w'’-]*\s+having\b",
    # "advice for a nervous about your job interview": an adjective where a noun belongs
    "adjective_as_noun": r"\b(?:a|an|the)\s+(?:nervous|anxious|worried|scared|afraid)\s+(?:about|before|of|for)\b",
    # "train a first marathon": the preposition went missing
    "train_a_race": r"\btrain\s+(?:a|an|my|your|the)\s+(?:first\s+)?(?:marathon|half-marathon|race|triathlon)\b",
    # "What's on a weekend trip to Lisbon?": asks what a trip contains, not what to see
    "whats_on_a_trip": r"^\s*what['’]s\s+on\s+an?\s+(?:\w+\s+)?(?:trip|visit|holiday|break)\b",
    # "What element is the atomic number 13?": an element is not a number
    "element_is_number": r"\belement\s+is\s+(?:the\s+)?atomic\s+number\b",
    # "What continent is Slovakia?": the preposition went missing
    "continent_is_place": r"^\s*(?:[Ww]hat|[Ww]hich)\s+continent\s+is\s+(?:the\s+)?[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*\s*\?\s*$",
    # "In what year did Nineteen Eighty-Four first be published?"
    "did_be": r"\b(?:did|does|do)\b[^?.!]*\bbe\s+\w+ed\b",
    # "In which city hosted the 1976 Summer Olympics?": a preposition before the subject
    "preposition_subject": r"^\s*in\s+(?:which|what)\s+\w+\s+(?!(?:is|was|were|are|did|does|do|has|have|had|will|can)\b)\w+ed\b",
    # "What about a houseplant ...?": a follow-up with no earlier turn
    "follow_up_opening": r"^\s*(?:what|how)\s+about\b",
    # "the antiderivative of the integral of ...": the operation named twice
    "operation_twice": r"\b(?:antiderivative|integral|derivative)\s+of\s+the\s+(?:antiderivative|integral|derivative)\b",
    # "What tips are effective for experts in rock climbing?", "What tips are best for experts in
    # gardening?": read as made from a template (blind readers of the 161 LM rows)
    "tips_are_for": r"\btips\s+are\s+(?:\w+\s+)?for\s+(?:experts|beginners|an?\s+\w+)\b",
    # "May 15, 2024 to 2024-06-14": one range written in two date formats
    "mixed_date_formats": rf"\b{_MONTH}\s+\d{{1,2}},\s+\d{{4}}\b.*\b\d{{4}}-\d{{2}}-\d{{2}}\b"
                          rf"|\b\d{{4}}-\d{{2}}-\d{{2}}\b.*\b{_MONTH}\s+\d{{1,2}},\s+\d{{4}}\b",
}.items()}
# "What tips for beginners in running?", "What sights for two days in Lisbon?": a wh-question with no verb
_WH = re.compile(r"^\s*(?:what|which)\s+\w+\s+(?:for|in|on|about|to)\b", re.IGNORECASE)
_KIND_OF = re.compile(r"\b(?:types?|kinds?|genres?|sorts?|categor(?:y|ies)|styles?)\s+of\b", re.IGNORECASE)
# words that name different sets of days; a rewording must not swap one for the other
_HOLIDAY_KINDS = ("public", "national", "bank", "federal", "religious", "school")


def unnatural(text: str) -> str | None:
    """The first unnatural pattern `text` shows ("own_tips", "no_verb", ...), or None."""
    for kind, pattern in PATTERNS.items():
        if pattern.search(text):
            return kind
    if _WH.search(text) and text.rstrip().endswith("?") and not _VERBS.search(text):
        return "no_verb"
    return None


def scope_changed(seed: str, para: str) -> bool:
    """True when one text asks for a type, kind or genre of thing and the other does not
    ("your favourite true-crime podcast" vs "what type of true-crime podcast")."""
    return bool(_KIND_OF.search(seed)) != bool(_KIND_OF.search(para))


def kind_changed(seed: str, para: str) -> bool:
    """True when the two texts name different kinds of holiday ("public" vs "national"): the
    sets differ (India has three national holidays and many more public ones)."""
    def kinds(t: str) -> set[str]:
        return {k for k in _HOLIDAY_KINDS if re.search(rf"\b{k}\b", t, re.IGNORECASE)}
    holiday = re.compile(r"\bholidays?\b", re.IGNORECASE)
    return bool(holiday.search(seed) or holiday.search(para)) and kinds(seed) != kinds(para)


_UPSIDE = re.compile(r"\b(?:benefits?|advantages?|pros|upsides?|plus\s+points|good\s+points|positives)\b", re.IGNORECASE)


def upside_pair(a: str, b: str) -> bool:
    """True when both texts ask for the good side of something in one of the usual words ("the pros
    of X" / "the upsides of X"): blind readers found many pairs of this one pattern, so a task
    keeps few of them (domains/lm/generate.py MAX_UPSIDE_PAIRS)."""
    return bool(_UPSIDE.search(a) and _UPSIDE.search(b))


def pair_problem(a: str, b: str) -> str | None:
    """Why two wordings do not ask for the same thing although each keeps its seed's tokens, or None."""
    if scope_changed(a, b):
        return "scope_changed"
    if kind_changed(a, b):
        return "attribute_changed"
    return None
