"""Word-pair operators: polarity_flip, comparison_flip, unit_change, scope_change. Each returns every
edit it would make on a text (the caller picks one, seeded) and the reasons it refused the others.

Context rules, each there because the plain swap made a wrong or ungrammatical pair:
- a word is never edited inside a protected region (code, quotes, URLs, placeholders) or when it is
  capitalised in mid-sentence (part of a title or a name: "Best Buy", "Higher Education Act");
- a pole is never flipped when its partner is already in the text ("pros and cons" -> "cons and cons");
- "with" is never turned into "without" (help with, deal with: mostly not a presence); "without" is;
- before/after only in mid-sentence and not before a subject pronoun ("before you answer" is an
  instruction); best/worst not in "do your best", "best regards", "best friend", "at best";
- negation is removed only right after an auxiliary, never at a sentence start (a negative question
  asks the same as a positive one) nor after "I" ("I don't understand X, explain" asks the same);
  negation is added only to is/are/was/were/can/should/will/could/would after a noun or "it/they/
  there", never in questions (after a wh-word or an auxiliary), never after "this/that/here";
- a comparative flips only in a comparison: "than" follows, or a copula/degree word precedes;
  more/less/most/least only before an adjective-like word; over/under/above/below only before a number;
- a unit word flips only after a number or after in/to/into/per/many/much, and "feet", "pounds", "m"...
  only right after a number; 1 keeps the singular;
- a quantifier flips only where the noun phrase stays grammatical (all + plural noun, not "all the");
- a region widens only after in/across/within/throughout; a year widens only after "in"."""
from __future__ import annotations

import re

from domains.corpora.traps import gazetteer as gz
from domains.corpora.traps import tables as T
from domains.corpora.traps.text import (AUX, DETERMINERS, WH, Edit, adjective_like, capitalised, in_title_run,
                                        is_free, make_edit, match_case, protected, sentence_initial, words)

Found = tuple[list[Edit], list[str]]

_POLAR_SRC = {a: b for a, b in T.POLARITY if a != "without"} | {b: a for a, b in T.POLARITY if b != "with"}
_POLAR_SRC["biggest"] = "smallest"
_POLAR_SRC["smallest"] = "largest"
_POLAR_SRC["most expensive"] = "cheapest"
_PARTNERS = {w: {p for a, b in T.POLARITY for p in (a, b) if w in (a, b)} for w in _POLAR_SRC}
_BEST_BAD = re.compile(r"(?:your|my|our|at|his|her|their)\s+$", re.I)
_BEST_BAD_AFTER = frozenset("regards wishes friend friends buy".split())
_ODD_LEAST = frozenset("recent recently likely common used".split())
_NPI = re.compile(r"\b(?:anymore|any more|yet|ever|at all|either|anything|anyone|anybody)\b", re.I)
_SUBJECTS = frozenset("you i we they he she it the this".split())


def _word_edits(text: str, table: dict[str, str], kind: str) -> tuple[list[tuple], list[str]]:
    """(token index, token, target) for every table word in a free, non-title position."""
    toks, spans = words(text), protected(text)
    hits, drops = [], []
    for i, t in enumerate(toks):
        if t.low not in table:
            continue
        if not is_free(spans, t.start, t.end):
            drops.append("protected")
        elif capitalised(t.text) and not sentence_initial(text, t.start):
            drops.append("capitalised_mid_sentence")
        elif t.text.isupper() and len(t.text) > 1:
            drops.append("upper_case")
        else:
            hits.append((i, t, table[t.low]))
    return hits, drops


