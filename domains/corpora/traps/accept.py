"""The acceptance rule every trap must pass, written apart from the operators: it tokenises on its own
(`\\w+` runs and single symbols), finds the one span where the two texts differ (the longest common
token prefix and suffix; the rest of both texts must be byte-identical), and names the operator whose
kind of pair that span is. A two-span change, a change of case or spacing only, or a pair of no
known kind is rejected with a reason.

The known pairs: the word tables (`tables.py`), the gazetteer (same swap group, another name),
numbers (same format, another value; a year, a clock hour or a duration count is a date/time),
and three structural forms: "not" added or removed right after an auxiliary, "X <comparative> than
Y" with X and Y swapped, a year widened to "between Y1 and Y2" around it, and a country or city
widened to the continent or country that holds it."""
from __future__ import annotations

import re

from domains.corpora.traps import gazetteer as gz
from domains.corpora.traps import tables as T

_TOKEN = re.compile(r"\w+|[^\w\s]")
_AUX = frozenset("is are was were can could should will would does do did has have am".split())
_NUMERIC = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_UNIT_ATTACHED = re.compile(r"(\d[\d,.]*)([^\d\s].*)")
_YEAR = re.compile(r"(?:18|19|20)\d\d")
_CLOCK_AFTER = re.compile(r"\s?(?:a\.? ?m\.?|p\.? ?m\.?|o'clock)", re.I)
_WORD_NUMS = frozenset(T.NUMBER_WORDS) | {"one"}

POLARITY = T.pair_set(T.POLARITY) | T.pair_set([("biggest", "smallest"), ("smallest", "largest"),
                                                ("most expensive", "cheapest")])
NEGATION = T.pair_set(T.NEGATION)
COMPARISON = T.pair_set(T.COMPARISON)
UNITS = T.pair_set(T.UNITS) | T.pair_set([("kilometers", "mile"), ("km", "mi"), ("lbs", "lb"), ("kg", "lb")]) | \
    T.pair_set([(a, b) for a, b in [("miles", "kilometer"), ("kilometers", "mile"), ("kilometres", "mile"),
                                    ("pounds", "kilogram"), ("kilograms", "pound"), ("meters", "foot"),
                                    ("feet", "meter"), ("inches", "centimeter"), ("centimeters", "inch"),
                                    ("gallons", "liter"), ("liters", "gallon"), ("dollars", "euro"),
                                    ("euros", "dollar"), ("metres", "foot"), ("litres", "gallon")]])
SCOPE = T.pair_set(T.QUANTIFIERS) | T.pair_set(T.TIME_WINDOWS)
DATES = T.pair_set(T.RELATIVE_DAYS)


def _diff(a: str, b: str) -> tuple[int, int, int] | None:
    """(start, end in a, end in b) of the one differing span, in characters; None when equal."""
    ta = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(a)]
    tb = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(b)]
    p = 0
    while p < min(len(ta), len(tb)) and ta[p][0] == tb[p][0]:
        p += 1
    s = 0
    while s < min(len(ta), len(tb)) - p and ta[-1 - s][0] == tb[-1 - s][0]:
        s += 1
    if p == len(ta) == len(tb):
        return None
    start = ta[p - 1][2] if p else 0
    end_a = ta[len(ta) - s][1] if s else len(a)
    end_b = tb[len(tb) - s][1] if s else len(b)
    return start, end_a, end_b


def _article_ok(b: str, start: int, new: str) -> bool:
    m = re.search(r"\b(an?) $", b[:start], re.I)
    if not m or not new:
        return True
    first = new.strip().lower()
    vowel = first[:1] in "aeiou" or first.startswith(("hour", "honest", "8", "11 ", "18 "))
    if first.startswith(("uni", "use", "usu", "eu", "one")):
        vowel = False
    return (m.group(1).lower() == "an") == vowel or new.strip()[:2].isupper()


def _strip_article(old: str, new: str) -> tuple[str, str]:
    mo, mn = re.match(r"(?i)(an?) (.+)", old, re.S), re.match(r"(?i)(an?) (.+)", new, re.S)
    if mo and mn and mo.group(1).lower() != mn.group(1).lower():
        return mo.group(2), mn.group(2)
    return old, new


