"""Number operators: number_change (a count, an amount, a size) and date_time_change (a year, a weekday,
a month, a clock time, a duration, a relative day). Each returns every edit it would make and the
reasons it refused the others; the caller picks one, seeded.

Refusals: a number inside code, quotes, a URL or a path; a version or a model number (after a
capitalised word or "version"/"v", or with a second dot: "Python 3.10", "iPhone 12", "1.2.3"); an id
(5+ digits without separators, a leading zero, after "#", "id", "no."); a reference to something not
in the request ("question 3", "chapter 2", "step 4": the answer depends on content we cannot see);
a list marker ("1." or "2)" at a line start); an ordinal ("3rd"); the number 1 (and never making 1:
the noun after it would lose its agreement). Years belong to date_time_change, never to
number_change; a year after a capitalised word is a title ("Windows 2000", "FIFA 2022")."""
from __future__ import annotations

import random
import re

from domains.corpora.traps import tables as T
from domains.corpora.traps.text import Edit, capitalised, is_free, make_edit, match_case, protected, sentence_initial

Found = tuple[list[Edit], list[str]]

_NUM = re.compile(r"(?<![\w.,/:#@-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/@]|\.\d|,\d|:\d)")
_REFERENCE = frozenset("question questions problem exercise chapter section step part item line page figure table "
                       "verse article rule lesson unit task slide option no number id version v ver release level "
                       "grade season episode round room flight route model gen generation class week day".split())
_COUNT_PREV = frozenset("""of than the a an for to in with about around over under at by me us them have has had
made make makes get got take took tried try lose gain write give list need needs want buy sell pay paid received
requested spent spend is are was were be and or into from only least most exactly approximately nearly almost top
per costs cost weigh weighs each every these those my your his her its our their first last next under over within
after before than up down rs usd eur send sent withdraw withdrew transfer transferred charged charge owe earn earns
i you we they it this that there envisioned contain contains containing choose pick find generate create show tell
suggest name provide using use uses convert calculate solve""".split())
_PREV_WORD = re.compile(r"([A-Za-z][\w+#.]*)\W{0,2}$")
_LIST_MARK = re.compile(r"(?:^|\n)\s*$")
_TIME_AFTER = re.compile(r"\s?(?:a\.? ?m\.?|p\.? ?m\.?|o'clock|h\b|hrs?\b)", re.I)


def _context_ok(text: str, start: int, end: int, value: str) -> str | None:
    """The reason a number at text[start:end] must not change, or None."""
    before, after = text[:start], text[end:]
    prev = _PREV_WORD.search(before)
    prev_word = prev.group(1) if prev else ""
    if _LIST_MARK.search(before) and re.match(r"[.)]", after):
        return "list_marker"
    if re.match(r"(?:st|nd|rd|th)\b", after):
        return "ordinal"
    if prev_word.lower() in T.MONTHS:
        return "day_of_month"
    if prev_word and prev_word.lower() not in _COUNT_PREV and not before.rstrip().endswith(("$", "€", "£", "(")):
        return "not_a_count"     # "iphone 7", "iron man 2", "volume 5": a name's number
    if prev_word.lower().rstrip(".") in _REFERENCE or before.rstrip().endswith(("#", "v", "V")):
        return "reference_or_id"
    if prev_word and capitalised(prev_word) and not sentence_initial(text, prev.start(1)) and \
            not re.search(r"(?:[.!?:]\s*|\n\s*)$", before[:prev.start(1)] if prev else ""):
        return "after_capitalised_word"
    if re.match(r"\.\d+\.\d", text[start:]):
        return "version"
    digits = value.replace(",", "").split(".")[0]
    if len(digits) >= 5 and "," not in value:
        return "id_like"
    if len(digits) > 1 and digits.startswith("0"):
        return "leading_zero"
    return None