def polarity(text: str) -> Found:
    toks = words(text)
    lows = {t.low for t in toks}
    hits, drops = _word_edits(text, _POLAR_SRC, "polarity")
    lexical = []
    for i, t, target in hits:
        nxt = toks[i + 1].low if i + 1 < len(toks) else ""
        prev = toks[i - 1].low if i > 0 else ""
        if _PARTNERS[t.low] - {t.low} & lows:
            drops.append("partner_present")
        elif t.low in ("before", "after") and (sentence_initial(text, t.start) or nxt in _SUBJECTS or not nxt
                                               or nxt in ("a", "an", "the", "that", "this") or nxt[:1].isdigit()):
            drops.append("clause_before_after")
        elif t.low == "best" and (_BEST_BAD.search(text[:t.start]) or nxt in _BEST_BAD_AFTER or nxt == "of"):
            drops.append("idiom_best")
        elif t.low in ("most", "least") and not (prev == "the" and adjective_like(nxt) and nxt not in _ODD_LEAST):
            drops.append("most_not_superlative")
        elif t.low in ("positive", "negative") and nxt in ("about", "that", "side"):
            drops.append("idiom_positive")
        elif t.low in ("advantage",) and prev in ("take", "taking", "takes", "took"):
            drops.append("idiom_take_advantage")
        else:
            lexical.append(make_edit(text, t.start, t.end, match_case(t.text, target), "lexical"))
    if lexical:
        return lexical, drops
    if _NPI.search(text):
        drops.append("negative_polarity_item")
        return [], drops
    return _negation(text, toks), drops


_NEG_WORDS = {b.split()[0] if " " in b else a: None for a, b in T.NEGATION}
_CONTRACT = {a: b for a, b in T.NEGATION if "'" in a}
_ADD = {"is": "is not", "are": "are not", "was": "was not", "were": "were not", "can": "cannot",
        "should": "should not", "will": "will not", "could": "could not", "would": "would not"}
ADD_NEGATION = False   # adding "not" made too many odd requests in review ("there are not certain parts")
_ADD_AFTER_OK = frozenset("it they there he she we".split())
_NO_ADD_AFTER = WH | AUX | frozenset("this that here which i to and or but if so also not n't".split())


def _question(text: str, at: int) -> bool:
    """Whether the sentence around `at` is a question (ends in "?" or opens with a wh-word or an
    auxiliary): negation is not added there, its place in a question is not the auxiliary's."""
    start = max(text.rfind(c, 0, at) for c in ".!?\n") + 1
    ends = [i for i in (text.find(c, at) for c in ".!?\n") if i != -1]
    end = min(ends) if ends else len(text)
    first = re.match(r"\s*(\w+)", text[start:])
    return text[end:end + 1] == "?" or bool(first and first.group(1).lower() in WH | AUX)


def _negation(text: str, toks) -> list[Edit]:
    spans = protected(text)
    out = []
    for i, t in enumerate(toks):
        prev = toks[i - 1].low if i > 0 else ""
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if not is_free(spans, t.start, t.end) or (nxt is not None and not is_free(spans, nxt.start, nxt.end)):
            continue
        low = t.low.replace("’", "'")
        if sentence_initial(text, t.start) or prev == "i":
            continue
        if low in _CONTRACT and nxt is not None and nxt.low not in ("you", "i", "we", "it", "they"):
            out.append(make_edit(text, t.start, t.end, match_case(t.text, _CONTRACT[low]), "negation_removed"))
        elif low == "cannot":
            out.append(make_edit(text, t.start, t.end, match_case(t.text, "can"), "negation_removed"))
        elif low in AUX and nxt is not None and nxt.low == "not" and text[t.end:nxt.start] == " " \
                and i + 2 < len(toks) and toks[i + 2].low not in ("only", "just", "even", "sure", "too", "very"):
            out.append(Edit(t.start, nxt.end, text[t.start:nxt.end], t.text, "negation_removed"))
        elif ADD_NEGATION and low in _ADD and nxt is not None and nxt.low not in ("not", "you", "i", "we", "they", "it", "there", "he", "she") \
                and not _question(text, t.start) and (prev in _ADD_AFTER_OK or (
                    i >= 2 and toks[i - 2].low in DETERMINERS and prev.isalpha() and prev not in _NO_ADD_AFTER)):
            out.append(Edit(t.start, t.end, t.text, match_case(t.text, _ADD[low]), "negation_added"))
    return out


