"""Validators behind the scrubber's patterns: the checks a regular expression cannot make.

A pattern in `domains.corpora.scrub` finds a candidate in linear time; the functions here decide
whether it is what it looks like, with the maintained or standard check where one exists:
phone numbers with Google's libphonenumber metadata (`phonenumbers`), card numbers with the Luhn
checksum and the issuers' prefixes, IBANs with ISO 13616 mod-97 and the country's length, IP
addresses with `ipaddress`, random-looking tokens with Shannon entropy (the measure detect-secrets
uses for its high-entropy string plugins). Every function is pure and works on one short candidate,
so the cost of a scrub stays proportional to the text.
"""
from __future__ import annotations

import ipaddress
import math
import re
import string
from collections import Counter
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


# --- payment cards and bank accounts

_DOUBLED = str.maketrans("0123456789", "0246813579")  # each digit doubled, digits of the result summed


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) checksum every payment card number carries."""
    return (sum(map(int, digits[-1::-2])) + sum(map(int, digits[-2::-2].translate(_DOUBLED)))) % 10 == 0


# Issuer prefixes (ISO/IEC 7812 IINs) of the networks in use: Visa 4, Mastercard 51-55 and
# 2221-2720, Amex 34/37, Discover 6011/64/65, JCB 35, Diners 30/36/38/39, UnionPay 62, Maestro
# 50/56-69, Mir 2200-2204, RuPay 60/81/82/508.
_CARD_PREFIX = re.compile(r"4|5[0-9]|2[2-7]|3[0456789]|6|8[12]")


def card_ok(digits: str) -> bool:
    """A payment card number: 13-19 digits, a known issuer prefix and the Luhn checksum."""
    return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None and luhn_ok(digits)


# ISO 13616 lengths of the IBAN countries most likely in the corpora; others are checked on the
# checksum and the 15-34 range alone.
_IBAN_LENGTHS = {"AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
                 "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22,
                 "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18,
                 "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TR": 26,
                 "AE": 23, "SA": 24, "IL": 23, "BR": 29, "UA": 29, "RU": 33, "KZ": 20, "QA": 29, "PK": 24}


def iban_ok(candidate: str) -> bool:
    """An IBAN: country letters, two check digits, the country's length, and mod-97 == 1."""
    s = re.sub(r"[\s-]", "", candidate).upper()
    if not (15 <= len(s) <= 34 and s[:2].isalpha() and s[2:4].isdigit() and s.isalnum() and s.isascii()):
        return False
    if _IBAN_LENGTHS.get(s[:2], len(s)) != len(s):
        return False
    rearranged = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


# --- network addresses

_NETMASK_OCTETS = {"0", "128", "192", "224", "240", "248", "252", "254", "255"}


def ipv4_is_personal(candidate: str) -> bool:
    """Any IPv4 address except the ones that identify nobody: loopback, 0.0.0.0, the broadcast
    address and netmasks (255.255.255.0)."""
    try:
        ip = ipaddress.IPv4Address(candidate)
    except ValueError:
        return False
    octets = candidate.split(".")
    netmask = octets[0] == "255" and all(o in _NETMASK_OCTETS for o in octets)
    return not (ip.is_loopback or ip.is_unspecified or netmask)


def ipv6_is_personal(candidate: str) -> bool:
    """An IPv6 address (at least three groups, so times and C++ scopes are not), except loopback
    and the unspecified address."""
    if candidate.count(":") < 2 or not any(ch.isdigit() for ch in candidate):
        return False
    try:
        ip = ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified)


# --- random-looking tokens