def accept(a: str, b: str) -> tuple[str | None, str]:
    """(operator name, reason) when b differs from a by exactly one known answer-determining span;
    (None, why not) otherwise."""
    d = _diff(a, b)
    if d is None:
        return None, "identical tokens" if a == b else "differs only in spacing or punctuation-free layout"
    start, end_a, end_b = d
    if a[:start] != b[:start] or a[end_a:] != b[end_b:]:
        return None, "more than one span differs (outside the token span)"
    old, new = a[start:end_a].strip(), b[start:end_b].strip()
    lead = len(b[start:end_b]) - len(b[start:end_b].lstrip())
    start_b = start + lead
    if old.lower() == new.lower() and old and new:
        return None, "case-only change"
    if not _article_ok(b, start_b, new):
        return None, "a/an does not fit the new word"
    old, new = _strip_article(old, new)
    name = _classify(a, b, start, end_a, old, new)
    if name is None and old and new:
        # a shared word can sit inside a known phrase: "this week" -> "this month" differs in one word
        before = re.search(r"(\w+)\s*$", a[:start])
        after = re.match(r"\s*(\w+)", a[end_a:])
        if before:
            name = _classify(a, b, before.start(1), end_a, f"{before.group(1)} {old}", f"{before.group(1)} {new}")
        if name is None and after:
            name = _classify(a, b, start, end_a + after.end(), f"{old} {after.group(1)}", f"{new} {after.group(1)}")
        if name not in ("scope_change", "date_time_change", "comparison_flip", "polarity_flip"):
            name = None
    if name is None:
        return None, f"not a known pair: {old!r} -> {new!r}"
    return name, f"{old!r} -> {new!r}"


def _classify(a: str, b: str, start: int, end_a: int, old: str, new: str) -> str | None:
    lo, ln = old.lower().strip(), new.lower().strip()
    prev = re.findall(r"\w+", a[:start])[-1:] or [""]
    after = a[end_a:]
    if (lo, ln) in (("", "not"), ("not", "")) and prev[0].lower() in _AUX:
        return "polarity_flip"
    if (lo, ln) in NEGATION or (lo, ln) in POLARITY:
        return "polarity_flip"
    if (lo, ln) in COMPARISON or _is_direction_swap(old, new):
        return "comparison_flip"
    if (lo, ln) in UNITS or (lo, ln) in (("$", "€"), ("€", "$")):
        return "unit_change"
    ma, mb = _UNIT_ATTACHED.fullmatch(old), _UNIT_ATTACHED.fullmatch(new)
    if ma and mb and ma.group(1) == mb.group(1) and (ma.group(2).lower(), mb.group(2).lower()) in UNITS:
        return "unit_change"
    if (lo, ln) in SCOPE or _is_widening(old, new):
        return "scope_change"
    if (lo, ln) in DATES or _is_date_change(lo, ln, after):
        return "date_time_change"
    if _NUMERIC.fullmatch(lo) and _NUMERIC.fullmatch(ln) and lo != ln:
        if not ((lo.replace(",", "").isdigit()) == (ln.replace(",", "").isdigit()) and ("," in lo) == ("," in ln)):
            return None
        return "number_change"
    ga, gb = gz.lookup(old), gz.lookup(new)
    if ga and gb and ga[0] == gb[0] and ga[1] != gb[1]:
        return "entity_swap"
    return None


def _is_date_change(lo: str, ln: str, after: str) -> bool:
    days = set(T.WEEKDAYS)
    if lo.rstrip("s") in days and ln.rstrip("s") in days and lo != ln:
        return True
    if lo in T.MONTHS and ln in T.MONTHS:
        return True
    if _YEAR.fullmatch(lo) and _YEAR.fullmatch(ln):
        return True
    nums = (lo.isdigit() and ln.isdigit()) or (lo in _WORD_NUMS and ln in _WORD_NUMS)
    if nums and _CLOCK_AFTER.match(after):
        return True
    unit = re.match(r"\s*-?\s*([A-Za-z]+)", after)
    return bool(nums and unit and unit.group(1).lower() in T.DURATION_UNITS)


def _is_direction_swap(old: str, new: str) -> bool:
    m = re.fullmatch(r"(\S+) (.+ than) (\S+)", old)
    return bool(m) and new == f"{m.group(3)} {m.group(2)} {m.group(1)}" and m.group(1) != m.group(3)


def _is_widening(old: str, new: str) -> bool:
    m = re.fullmatch(r"in ((?:18|19|20)\d\d)", old) or re.fullmatch(r"((?:18|19|20)\d\d)", old)
    w = re.fullmatch(r"(?:in )?between ((?:18|19|20)\d\d) and ((?:18|19|20)\d\d)", new)
    if m and w:
        return int(w.group(1)) < int(m.group(1)) < int(w.group(2))
    place = gz.lookup(old)
    if not place:
        return False
    wider = new.strip()
    if place[0] == "country":
        return gz.continent_of(place[1]) == wider
    if place[0] == "city":
        return gz.country_of(place[1]) == wider
    return False
