"""Validators behind the scrubber's patterns: the checks a regular expression cannot make.

A pattern in `domains.corpora.scrub` finds a candidate in linear time; the functions here decide
whether it is what it looks like, with the maintained or standard check where one exists: e-mail
addresses with `email_validator` (internationalised ones too: non-ASCII local parts, IDNA domains),
card numbers with the Luhn checksum and the issuers' prefixes, IBANs with ISO 13616 mod-97 and the
country's length, IP addresses with `ipaddress` (only globally routed unicast ones identify
anybody), random-looking tokens with Shannon entropy (the measure detect-secrets uses for its
high-entropy string plugins); how much of what follows "my name is" is a name; whether a long hex
string is named as a secret. Phone numbers: domains.corpora.scrub_phones. Every function is pure and
works on one short candidate, so the cost of a scrub stays proportional to the text.
"""
from __future__ import annotations

import ipaddress
import math
import re
import string
from collections import Counter
from functools import lru_cache

# --- names a user gives as their own

_PARTICLES = frozenset("de da do dos das di del della der den van von zu ter ten te le la du des bin binti ibn al el "
                       "y op af av".split())
_NOT_NAMES = frozenset("Sie Ihnen Ihr Du Dich Euch Ich Je Yo Io Eu Jag Jeg Ik I".split())  # "ich heiße Sie willkommen"
_UNCASED_STOP = frozenset("है हूँ हूं और का की के क्या ہے اور کیا هو هي ما ماذا أنا انا אני הוא היא מה "
                          "ครับ ค่ะ คะ นะ และ อะไร".split())
_CJK_QUESTION = ("什么", "什麼", "啥", "怎么", "谁", "誰", "何", "なに", "なん", "뭐", "무엇", "누구")  # "我的名字是什么意思"
_NAME_CHARS = re.compile(r"[^\W\d_](?:[^\W_]|[\u0300-\u036f\u0900-\u0dff\u0e00-\u0e7f\u0591-\u05c7"
                         r"\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed'’·・\-])*")
_HIRAGANA = re.compile(r"[\u3041-\u309f]")
_KO_ENDINGS = ("입니다", "이에요", "예요", "이라고", "라고", "이고", "이며", "이야", "인데요", "인데", "이요", "님")


def _script_without_spaces(ch: str) -> bool:
    return "\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7a3" or ch == "\u3005"


def _cjk_name(word: str) -> int:
    """How much of a run of Chinese, Japanese or Korean characters (no spaces between words) is the
    name: up to the grammar after it ("山田花子です", "박지훈입니다"), else at most six characters."""
    if word.startswith(_CJK_QUESTION):
        return 0
    if "\uac00" <= word[0] <= "\ud7a3":
        for ending in _KO_ENDINGS:
            if word.endswith(ending) and len(word) > len(ending):
                return len(word) - len(ending)
        return min(len(word), 4)
    kana = _HIRAGANA.search(word, 1) if not _HIRAGANA.match(word) else None
    if kana:
        return kana.start()
    return len(word) if len(word) <= 6 else 4


def name_length(text: str) -> int:
    """How much of `text` (what follows "my name is" or its equivalent) is a name: capitalised words
    (with lower-case particles between them: "Sanne de Vries"), or up to three words of a script
    without case (two in Thai; a conjunction or copula ends it), or a run of CJK characters up to
    its grammar; 0 when no name starts it."""
    end, cased, uncased = 0, 0, 0
    words = list(re.finditer(r"\S+", text))
    for k, token in enumerate(words):
        word = _NAME_CHARS.match(token.group())
        if word is None:
            break
        w = word.group().rstrip("-·・")
        first = w[0]
        if first.isupper():
            if uncased or w in _NOT_NAMES:
                break
            cased, end = cased + 1, token.start() + len(w)
        elif first.islower():
            nxt = words[k + 1].group()[:1] if k + 1 < len(words) else ""
            if cased and w in _PARTICLES and nxt.isupper() and len(w) == len(token.group()):
                continue
            break
        elif _script_without_spaces(first):
            cut = _cjk_name(w)
            return end if cased or uncased or not cut else token.start() + cut
        else:  # Arabic, Hebrew, Devanagari, Thai...: no capitals; "و"/"ו" (and) starts the next clause
            if cased or w in _UNCASED_STOP or (uncased and w[0] in "وו") or len(w) > 15:
                break
            uncased, end = uncased + 1, token.start() + len(w)
            if uncased == (2 if "\u0e00" <= first <= "\u0e7f" else 3):
                break
        if len(w) < len(token.group()) or cased == 4:
            break  # punctuation ends the name
    return end if len(text[:end].replace(" ", "")) >= 2 else 0


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
# Public resolvers everybody writes in network questions (Google, Cloudflare, Quad9, OpenDNS, AdGuard,
# Level 3): a service's well-known address, nobody's own.
_PUBLIC_SERVICES = frozenset({
    "8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "1.1.1.2", "1.0.0.2", "9.9.9.9", "149.112.112.112",
    "208.67.222.222", "208.67.220.220", "94.140.14.14", "94.140.15.15", "4.2.2.1", "4.2.2.2",
    "2001:4860:4860::8888", "2001:4860:4860::8844", "2606:4700:4700::1111", "2606:4700:4700::1001",
    "2620:fe::fe", "2620:fe::9"})


