"""Word lists of the reference verified cache's features (verified_text.py, verified_features.py).

`word_lists()` loads the project's own lists on first use (the harness imports nothing heavy): the
tokeniser, pair rule, languages and directions of domains.corpora.mining, its creative-request rule
and creative nouns (mining.single.CREATIVE_REQUEST, CREATIVE_NOUNS), the no-hit words of function
calling (domains.corpora.bfcl.NO_HIT_WORDS), and the number, entity, stopword and time rules of
domains.corpora.common and domains.text. Only their public names are read, and editing any of them
changes this cache's features (and so its trained classifier and every report of it): bump
verified_features.FEATURE_VERSION when one changes. The few lists that exist nowhere else (policy
prototypes, negation, operator words, units, natural-language stopwords) are here.
Standard library only.
"""
from __future__ import annotations

import re
from typing import Any

# Prototype requests for the policy signals (MiniLM cosine of each query to each).
PROTOTYPES = {
    "creative": "Write me a poem, a short story, song lyrics, a slogan or a joke.",
    "live": "What is the weather, the price or the latest news right now, today?",
    "action": "Send, delete, book, pay, order, set or change something for me.",
}

# Words that negate (en, de, fr, es, it, pt, nl); "n't" is tokenised as "t".
NEGATION = frozenset("""not no never none nothing nobody neither nor cannot without t isnt dont doesnt
didnt cant wont nicht kein keine keinen nie ohne ne pas jamais sans ni nunca sin nada non senza mai
nao não sem nunca niet geen nooit zonder""".split())
# Words naming an arithmetic operation or comparison.
OPERATOR_WORDS = frozenset("""plus minus times multiplied divided over sum difference product quotient
add subtract multiply divide squared cubed root power modulo mod greater less equal exceeds""".split())
OPERATOR_SYMBOLS = frozenset("+-*/^=<>%√×÷·")
UNITS = re.compile(
    r"(?<![^\W\d])(?:km|kms|m|cm|mm|kg|g|mg|lb|lbs|oz|l|ml|mph|kmh|km/h|m/s|ft|in|yd|mi|s|ms|h|hr|hrs|min|mins|"
    r"°c|°f|c|f|k|%|percent|kilomet(?:er|re)s?|met(?:er|re)s?|centimet(?:er|re)s?|millimet(?:er|re)s?|"
    r"miles?|feet|foot|inch(?:es)?|yards?|grams?|kilograms?|kilos?|pounds?|ounces?|lit(?:er|re)s?|"
    r"millilit(?:er|re)s?|gallons?|gal|quarts?|pints?|cups?|tablespoons?|teaspoons?|seconds?|minutes?|"
    r"hours?|days?|weeks?|months?|years?|celsius|fahrenheit|kelvin|degrees?|dollars?|euros?|pounds?|"
    r"usd|eur|gbp|jpy|cents?|bytes?|kb|mb|gb|tb|watts?|volts?|hz|khz|mhz|ghz|acres?|hectares?)(?![\w])")
# A handful of frequent function words per language, enough to tell the languages of the
# multilingual seeds and the corpora (PAWS-X, XQuAD, MASSIVE) apart on a short question.
LANG_STOPWORDS = {
    "en": frozenset("the is are what which who how of in on to a an and do does did you my for with it this that "
                    "be can from me your at by".split()),
    "de": frozenset("der die das ist sind was welche welcher welches wer wie von in im auf und ein eine nach vor man".split()),
    "fr": frozenset("le la les est sont que quel quelle qui comment de du des en et un une après avant on".split()),
    "es": frozenset("el la los las es son qué que cuál quién cómo de del en y un una después antes se".split()),
    "it": frozenset("il lo la gli le è sono che quale chi come di del della in e un una dopo prima si".split()),
    "pt": frozenset("o a os as é são que qual quem como de do da em e um uma depois antes se".split()),
    "nl": frozenset("de het een is zijn wat welke wie hoe van in op en na voor men komt".split()),
}

# ---- the project's word lists, imported when first used

_LISTS: dict[str, Any] = {}


def word_lists() -> dict[str, Any]:
    """The project's word lists and rules the features read, by key (loaded once)."""
    if not _LISTS:
        from domains import text
        from domains.base import normalize_text
        from domains.corpora import common, mining
        from domains.corpora.bfcl import NO_HIT_WORDS
        from domains.corpora.mining.single import CREATIVE_NOUNS, CREATIVE_REQUEST

        _LISTS.update(
            tokens=mining.tokens, classify=mining.classify, languages=mining.LANGUAGES,
            directions=mining.DIRECTIONS, direction_words=mining.DIRECTION_WORDS,
            creative=CREATIVE_REQUEST,
            number_set=common.number_set, entities=common.entities, content_stems=common.content_stems,
            words=common.words, stopwords=common.STOPWORDS, constraint_words=common.CONSTRAINT_WORDS,
            time_sensitive=text.time_sensitive, time_scopes=text.time_scopes, script=text.script,
            normalize=normalize_text,
        )
        # a time scope or a live topic (weather, prices, news): domains.text.live_request
        _LISTS["live"] = text.live_request
        # the creative nouns of mining's creative-request rule, without its verb
        _LISTS["creative_nouns"] = re.compile(CREATIVE_NOUNS, re.IGNORECASE)
        # the no-hit words as whole words (the BFCL guard matches inside words: "address" has "add")
        _LISTS["no_hit_words"] = re.compile(r"\b(?:" + NO_HIT_WORDS + r")(?:s|es|ed|d|ing)?\b", re.IGNORECASE)
    return _LISTS