_COMP = dict(p for p in T.COMPARISON if " " not in p[0])
_COMP_BEFORE = frozenset("is are was were be been being get gets getting got become becomes much even far slightly "
                         "bit a no any feel feels make makes way run runs grow grows".split())
_COMP_BAD_AFTER = {"higher": {"education", "ed", "order", "power", "up", "ups"}, "lower": {"case", "bound"},
                   "longer": {"term"}, "later": set(), "over": set(), "under": set()}
_OVER_PREV = frozenset("aged age ages people women men kids children adults students is are be been costs cost "
                       "spend spent earn earns earning weighs weigh weighing score scores scored temperatures".split())
_COMP_IDIOM = re.compile(r"\b(?:better known|better off|how much longer|how much shorter|no longer|any longer|"
                         r"later on|sooner or later|more or less)\b", re.I)
_NUMBER = re.compile(r"\s*[$€£]?\d")
_SWAP = re.compile(r"\b(?P<x>[A-Z][\w+#]*) (?P<mid>(?:is |are )?(?:\w+er|more \w+|less \w+) than )(?P<y>[A-Z][\w+#]*)\b")


def comparison(text: str) -> Found:
    toks, spans = words(text), protected(text)
    edits, drops = [], []
    for m in _SWAP.finditer(text):
        x, y = m.group("x"), m.group("y")
        if gz.lookup(x) and gz.lookup(y) and gz.lookup(x)[0] == gz.lookup(y)[0] and x != y \
                and is_free(spans, m.start(), m.end()) and gz.lookup(x)[0] != "person:first":
            new = f"{y} {m.group('mid')}{x}"
            edits.append(make_edit(text, m.start(), m.end(), new, "direction_swap"))
    if edits:
        return edits, drops      # the direction swap is the stronger trap: "Is Java faster than Python?"
    hits, d = _word_edits(text, _COMP, "comparison")
    drops += d
    for i, t, target in hits:
        nxt = toks[i + 1].low if i + 1 < len(toks) else ""
        prev = toks[i - 1].low if i > 0 else ""
        after = " ".join(x.low for x in toks[i + 1:i + 5])
        than = " than " in f" {after} " and "." not in text[t.end:toks[min(i + 4, len(toks) - 1)].end]
        if t.low in ("over", "under", "above", "below"):
            ok = bool(_NUMBER.match(text[t.end:])) and prev in _OVER_PREV
        elif t.low in ("more", "less"):
            ok = adjective_like(nxt) and prev not in ("no", "any", "the") and nxt != "than" and \
                (not nxt.endswith("ly") or than)
        elif t.low == "fewer":
            ok = True
        elif t.low in ("earlier", "later"):
            ok = than
        else:
            ok = (than or prev in _COMP_BEFORE) and nxt not in _COMP_BAD_AFTER.get(t.low, set())
        partner = {_COMP.get(t.low, "")} | {a for a, b in _COMP.items() if b == t.low}
        if ok and partner & {x.low for x in toks}:
            drops.append("partner_present")     # "higher or lower" -> "higher or higher"
        elif not ok:
            drops.append("not_a_comparison")
        elif _COMP_IDIOM.search(text[max(0, t.start - 9):t.end + 7]):
            drops.append("comparison_idiom")
        elif "than" in after and t.low in ("more", "less") and nxt == "than":
            drops.append("not_a_comparison")
        else:
            edits.append(make_edit(text, t.start, t.end, match_case(t.text, target), "comparative"))
    return edits, drops


_UNIT = {a: b for a, b in T.UNITS}
_UNIT_CASE = {a.lower(): a for a, _ in T.UNITS}
_UNIT_RE = re.compile(r"(?<![\w$€])(?P<num>\d[\d,.]*\s?)?(?P<u>" + "|".join(
    re.escape(u) for u in sorted(_UNIT, key=len, reverse=True)) + r")(?![\w/])")
