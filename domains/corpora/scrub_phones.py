"""Phone numbers in the scrubber: runs of digits with phone punctuation, cut into windows of whole
digit groups, each checked with Google's libphonenumber metadata (`phonenumbers`). International
numbers ("+44 20 7946 0958", "+44.20.7946.0018", "+91-22-2778-1234", "0049 30 901820") are checked
whatever the country; national ones need a phone word nearby or the grouping their region uses.
Every function is pure and works on one short run, so the cost stays proportional to the text.
"""
from __future__ import annotations

import re
from functools import lru_cache

# --- phone numbers

# Regions whose national formats (no "+") are checked. International numbers ("+CC ..." or
# "00CC ...") are checked whatever the region. The list covers the languages of the real-traffic
# corpora; each region widens what counts as a phone, so it stays short.
PHONE_REGIONS = ("US", "GB", "IN", "AU", "DE", "FR", "ES", "IT", "NL", "BR", "CA")


@lru_cache(maxsize=4096)
def phone_kind(candidate: str, context: bool) -> bool:
    """Is `candidate` (digits with separators, maybe a leading "+" or "00") a phone number?

    International form: a possible number for its country code (assigned or not: a fictional
    number in a prompt is still someone's as far as we know). National form: with a phone word
    nearby (`context`), a possible number of one of PHONE_REGIONS; without one, a valid number
    whose digits are grouped as that region writes them (libphonenumber's STRICT_GROUPING), so
    "2023-2024" and "259 264 22987" stay numbers."""
    import phonenumbers
    from phonenumbers import Leniency, PhoneNumberMatcher

    text = candidate.strip()
    if text.startswith("00"):
        text = "+" + text[2:]
    try:
        if text.startswith("+"):
            return phonenumbers.is_possible_number(phonenumbers.parse(text, None))
        if context:
            return any(phonenumbers.is_possible_number(phonenumbers.parse(text, r)) for r in PHONE_REGIONS)
    except phonenumbers.NumberParseException:
        return False
    return any(m.raw_string == text for r in PHONE_REGIONS
               for m in PhoneNumberMatcher(text, r, leniency=Leniency.STRICT_GROUPING))


# Digits joined by phone punctuation, at least 7 of them: "+44 (0)20 7946 0958", "(555) 123-4567".
_PHONE_RUN = re.compile(r"[+(\d](?<![A-Za-z0-9_+.\-/][+(\d])(?<!:\d)(?:(?<=\+)\s?\(?)?\d?"
                        r"(?:[ .\-/()]{0,3}\d){6,}\)?")
_PHONE_WORDS = re.compile(r"(?i)\b(?:(?:tele|cell|smart|mobile )?phone|mobile|cell|tel|fax|whats ?app|sms|text me|call|"
                          r"calling|ring|dial|contact|reach me|my number|hotline|helpline|landline|téléphone|tél|"
                          r"telefon|teléfono|telefone|telefono|handy|portable|celular|cellulare|móvil|numero|número|"
                          r"numer|nummer|mobiel|bel|llámame|appelle|anrufen|zadzwoń|телефон|номер|мобильный|звоните)\b"
                          r"|电话|電話|手机|手機|携帯|連絡先|전화|휴대폰|핸드폰|연락처|هاتف|फ़ोन|फोन|मोबाइल|โทร")
_NANP = re.compile(r"(?:\+?1[ .-]?)?(?:\(\d{3}\)\s?|\d{3}([ .-]))\d{3}[ .-]\d{4}")
_UK = re.compile(r"0\d{2,4}[ -]\d{3,4}[ -]?\d{3,4}")
# Phone shapes that need no checking: used inside long tables of numbers, where windows would be slow.
_STRONG = re.compile(r"[+(\d](?<!\d[+(\d])(?:(?<=\+)\d{1,3}[ .-]?\d{1,4}(?:[ .-]\d{2,4}){1,4}|"
                     r"(?<=\()\d{3}\)\s?\d{3}[ .-]\d{4}|"
                     r"(?<=\d)\d{2}([ .-])\d{3}\1\d{4}|(?<=0)\d{2,4}[ -]\d{3,4}[ -]?\d{3,4})(?!\d)")
_DATE_SHAPES = ((4, 2, 2), (4, 1, 2), (4, 2, 1), (4, 1, 1), (2, 2, 4), (1, 2, 4), (2, 1, 4), (1, 1, 4), (2, 2, 2))
_LONG_RUN = 64  # characters: beyond this a run is a table of numbers, checked by shape only


