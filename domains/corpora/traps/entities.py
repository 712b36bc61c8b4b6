"""entity_swap: one named entity replaced by another of the same swap group (country, city, person,
organisation, product sub-type, programming language), from `gazetteer`.

Matching: a name counts in its canonical spelling ("Python", "New York", "the UK"), or all lower case
when the name is no ordinary word (`gazetteer.AMBIGUOUS`) and, for a person, when the whole text is
lower case (MASSIVE). Refused: a name in a protected region; inside a longer capitalised run ("New
York Times", "Bank of England", "Paris Hilton"); before a word that makes it part of another name
("london bridge", "python package index"? no: only place/organisation suffixes); an ambiguous name at
a sentence start or, for a language, without a code word near it ("Go", "R", "Swift"); a name that
occurs twice (one swap would leave the other); a person when the text has gendered pronouns (the swap
could break agreement); a city or a country when the text also names a place that contains it or
that it contains ("Paris, France").
Targets: same group, unambiguous, not already in the text; countries from the same continent first.
The replacement keeps the source's case style (lower case stays lower case)."""
from __future__ import annotations

import random
import re
from functools import lru_cache

from domains.corpora.traps import gazetteer as gz
from domains.corpora.traps.text import Edit, in_title_run, is_free, make_edit, protected, sentence_initial, words

Found = tuple[list[Edit], list[str]]

_SUFFIX = frozenset("times post city university college airport street st avenue road park hotel club fc united "
                    "county state bridge river tower bank mall square station stadium zoo museum house press "
                    "news journal herald tribune open cup motors airlines group foundation institute maps drive "
                    "cloud store music pay prime video studio docs sheets".split())
_PLACE_FOLLOW = frozenset("is are was were has have had and or in on at to for of from with by than that which who "
                          "where when during since after before compared vs versus but so as like".split())
_INSTITUTION_OF = (frozenset("bank university college institute museum republic kingdom church school ministry "
                             "department council court board embassy government".split()), frozenset({"of"}))
_PRONOUNS = re.compile(r"\b(?:he|him|his|himself|she|her|hers|herself)\b", re.I)
_CODE_NEAR = 4


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern:
    names = sorted(gz.index(), key=len, reverse=True)
    alts = "|".join(re.escape(n) for n in names)
    return re.compile(rf"(?<![\w+#.-])(?:the\s+)?({alts})(?![\w+#]|-\w)", re.I)


def _form_ok(found: str, canon: str, kind: str, text: str) -> bool:
    """Whether the spelling in the text is one we trust for this name: the canonical spelling, an
    alias as written in the gazetteer ("US", "UK"), or the canonical name all in lower case when it
    is no ordinary word (and, for a person, only in an all-lower-case text)."""
    bare = canon.removeprefix("the ")
    if found == bare or found in _alias_spellings(canon):
        return True
    if found == bare.lower() and bare.lower() not in gz.AMBIGUOUS and len(found) >= 4:
        if kind.startswith(("person", "organisation", "product")):
            return text == text.lower()      # lower-case names of people and brands only in lower-case texts
        return True
    return False


@lru_cache(maxsize=None)
def _alias_spellings(canon: str) -> tuple[str, ...]:
    import json
    cur = json.loads(gz.CURATED.read_text(encoding="utf-8"))
    return tuple(a.removeprefix("the ") for a in cur["country_alias"].get(canon, []))


_LANG_TARGETS = frozenset("Python JavaScript Java C++ C# TypeScript PHP Kotlin Ruby Rust Swift Perl Haskell Scala "
                          "MATLAB".split())


def _targets(kind: str, canon: str, text_low: str) -> list[str]:
    pool = [n for n in gz.groups()[kind] if n != canon and (n.lower() not in gz.AMBIGUOUS or n in _LANG_TARGETS)
            and (kind != "programming_language" or n in _LANG_TARGETS)
            and n.removeprefix("the ").lower() not in text_low]
    if kind == "country":
        cont = gz.continent_of(canon)
        same = [n for n in pool if gz.continent_of(n) == cont]
        pool = same or pool
    return pool