_UNIT_PREV = re.compile(r"\b(?:in|to|into|per|many|much|from)\s+$", re.I)
_MONEY = re.compile(r"\b(?:atm|pay|paid|cost|costs|price|withdraw\w*|charge\w*|card|bank|spend|spent|money|buy|"
                    r"salary|rent|fee|fees|cash|transfer|account|sterling)\b|£", re.I)
_CASED_UNITS = frozenset({"GB", "MB", "TB", "KB", "USD", "EUR", "GBP", "kWh", "°C", "°F"})
_PLURAL_TO_SINGULAR = {"lbs": "lb", "miles": "mile", "kilometers": "kilometer", "pounds": "pound", "kilograms": "kilogram",
                       "feet": "foot", "meters": "meter", "inches": "inch", "centimeters": "centimeter",
                       "gallons": "gallon", "liters": "liter", "euros": "euro", "dollars": "dollar",
                       "ounces": "ounce", "grams": "gram", "megabytes": "megabyte", "gigabytes": "gigabyte"}


def unit(text: str) -> Found:
    spans, edits, drops = protected(text), [], []
    for m in _UNIT_RE.finditer(text):
        u, num = m.group("u"), (m.group("num") or "")
        if u in ("$", "€"):
            if not re.match(r"\d", text[m.end():m.end() + 1]):
                continue
        elif (u in _CASED_UNITS) != (u.upper() == u and u in _CASED_UNITS) or (u not in _UNIT_CASE.values()):
            continue
        start = m.start("u")
        if not is_free(spans, m.start(), m.end()):
            drops.append("protected")
            continue
        attached = bool(num) and not num.endswith(" ")
        if u in ("m", "g"):
            drops.append("ambiguous_unit_letter")
            continue
        if u.lower() in T.UNITS_NEED_NUMBER and not num:
            drops.append("unit_word_without_number")
            continue
        elif not num and not _UNIT_PREV.search(text[:start]) and u not in ("$", "€"):
            drops.append("unit_without_number")
            continue
        if capitalised(u) and u.lower() == u.lower() and u not in _CASED_UNITS and u[:1] != "°" \
                and u.lower() != u and not sentence_initial(text, start):
            drops.append("capitalised_mid_sentence")
            continue
        target = _UNIT[u]
        if attached and (" " in target or len(target) > 3):
            drops.append("attached_unit_long_target")
            continue
        if u.lower() in ("pound", "pounds") and _MONEY.search(text):
            drops.append("pounds_as_money")
            continue
        rest = (text[:m.start()] + " " + text[m.end():]).lower()
        if any(re.search(rf"(?<![a-z$€]){re.escape(x.lower())}(?!\w)", rest) for x in _UNIT_CASE if len(x) > 1 or x in "$€"):
            drops.append("other_unit_present")
            continue
        if num.strip() in ("1", "1.0") or re.search(r"\b(?:a|an|one|per)\s+$", text[:start]):
            target = _PLURAL_TO_SINGULAR.get(target, target)
        if u[:1].isupper() and u not in _CASED_UNITS and target[:1].islower():
            target = target[:1].upper() + target[1:]
        edits.append(make_edit(text, start, m.end("u"), target, "unit"))
    return edits, drops


_QUANT = {a: b for a, b in T.QUANTIFIERS if a in ("all", "some", "always", "sometimes")}
# requests whose answer depends on the time window asked about (a calendar, a forecast, news, plans)
SCHEDULE = re.compile(r"\b(?:weather|forecast|rain|snow|appointments?|meetings?|events?|schedule\w*|calendar|alarms?|"
                      r"remind\w*|plans?|planned|happening|news|headlines|games?|matches|concerts?|shows|movies|"
                      r"flights?|trains?|traffic|deliver\w*|due|agenda|to-?do|tasks|birthdays?)\b", re.I)
_ALL_BAD_PREV = frozenset("at after for is in once not that".split())
_SOME_OK_PREV = frozenset("are do does can why did have will were would should that in of".split())
_REGION_PREV = re.compile(r"\b(?:in|across|within|throughout)\s+(?:the\s+)?$", re.I)
_YEAR_IN = re.compile(r"\b(in) ((?:19|20)\d\d)\b(?!s|-|\d|/)")
_WINDOW: dict[str, str] = {}
for _a, _b in T.TIME_WINDOWS:
    _WINDOW.setdefault(_a, _b)       # the first listed target: this week -> this month