def scrub_phones(text: str, kinds: set[str]) -> str:
    """Replace phone numbers by [PHONE]: each run of digits with phone punctuation is cut into
    windows of whole groups, and the longest window from each start that is a phone is replaced."""
    def repl(m: re.Match) -> str:
        run = m.group(0)
        if len(run) > _LONG_RUN:
            out = _STRONG.sub("[PHONE]", run)
        else:
            groups = [(g.start(), g.end()) for g in re.finditer(r"\d+", run)]
            context = _PHONE_WORDS.search(m.string, max(0, m.start() - 40), m.start()) is not None
            out = _phone_windows(run, groups, context)
        if out != run:
            kinds.add("phone")
        return out
    return _PHONE_RUN.sub(repl, text)


def _phone_windows(run: str, groups: list[tuple[int, int]], context: bool) -> str:
    out, last, i = [], 0, 0
    while i < len(groups):
        end = _phone_from(run, groups, i, context)
        if end is None:
            i += 1
            continue
        start = _open(run, groups[i][0], last)
        stop = groups[end - 1][1] + (1 if run[groups[end - 1][1]:groups[end - 1][1] + 1] == ")" else 0)
        out += [run[last:start], "[PHONE]"]
        last, i = stop, end
    return "".join(out) + run[last:] if out else run


def _open(run: str, start: int, floor: int) -> int:
    """Where a window beginning at group offset `start` opens: include a "(" or "+" right before."""
    while start > floor and run[start - 1] in "(+ " and (run[start - 1] != " " or run[start - 2:start - 1] == "+"):
        start -= 1
    return start


def _phone_from(run: str, groups: list[tuple[int, int]], i: int, context: bool) -> int | None:
    """The end (exclusive group index) of the longest phone number starting at group i, if any."""
    best, digits = None, 0
    if i > 0 and run[groups[i - 1][1]:groups[i][0]].strip(" ()"):
        return None  # "978-0-13-...": a window starts or ends inside a run only where a space cuts it
    intl = run[_open(run, groups[i][0], 0):groups[i][0]].startswith("+") or run.startswith("00", groups[i][0])
    for j in range(i, min(len(groups), i + 7)):
        digits += groups[j][1] - groups[j][0]
        if digits > 15:
            break
        if digits < 7 or (j + 1 < len(groups) and run[groups[j][1]:groups[j + 1][0]].strip(" ()")):
            continue
        window = run[_open(run, groups[i][0], 0):groups[j][1]]
        if run[groups[j][1]:groups[j][1] + 1] == ")" and "(" in window:
            window += ")"
        whole = i == 0 and j == len(groups) - 1
        if _phone_window(window, [b - a for a, b in groups[i:j + 1]], intl, context, whole):
            best = j + 1
    return best


_DATE_IN = re.compile(r"(?<!\d)(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})(?!\d)")
_DECIMAL = re.compile(r"\.\d{1,2}(?!\d)|\.\d{5,}")
_YEAR_IN_PARENS = re.compile(r"\((?:1[89]|20)\d\d\)")


def _phone_window(window: str, sizes: list[int], intl: bool, context: bool, whole: bool) -> bool:
    """Is this window of a run (digit groups `sizes`) a phone number? `whole`: it is the entire run,
    so no other number touches it (in a table of numbers, only a phone word or a "+" will do)."""
    decimal = window.count(".") == 1 and _DECIMAL.search(window)
    plus = window.lstrip("(").startswith("+")  # "+44.20.7946.0018", "+91-22-2778-1234": no date starts with "+"
    if not plus and (_DATE_IN.search(window) or _YEAR_IN_PARENS.search(window) or decimal):
        return False  # dates and times, citations, prices and decimals
    if intl:
        return sum(sizes) >= 8 and phone_kind(window, True)
    if len(sizes) == 1:  # a bare digit string is a phone only where the text says so
        return context and phone_kind(window, True)
    if context:
        return bool(_NANP.fullmatch(window) or _UK.fullmatch(window)) or phone_kind(window, True)
    if not whole:
        return False  # inside a table of numbers, only a phone word or a "+" will do
    if _NANP.fullmatch(window) or _UK.fullmatch(window):
        return True
    seps = set(re.sub(r"[\d()]", "", window)) or {" "}
    if seps == {"."} or (len(sizes) == 2 and seps != {" "}):
        return False  # versions, ranges (1800-2000) and ZIP+4 (98052-6399)
    if tuple(sizes) in _DATE_SHAPES or (sizes[0] <= 3 and all(sz == 3 for sz in sizes[1:])):
        return False  # dates and thousands groups
    if "(" in window and not window.startswith("("):
        return False  # "14 (2013) 1329": an area code in brackets opens a national number
    if max(sizes) <= 2 and not window.lstrip("(").startswith("0"):
        return False  # lists of small numbers
    return phone_kind(window, False)