def entities(text: str, rng: random.Random) -> Found:
    spans, toks, edits, drops = protected(text), words(text), [], []
    low = text.lower()
    matches = list(_pattern().finditer(text))
    canon_count: dict[str, int] = {}
    for m in matches:
        hit = gz.lookup(m.group(1))
        if hit:
            canon_count[hit[1]] = canon_count.get(hit[1], 0) + 1
    for m in matches:
        found = m.group(1)
        kind, canon = gz.lookup(found)
        has_the = m.group(0).lower().startswith("the")
        if canon.startswith("the ") and not has_the and found.lower() not in {a.lower() for a in _alias_spellings(canon)}:
            drops.append("article_missing")
            continue
        if not _form_ok(found, canon, kind, text):
            drops.append("spelling_not_trusted")
            continue
        if not is_free(spans, m.start(1), m.end(1)):
            drops.append("protected")
            continue
        ti = next((k for k, t in enumerate(toks) if t.start == m.start(1)), None)
        tj = next((k + 1 for k, t in enumerate(toks) if t.end >= m.end(1)), None)
        if ti is None or tj is None:
            drops.append("token_boundary")
            continue
        nxt = toks[tj].low if tj < len(toks) else ""
        if (found[:1].isupper() and in_title_run(text, toks, ti, tj)) or nxt in _SUFFIX:
            drops.append("title_run")
            continue
        if kind in ("country", "city") and nxt and nxt not in _PLACE_FOLLOW and text[m.end(1):m.end(1) + 1] == " ":
            drops.append("place_as_modifier")   # "UK law", "London weather": "Norway law" reads wrong
            continue
        if canon_count[canon] > 1:
            drops.append("repeated_entity")
            continue
        prev = toks[ti - 1].low if ti > 0 else ""
        before = text[:m.start()].rstrip()
        if prev in ("ok", "okay", "hey") or (prev in _INSTITUTION_OF[1] and ti >= 2 and toks[ti - 2].low in _INSTITUTION_OF[0]) \
                or (nxt and gz.lookup(toks[tj].text)) or (before.endswith(",") and kind in ("city", "country")) \
                or re.match(r",\s*[A-Z]", text[m.end(1):]) and kind == "city":
            drops.append("part_of_a_longer_name")
            continue
        if canon.lower() in gz.AMBIGUOUS or found.lower() in gz.AMBIGUOUS:
            near = {t.low for t in toks[max(0, ti - _CODE_NEAR):tj + _CODE_NEAR]}
            if kind != "programming_language" or sentence_initial(text, m.start(1)) or not near & gz.CODE_WORDS:
                drops.append("ambiguous_name")
                continue
        if kind.startswith("person") and _PRONOUNS.search(text):
            drops.append("gendered_pronoun")
            continue
        if kind in ("city", "country") and _place_conflict(kind, canon, matches):
            drops.append("nested_places")
            continue
        pool = _targets(kind, canon, low)
        if not pool:
            drops.append("no_target")
            continue
        target = rng.choice(pool)
        start = m.start(1)
        if has_the and canon.startswith("the "):
            start = m.start()
        if target.startswith("the ") and not (has_the and canon.startswith("the ")):
            if re.search(r"\bthe\s+$", text[:start], re.I):
                target = target[4:]
        elif target.startswith("the ") and has_the:
            target = m.group(0)[:3] + target[3:]
        new = target.lower() if found == found.lower() else target
        edits.append(make_edit(text, start, m.end(1), new, kind))
    return edits, drops


def _place_conflict(kind: str, canon: str, matches) -> bool:
    for m in matches:
        other = gz.lookup(m.group(1))
        if not other or other[1] == canon:
            continue
        if kind == "city" and other[0] == "country":
            return True
        if kind == "country" and other[0] == "city" and gz.country_of(other[1]) == canon:
            return True
    return False