def shannon_entropy(s: str) -> float:
    """Bits per character of `s` (detect-secrets' high-entropy measure)."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


_LOWER, _UPPER, _DIGITS2 = re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"\d\D*\d")
_WORDLIKE = re.compile(r"[A-Z]?[a-z]{3,}")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_CLASS = str.maketrans(string.ascii_lowercase + string.ascii_uppercase + string.digits,
                       "a" * 26 + "A" * 26 + "0" * 10)


def looks_random(token: str) -> bool:
    """A key-like token (detect-secrets' idea, tuned on the real-traffic corpora): it mixes upper
    case, lower case and at least two digits; its entropy is close to the most its length allows
    (random base62/base64 text reaches 0.82-0.9 of log2(len)); its characters change class often
    (random text: ~0.6 of neighbours, identifiers like getElementById2 far less); and it is not
    mostly made of word-like pieces (camelCase names, model names, paths)."""
    n = len(token)
    if n < 20 or not (_DIGITS2.search(token) and _LOWER.search(token) and _UPPER.search(token)):
        return False
    if shannon_entropy(token) < 0.82 * math.log2(min(n, 64)):
        return False
    alnum = _NOT_ALNUM.sub("", token)  # "-", "_", "/" and "=" join pieces; they are not the pieces
    if len(alnum) < 16:
        return False
    classes = alnum.translate(_CLASS)
    changes = sum(a != b for a, b in zip(classes, classes[1:])) / (len(alnum) - 1)
    if changes < 0.40:
        return False
    words = sum(len(w) for w in _WORDLIKE.findall(alnum)) / len(alnum)
    return not (words > 0.5 and changes < 0.5)


# --- cryptocurrency addresses

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58check_ok(candidate: str) -> bool:
    """A Base58Check string (legacy Bitcoin and similar addresses): its last 4 bytes are the
    double-SHA-256 checksum of the rest."""
    import hashlib

    n = 0
    for ch in candidate:
        i = _B58.find(ch)
        if i < 0:
            return False
        n = n * 58 + i
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(candidate) - len(candidate.lstrip("1"))) + raw
    if len(raw) < 5:
        return False
    body, check = raw[:-4], raw[-4:]
    return hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4] == check


# --- scanning runs of digit groups: cards, then phone numbers

# Cards as they are written: compact, 4-4-4-4(-3) or 4-4-4-1..4, Amex 4-6-5, Diners 4-6-4.
_CARD = re.compile(r"\d(?<![\d.]\d)(?:\d{3}([ -])\d{4}\1\d{4}\1\d{1,7}|\d{3}([ -])\d{6}\2\d{4,5}|\d{12,18})"
                   r"(?!\d|\.\d)")


def scrub_cards(text: str, kinds: set[str]) -> str:
    """Replace every payment card number (issuer prefix and Luhn checksum checked) by [CARD]."""
    def repl(m: re.Match) -> str:
        if not card_ok(m.group(0).replace(" ", "").replace("-", "")):
            return m.group(0)
        kinds.add("card")
        return "[CARD]"
    return _CARD.sub(repl, text)


def scrub_iban(m: re.Match) -> str | None:
    """An IBAN candidate may run into the next word ("... 3201 from"): the longest prefix of
    whole groups that validates is the IBAN."""
    cand = m.group(0)
    cuts = [g.end() for g in re.finditer(r"[A-Za-z0-9]+", cand)]
    for end in reversed(cuts):
        if end >= 15 and iban_ok(cand[:end]):
            return "[IBAN]" + cand[end:]
    return None


# Digits joined by phone punctuation, at least 7 of them: "+44 (0)20 7946 0958", "(555) 123-4567".
_PHONE_RUN = re.compile(r"[+(\d](?<![\w+.\-/][+(\d])(?<!:\d)(?:(?<=\+)\s?\(?)?\d?"
                        r"(?:[ .\-/()]{0,3}\d){6,}\)?")
_PHONE_WORDS = re.compile(r"(?i)\b(?:(?:tele|cell|smart|mobile )?phone|mobile|cell|tel|fax|whats ?app|sms|text me|call|"
                          r"calling|ring|dial|contact|reach me|my number|hotline|helpline|landline|téléphone|tél|"
                          r"telefon|teléfono|handy|portable|celular)\b|телефон|电话|電話")
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
    if _DATE_IN.search(window) or _YEAR_IN_PARENS.search(window) or decimal:
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