_WINDOW_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(_WINDOW, key=len, reverse=True)) + r")\b", re.I)


_IRREGULAR_PLURALS = frozenset("people children men women mice teeth feet data media criteria".split())


def _plural(word: str) -> bool:
    w = word.lower()
    return w in _IRREGULAR_PLURALS or (w.endswith("s") and not w.endswith(("ss", "us", "is")) and
                                       w not in ("this", "its", "was", "has", "does", "yes"))


def scope(text: str) -> Found:
    toks, spans = words(text), protected(text)
    edits, drops = [], []
    hits, d = _word_edits(text, _QUANT, "scope")
    drops += d
    for i, t, target in hits:
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        prev = toks[i - 1].low if i > 0 else ""
        if t.low == "all" and re.match(r"all of (?:a|this|that|it|these|those|them|us)\b", text[t.start:], re.I):
            ok = False                          # "all of a sudden", "all of this": no quantity asked
        elif t.low == "all":
            ok = nxt is not None and (nxt.low == "of" or _plural(nxt.low)) and prev not in _ALL_BAD_PREV
        elif t.low == "some":
            ok = nxt is not None and (nxt.low == "of" or _plural(nxt.low)) and \
                (prev in _SOME_OK_PREV or sentence_initial(text, t.start))
        else:
            ok = nxt is not None and t.low in ("always", "sometimes")
        if ok and t.low != "all" and not _question(text, t.start):
            ok = False
        if ok:
            edits.append(make_edit(text, t.start, t.end, match_case(t.text, target), "quantifier"))
        else:
            drops.append("quantifier_context")
    for m in _WINDOW_RE.finditer(text):
        if not SCHEDULE.search(text) or re.match(r"['’]s\b", text[m.end():]) or \
                re.match(r"\s+(?:morning|afternoon|evening|night)", text[m.end():], re.I):
            drops.append("time_window_not_schedule")
            continue
        if is_free(spans, m.start(), m.end()) and not (capitalised(m.group(1)) and not sentence_initial(text, m.start())):
            edits.append(make_edit(text, m.start(), m.end(), match_case(m.group(1), _WINDOW[m.group(1).lower()]),
                                   "time_window"))
    for m in _YEAR_IN.finditer(text):
        if not re.match(r"\s*[?.]?\s*$", text[m.end():]) or not _question(text, m.start()):
            drops.append("year_not_final_filter")
        elif is_free(spans, m.start(), m.end()):
            y = int(m.group(2))
            edits.append(make_edit(text, m.start(), m.end(), f"between {y - 2} and {y + 2}", "time_window"))
    edits += _regions(text, toks, spans, drops)
    return edits, drops


def _regions(text, toks, spans, drops) -> list[Edit]:
    out = []
    for i, t in enumerate(toks):
        for j in (i + 3, i + 2, i + 1):
            name = text[t.start:toks[j - 1].end] if j <= len(toks) else None
            hit = gz.lookup(name) if name else None
            if not hit or hit[0] not in ("country", "city") or (
                    name != hit[1].removeprefix("the ") and name.lower() not in gz.aliases()):
                continue
            if not _REGION_PREV.search(text[:t.start]) or not is_free(spans, t.start, toks[j - 1].end):
                drops.append("region_not_after_in")
            elif in_title_run(text, toks, i, j):
                drops.append("title_run")
            else:
                wider = gz.continent_of(hit[1]) if hit[0] == "country" else gz.country_of(hit[1])
                start = t.start
                if hit[1].startswith("the "):
                    if not text[:start].lower().endswith("the "):
                        drops.append("region_article")
                        break
                    start -= 4
                if wider:
                    out.append(Edit(start, toks[j - 1].end, text[start:toks[j - 1].end], wider, "region"))
            break
    return out