def _bump(value: str, rng: random.Random) -> str:
    """Another number in the same format: small ones move by 1-2, round ones by their last digit
    (500 -> 600 or 700 or 400), decimals by one unit of their first digit; never to 0 or 1."""
    intpart, _, dec = value.partition(".")
    n = int(intpart.replace(",", ""))
    if dec:
        step = rng.choice((1, 2))
        new_int = n + step if n >= 1 else n
        new_dec = dec if n >= 1 else str(min(int(dec[0]) + step, 9)) + dec[1:]
        return f"{new_int}.{new_dec}"
    if n >= 20:     # a clear change: 3072 -> 3073 would ask the same; 3072 -> 6144 does not
        new = rng.choice((n * 2, n // 2 if n % 2 == 0 and n // 2 > 1 else n * 3))
    else:
        new = rng.choice([n + 1, n + 2] + ([n - 1] if n - 1 > 1 else []))
    return f"{new:,}" if "," in intpart else str(new)


def numbers(text: str, rng: random.Random) -> Found:
    spans, edits, drops = protected(text), [], []
    for m in _NUM.finditer(text):
        value = m.group(0)
        if not is_free(spans, m.start(), m.end()):
            drops.append("protected")
            continue
        plain = value.replace(",", "")
        if re.fullmatch(r"1\d{3}|20\d\d", plain):
            continue  # a year: date_time_change
        after = text[m.end():]
        if _TIME_AFTER.match(after) or re.match(r"\s?[-]?(\w+)", after) and \
                re.match(r"\s?-?(\w+)", after).group(1).lower() in T.DURATION_UNITS:
            continue  # a clock time or a duration: date_time_change
        reason = _context_ok(text, m.start(), m.end(), value)
        if reason is None and re.search(r"\bthe\s+$", text[:m.start()], re.I) and \
                not re.match(r"\s+[a-z]+s\b", after):
            reason = "title_like"     # "the 100", "the 300": a name, not a count
        if reason is None and plain in ("0", "1"):
            reason = "zero_or_one"
        if reason:
            drops.append(reason)
            continue
        edits.append(make_edit(text, m.start(), m.end(), _bump(value, rng), "number"))
    return edits, drops


_WEEKDAY = re.compile(r"\b(" + "|".join(T.WEEKDAYS) + r")(s?)\b", re.I)
_MONTH = re.compile(r"\b(" + "|".join(T.MONTHS) + r")\b", re.I)
_YEAR = re.compile(r"(?<![\w.,/:#-])((?:18|19|20)\d\d)(?![\w/]|\.\d|-\d|,\d|['’]s)")
_CLOCK = re.compile(r"(?<![\w:.])(\d{1,2})(:\d\d)?(\s?(?:a\.? ?m\.?|p\.? ?m\.?|o'clock)(?!\w))", re.I)
_WORD_CLOCK = re.compile(r"\b(" + "|".join(T.NUMBER_WORDS[:11]) + r"|one)(\s(?:a\. ?m\.|p\. ?m\.|am|pm|o'clock))(?!\w)", re.I)
_DURATION = re.compile(r"(?<![\w.,/:#-])(\d{1,3}|" + "|".join(T.NUMBER_WORDS) + r")([\s-])(" +
                       "|".join(sorted(T.DURATION_UNITS, key=len, reverse=True)) + r")\b", re.I)
_RELATIVE = {a: b for a, b in T.RELATIVE_DAYS}
_RELATIVE_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(_RELATIVE, key=len, reverse=True)) + r")\b", re.I)
_HOLIDAY_PREV = re.compile(r"\b(?:black|good|cyber|ash|holy|super|fat|maundy|blue|casual|easter)\s+$", re.I)
_YEAR_PREV_OK = re.compile(r"(?:\b(?:in|of|since|by|from|until|till|to|before|after|during|year|around|circa|"
                           r"between|and|early|late|mid|the)\s+|,\s*|^)$", re.I)
_MONTH_OK = re.compile(r"^\s*\d|\b(?:in|of|since|until|till|during|early|late|mid|by|every|next|last|this)\s+$", re.I)


_PAST = re.compile(r"\b(?:was|were|did|had|went|ago|(?:i|we|they|he|she|it|you) (?:got|took|made|used|paid|\w{3,}ed))\b",
                   re.I)


def _lexical_schedule():
    from domains.corpora.traps.lexical import SCHEDULE
    return SCHEDULE