def _identifies(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Only a globally routed unicast address can point at somebody: private networks (10/8,
    172.16/12, 192.168/16, fc00::/7), carrier-grade NAT, link-local, loopback, the documentation and
    benchmarking ranges, multicast and reserved space are shared by everybody (ipaddress.is_global)."""
    return ip.is_global and not ip.is_multicast and str(ip) not in _PUBLIC_SERVICES


def ipv4_is_personal(candidate: str) -> bool:
    """A globally routed IPv4 address (`_identifies`); never a netmask (255.255.240.0)."""
    try:
        ip = ipaddress.IPv4Address(candidate)
    except ValueError:
        return False
    octets = candidate.split(".")
    netmask = octets[0] == "255" and all(o in _NETMASK_OCTETS for o in octets)
    return _identifies(ip) and not netmask


def ipv6_is_personal(candidate: str) -> bool:
    """A globally routed IPv6 address (`_identifies`; at least three groups, so times and C++
    scopes are not addresses)."""
    if candidate.count(":") < 2 or not any(ch.isdigit() for ch in candidate):
        return False
    try:
        ip = ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return _identifies(ip)


def is_network(address: str, prefix: str) -> bool:
    """`address/prefix` is a CIDR block (no host bits set: 52.94.0.0/16), which names a network,
    not a host; 93.184.216.34/32 is one host."""
    try:
        net = ipaddress.ip_network(f"{address}/{prefix}", strict=True)
    except ValueError:
        return False
    return net.num_addresses > 1


# What names a long hex string before it, on its line: a secret, or a digest (the nearer wins).
_SECRET_WORD = re.compile(r"(?i)\b(?:api|keys?\b|secret|tokens?\b|passw|passphrase|pwd|credential|auth|private|"
                          r"session|cookie|salt|hmac|seed|bearer|licen[cs]e|access|signing|encryption|master)")
_DIGEST_WORD = re.compile(r"(?i)(?:sha|md5|hash|digest|checksum|commit|blob|\btree|etag|block|\btx\b|transaction|"
                          r"\bgit\b|integrity|image|layer|object|change-id|revision|\brev\b|fingerprint|cherry-pick|"
                          r"rebase|revert|show|checkout|reset|diff|log)")


def _last_end(pattern: re.Pattern, text: str) -> int:
    ends = [m.end() for m in pattern.finditer(text)]
    return ends[-1] if ends else -1


def named_as_secret(before: str) -> bool:
    """Do the words before a long hex string (on its line) name it a secret ("api key", "secret is",
    "token:") rather than a digest ("sha256", "commit", "etag")? The nearer word decides; none: no."""
    before = before.rpartition("\n")[2]
    secret = _last_end(_SECRET_WORD, before)
    return secret >= 0 and secret > _last_end(_DIGEST_WORD, before)


_VERSION_BEFORE = re.compile(r"(?i)\b(?:version|ver\.?|v|release|build)\b[^\n\d]{0,12}$")
# "cuDNN 8.9.7.29", "TensorRT 8.6.1.6": a product's name (upper and lower case) right before
_PRODUCT_BEFORE = re.compile(r"(?<![\w.-])(?=[A-Za-z0-9-]*[a-z])(?=[A-Za-z0-9-]*[A-Z])[A-Za-z][A-Za-z0-9-]{1,30} $")
_HOST_WORDS = re.compile(r"(?i)\b(?:ip|ips|ipv4|address|addr|host|server|vps|vm|instance|machine|node|droplet|box|"
                         r"gateway|router|dns|proxy|firewall|ssh|ping|connect|curl|https?|ban|block|allow|whitelist)\b")


def reads_as_version(before: str, octets: list[str]) -> bool:
    """Does a dotted quad read as a version, by the words before it ("version is 2.6.8.205", "cuDNN
    8.9.7.29": a product name, small numbers, no word about hosts nearby)?"""
    if _VERSION_BEFORE.search(before):
        return True
    return max(map(int, octets)) <= 99 and bool(_PRODUCT_BEFORE.search(before)) and not _HOST_WORDS.search(before)


# --- e-mail addresses

@lru_cache(maxsize=4096)
def email_ok(candidate: str) -> bool:
    """An e-mail address by RFC 5322/6531 syntax and IDNA (email_validator, no DNS look-up):
    "jörg@münchen.de" and "用户@例子.公司" are addresses; "a@b..c" is not."""
    from email_validator import EmailNotValidError, validate_email

    try:
        validate_email(candidate, check_deliverability=False, allow_smtputf8=True, globally_deliverable=False)
    except (EmailNotValidError, UnicodeError, ValueError):
        return False
    return True


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


# --- scanning runs of digit groups: cards (phone numbers: domains.corpora.scrub_phones)

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