def dates(text: str, rng: random.Random) -> Found:
    spans, edits, drops = protected(text), [], []

    def add(start, end, new, kind, lowercase_ok=True):
        if not is_free(spans, start, end):
            drops.append("protected")
        else:
            edits.append(make_edit(text, start, end, new, kind))

    for m in _YEAR.finditer(text):
        before = text[:m.start()]
        if not _YEAR_PREV_OK.search(before) and not _MONTH.search(before[-12:]):
            drops.append("year_context")
            continue
        y = int(m.group(1))
        if before.rstrip().endswith("(") or re.search(r"\bby the year\s+$", before):
            drops.append("year_context")
            continue
        delta = rng.choice((-5, -4, -3, 3, 4, 5))
        if y + delta > 2030:
            delta = -abs(delta)
        add(m.start(), m.end(), str(y + delta), "year")
    for m in _WEEKDAY.finditer(text):
        day, plural = m.group(1), m.group(2)
        if _HOLIDAY_PREV.search(text[:m.start()]) or (capitalised(day) is False and not text.islower()
                                                      and any(c.isupper() for c in text[1:])):
            drops.append("weekday_context")
            continue
        others = [d for d in T.WEEKDAYS if d != day.lower()]
        add(m.start(), m.end(), match_case(day, rng.choice(others)) + plural, "weekday")
    for m in _MONTH.finditer(text):
        mon = m.group(1)
        ambiguous = mon.lower() in ("may", "march", "august")
        if ambiguous and not capitalised(mon) or ambiguous and sentence_initial(text, m.start()) or \
                not (_MONTH_OK.search(text[:m.start()]) or re.match(r"\s+\d", text[m.end():])):
            drops.append("month_context")
            continue
        others = [x for x in T.MONTHS if x != mon.lower() and x not in ("may", "march")]
        add(m.start(), m.end(), match_case(mon, rng.choice(others)), "month")
    for m in _CLOCK.finditer(text):
        h = int(m.group(1))
        if not 1 <= h <= 12:
            drops.append("clock_context")
            continue
        new_h = (h - 1 + rng.choice((1, 2, 3))) % 12 + 1
        add(m.start(), m.start(1) + len(m.group(1)), str(new_h), "clock_time")
    for m in _WORD_CLOCK.finditer(text):
        words = list(T.NUMBER_WORDS[:11])
        w = m.group(1).lower()
        pool = [x for x in words if x != w]
        add(m.start(1), m.end(1), match_case(m.group(1), rng.choice(pool)), "clock_time")
    for m in _DURATION.finditer(text):
        n, unit = m.group(1), m.group(3)
        if n.isdigit():
            if int(n) <= 1 or _context_ok(text, m.start(1), m.end(1), n):
                drops.append("duration_context")
                continue
            new = _bump(n, rng)
        else:
            idx = T.NUMBER_WORDS.index(n.lower())
            new = match_case(n, T.NUMBER_WORDS[(idx + rng.choice((1, 2))) % len(T.NUMBER_WORDS)])
        if re.match(r"\s+(?:ago|of experience|experience|old)\b", text[m.end():], re.I):
            drops.append("duration_not_asked")     # "two days ago", "10 years of experience": same answer
            continue
        if m.group(2) == " " and not unit.lower().endswith("s") and unit.lower() not in ("min", "hr"):
            drops.append("duration_singular")   # "a 5 day trip" reads fine either way, "5 day" alone is not
            continue
        add(m.start(1), m.end(1), new, "duration")
    past = _PAST.search(text)
    for m in _RELATIVE_RE.finditer(text):
        low = m.group(1).lower()
        if not _lexical_schedule().search(text) or (past and low != "yesterday") or \
                re.match(r"\s+(?:morning|afternoon|evening|night)|['’]s", text[m.end():], re.I) or \
                re.search(r"\b(?:to|until|till|from|earlier|later)\s+$", text[:m.start()], re.I):
            drops.append("relative_day_context")
            continue
        if capitalised(m.group(1)) and not sentence_initial(text, m.start()):
            drops.append("capitalised_mid_sentence")
            continue
        add(m.start(), m.end(), match_case(m.group(1), _RELATIVE[m.group(1).lower()]), "relative_day")
    return edits, drops
