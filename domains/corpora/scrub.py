"""Scrub personal data and secrets from real-traffic text before anything is embedded or written.

`scrub(text)` returns `Scrubbed(text, scrubbed, kinds)`: the text with every match replaced by a
fixed placeholder, whether anything was replaced, and the sorted kinds replaced. The placeholders
are deterministic (no hashing of the secret), so two prompts that differed only in a scrubbed value
become identical and are then handled as duplicates, never as a pair that leaks it.

Placeholders: [EMAIL] [PHONE] [API_KEY] [TOKEN] [SECRET] [URL_WITH_CREDENTIALS] [CARD] [IBAN]
[ACCOUNT_NUMBER] [SSN] [ID_NUMBER] [IP_ADDRESS] [MAC_ADDRESS] [ADDRESS] [NAME] [DATE_OF_BIRTH]
[CRYPTO_ADDRESS]. A key or password keeps its name and loses its value (`password=[SECRET]`).

Detectors: fixed formats (cloud keys, tokens, JWTs, private keys) by pattern; values after a
secret's name ("password is ...", `api_key = "..."`, `curl -u user:pw`) by context; random-looking
tokens by Shannon entropy, as detect-secrets does; phone numbers with libphonenumber's metadata
(`phonenumbers`; "+44.20.7946.0018" and "+91-22-2778-1234" too; domains.corpora.scrub_phones),
e-mail addresses with email_validator (non-ASCII ones too), cards with the Luhn checksum, IBANs
with mod-97 (domains.corpora.scrub_detectors). Personal data is written in many languages and
scripts: names after "my name is" and its equivalents (меня зовут, 我叫, je m'appelle...), dates of
birth after their words (Geburtsdatum, né le, 生年月日...), addresses in other formats and scripts
with their postcode and city (domains.corpora.scrub_patterns_intl).

Not personal data, left as written: digests and git SHAs (a long hex string is a secret only where
the words before it name one), digests with their algorithm ("sha512-...", "h1:..."), UUIDs,
versions, and IP addresses that identify nobody: private, carrier-grade NAT, link-local,
documentation and benchmarking ranges, multicast, well-known public resolvers, CIDR blocks.

Linear time: every pattern either starts only where a run of its characters starts (a lookbehind
of the same class), or is bounded, so a failed attempt never rescans what it read; the test bounds
the time on 1 MB tokens built to break each pattern.

Order matters: private keys, credential URLs and fixed key formats first (they contain everything
the later rules look for), then values named by context, generic secrets, identifiers, and phone
numbers last (keys, cards and dates contain digit runs). The rules err on the side of scrubbing: a
false positive costs a prompt's detail, a miss leaks a secret.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Callable, NamedTuple

from domains.corpora import scrub_detectors as det
from domains.corpora.scrub_phones import scrub_phones
from domains.corpora.scrub_patterns import PATTERNS

VERSION = "4"  # of the rules: a change can change a mined row


class Scrubbed(NamedTuple):
    text: str
    scrubbed: bool
    kinds: tuple[str, ...]


Repl = str | Callable[[re.Match], str | None]  # None keeps the match as it is

# --- deciding on values found by context

# Words that follow "password is" / "token:" in ordinary prose and code, never a secret.
_STOPWORDS = frozenset("""
a an the not no too very so also just only still now never always and or but if then than that this these those
it its is are was be been being to of for on in at by with from as into about what which who how why where when
my your his her our their me you we they i one some any all none null nil true false undefined empty blank
wrong incorrect correct invalid valid weak strong secure insecure required optional expired missing same different
long short saved stored hashed encrypted hidden visible set changed reset sent generated used needed supposed going
more less least longer shorter case sensitive ok okay fine good bad easy hard simple complex known unknown forgotten
lost compromised leaked protected accepted rejected shown displayed entered typed incorrectly field fields input box
include omit same-origin hash sha1 sha256 sha512 md5 bcrypt argon2 scrypt pbkdf2 base64 plaintext plain
text string str int bool boolean number integer char varchar bytes object dict list optional any self this new
function lambda def return await async type value values here there below above following same something
""".split())

_CODE_HEADS = ("os.", "process.", "self.", "this.", "config.", "settings.", "env.", "args.", "request.", "req.",
               "options.", "opts.", "params.", "data.", "user.", "cfg.", "conf.", "app.", "st.", "form.", "props.")
_NAME_SUFFIXES = re.compile(r"(?i)[_.-]?(?:count|len|length|size|limit|min|max|type|url|uri|file|path|name|field|"
                            r"hash|hashed|regex|pattern|policy|input|label|prompt|column|col|id|ttl|expiry|expires|"
                            r"expiration|timeout|header|endpoint|env|var|prefix|format|mode|strength|reset|confirm|"
                            r"confirmation|again|repeat|visible|hint|error|errors|message|validator|check|rule|rules|"
                            r"required|changed|placeholder|icon|button|form|dialog|page|screen|view|widget|manager)$")
_PLACEHOLDERISH = re.compile(r"(?i)your|<|>|\{|\}|\$|%|\.\.\.|\*\*\*|xxx|placeholder|changeme|example|redacted|^\[|"
                             r"^(?:my|the|some)[_-]|[_-]here$")
# Words that end like English adjectives, participles and nouns: "is selected", "are discoverable".
_ENGLISH_ENDING = re.compile(r"(?i)[a-z]{2,}(?:ed|ing|able|ible|ly|ous|ive|ful|less|tion|ment|ness|al|ity)$")
# What follows an unquoted value in code rather than in prose: arguments, operators, calls.
_CODE_AFTER = re.compile(r"[ \t]*(?:[-$+*/%(\[.\"'`]|\|\||&&|\?)")
_CMDLET = re.compile(r"[A-Z][A-Za-z]+-[A-Z][A-Za-z]+")  # PowerShell: ConvertTo-SecureString
_PATH = re.compile(r"(?:\.{0,2}/|~/|[A-Za-z]:\\).*|.*\.(?:json|pem|key|txt|env|ya?ml|ini|cfg|p12|pfx|crt)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRETISH_IDENT = re.compile(r"(?i)pass|pwd|token|secret|key|cred|auth")


def _strip_trailing(value: str) -> str:
    return value.rstrip(".,;:!?)]}>")


def _unescape(value: str) -> str:
    """Markdown-escaped text as pasted in chat ("API\\_KEY", "\\*\\*"): the characters meant."""
    return re.sub(r"\\([_*`#\[\]()-])", r"\1", value)


def _is_code_value(value: str) -> bool:
    """An unquoted value that is a program's expression, not a literal: a call, an index, an
    attribute path, a variable named after the secret, a type or keyword."""
    if value.lower() in _STOPWORDS or value[:1] in "[<{$%@(&*":
        return True
    if "(" in value or "[" in value or value.startswith(_CODE_HEADS):
        return True
    parts = value.split(".")
    if len(parts) > 1 and all(_IDENT.fullmatch(p) and not any(c.isdigit() for c in p) for p in parts):
        return True  # a.b.c attribute path
    # `"password": password`, `token=token`: a variable named after the secret (digits would make
    # it look like a password chosen by a person: "password123")
    return bool(_IDENT.fullmatch(value) and _SECRETISH_IDENT.search(value) and not any(c.isdigit() for c in value))


_PASSWORDISH = re.compile(r"(?i)pass|pwd|secret")


def _keyword_value(m: re.Match) -> str | None:
    """`password = hunter22`, `"api_key": "..."`, `token: abc...`: keep the name, drop the value."""
    name, quote, quoted, bare = m.group("name"), m.group("q"), m.group("qv"), m.group("bv")
    if _NAME_SUFFIXES.search(name):
        return None
    if quote is not None:
        value = _unescape(quoted)
        if not value.strip() or _PLACEHOLDERISH.search(value) or len(value) < 3 or value.lower() in _STOPWORDS:
            return None
        if re.fullmatch(r"[A-Z][A-Z_]+", value) or value.lower() == name.lower() or _PATH.fullmatch(value):
            return None  # "ACCESS_TOKEN", "password": "password", a path to a key file
        return m.group(0)[: m.start("qv") - m.start(0)] + "[SECRET]" + quote
    value = _unescape(_strip_trailing(bare))
    if len(value) < 3 or _is_code_value(value) or _CMDLET.fullmatch(value) or _PLACEHOLDERISH.search(value):
        return None
    if _CODE_AFTER.match(m.string, m.end()):
        return None  # `$Password = ConvertTo-SecureString $env:...`: an expression continues
    if _PATH.fullmatch(value):
        return None  # CREDENTIALS=/path/to/file.json: where a secret is, not the secret
    if value.isalpha() and not (_PASSWORDISH.search(name) or len(value) >= 16):
        return None  # "token: Economic models": a key or token is never a short plain word
    if value.isalpha() and value[:1].isupper() and value[1:].islower():
        return None  # "secret: Company's name": a capitalised word goes on a sentence
    kept = len(_strip_trailing(bare))
    return m.group(0)[: m.start("bv") - m.start(0)] + "[SECRET]" + bare[kept:]


def _prose_value(m: re.Match) -> str | None:
    """"my password is hunter2", "the PIN is 4821": the value after the verb."""
    quote, quoted, bare = m.group("q"), m.group("qv"), m.group("bv")
    pin = re.match(r"(?i)pin|passcode", m.group("name"))
    if quote is not None:
        if not quoted.strip() or _PLACEHOLDERISH.search(_unescape(quoted)):
            return None
        return m.group(0)[: m.start("qv") - m.start(0)] + "[SECRET]" + quote
    stripped = _strip_trailing(bare)
    value = _unescape(stripped)
    if pin and not re.fullmatch(r"\d{4,8}", value):
        return None
    if len(value) < 3 or value.lower() in _STOPWORDS or _PLACEHOLDERISH.search(value) or value[:1] in "([":
        return None
    if "(" in value or "[" in value or value.startswith(_CODE_HEADS):
        return None  # `api_key = os.getenv(...)` read as prose
    if value.isalpha() and _ENGLISH_ENDING.fullmatch(value):
        return None  # "is selected", "are discoverable"
    return m.group(0)[: m.start("bv") - m.start(0)] + "[SECRET]" + bare[len(stripped):]


def _bare_password(m: re.Match) -> str | None:
    """"login admin password Adm1n!23": a password word followed by a value with letters and
    digits (so "password reset" and "password manager" stay)."""
    stripped = _strip_trailing(m.group("bv"))
    value = _unescape(stripped)
    if not (re.search(r"[A-Za-z]", value) and re.search(r"\d", value)) or _is_code_value(value):
        return None
    return m.group(0)[: m.start("bv") - m.start(0)] + "[SECRET]" + m.group("bv")[len(stripped):]


def _bearer(m: re.Match) -> str | None:
    """`Bearer <token>`, `Basic <base64 user:password>`; "basic arithmetic" and "Basic Standards"
    are words: a token has a digit, a Basic credential decodes to user:password."""
    scheme, value = m.group(1), m.group(2)
    if _PLACEHOLDERISH.search(value):
        return None
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
            if ":" in decoded and decoded.isprintable():
                return f"{scheme} [TOKEN]"
        except (binascii.Error, UnicodeDecodeError, ValueError):
            pass
        return f"{scheme} [TOKEN]" if det.looks_random(value) else None
    keyish = any(c.isdigit() for c in value) or det.looks_random(value)
    return f"{scheme} [TOKEN]" if keyish else None


def _url_param(m: re.Match) -> str | None:
    value = m.group(2)
    if value.startswith("[") or _PLACEHOLDERISH.search(value):
        return None
    if any(c.isdigit() for c in value) or (value.lower() != value and value.upper() != value):
        return m.group(1) + "[SECRET]"
    return None


# In scripts without spaces an address can run into the words around it: a verb or particle before
# the local part, hiragana after the top-level domain.
_CJK_BEFORE_LOCAL = re.compile(r".*[到给給至往是为為在向寄发發はへにをでがの：:]")
_HIRAGANA = re.compile(r"[\u3041-\u309f]")


def _email(m: re.Match) -> str | None:
    """An e-mail address; one with non-ASCII parts ("jörg@münchen.de") is checked by email_validator
    (in a script without spaces the match may start inside the sentence: the longest valid tail of
    the local part is the address)."""
    value = m.group(0)
    local, _, domain = value.partition("@")
    if local == "git" or re.match(r"\d+(?:\.\d+)?x\.", domain):  # git@github.com:..., icon@2x.png
        return None
    if value.isascii():
        return "[EMAIL]"
    begin = _CJK_BEFORE_LOCAL.match(local)  # "请把报价单发到销售@...": the address starts after 到
    tld = len(domain) - len(domain.rpartition(".")[2])
    kana = _HIRAGANA.search(domain, tld + 1)  # "会社.日本までお願いします": the domain ends before the kana
    end = len(value) - (len(domain) - kana.start() if kana else 0)
    for start in range(begin.end() if begin else 0, len(local)):
        if local[start] not in ".-" and det.email_ok(value[start:end].replace("\\", "")):
            return value[:start] + "[EMAIL]" + value[end:]
    return None


def _hex(m: re.Match) -> str | None:
    """An Ethereum address (0x + 40 hex digits); a long hex string named as a secret by the words
    before it ("api key", "secret is", "token:"). A digest, a git SHA, a transaction or block hash is
    nobody's data: unnamed, or named as one ("sha256", "commit", "etag"), it stays. Decimal digits
    only (a binary string, a big number) are not hex."""
    value = m.group(0)
    if value[:2].lower() == "0x" and len(value) == 42:
        return "[CRYPTO_ADDRESS]"
    if value[:2].lower() != "0x" and not re.search(r"[A-Fa-f]", value):
        return None
    return "[SECRET]" if det.named_as_secret(m.string[max(0, m.start() - 48):m.start()]) else None


def _url_credentials(m: re.Match) -> str | None:
    """scheme://user:password@host, unless the credentials are template variables ($USER, {pw})."""
    userinfo = m.group(0).split("://", 1)[1].rsplit("@", 1)[0]
    if all(part[:1] in "$%{<" or part in ("", "...", "***") for part in userinfo.split(":", 1)):
        return None
    return "[URL_WITH_CREDENTIALS]"


# Base64 digests: Subresource Integrity ("sha384-oqVu..."), go.sum ("h1:ZkRr..."), "sha256:..."
_DIGEST_PREFIX = re.compile(r"(?i)(?:sha-?(?:1|224|256|384|512)|sha3-\d{3}|md5|blake2[bs]?)-")
_DIGEST_BEFORE = re.compile(r"(?i)(?:\bh1|sha-?(?:1|224|256|384|512)|sha3-\d{3}|md5|blake2[bs]?)[:=]$")


def _random_run(m: re.Match) -> str | None:
    """A random-looking token; in a path ("docs/d/<id>/edit"), only its random-looking parts. A
    digest written with its algorithm ("sha512-...", "h1:...") is not a secret."""
    run = m.group(0)
    if _DIGEST_PREFIX.match(run) or _DIGEST_BEFORE.search(m.string, max(0, m.start() - 10), m.start()):
        return None
    if "/" not in run:
        return "[SECRET]" if det.looks_random(run) else None
    parts = run.split("/")
    hits = [det.looks_random(p) for p in parts]
    if not any(hits):
        return None
    if sum(len(p) for p, hit in zip(parts, hits) if hit) >= 0.8 * len(run):
        return "[SECRET]"  # base64 with "/" in it
    return "/".join("[SECRET]" if hit else p for p, hit in zip(parts, hits))


def _checked(kind_check: Callable[[str], bool], placeholder: str, group: int = 0) -> Callable[[re.Match], str | None]:
    def repl(m: re.Match) -> str | None:
        value = m.group(group)
        if not kind_check(value):
            return None
        return m.group(0)[: m.start(group) - m.start(0)] + placeholder + m.group(0)[m.end(group) - m.start(0):]
    return repl


def _ssn(m: re.Match) -> str | None:
    """A US Social Security number as the SSA issues them: no area 000, 666 or 9xx, no group 00,
    no serial 0000."""
    area, group, serial = re.split(r"[- ]", m.group(0))
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return None
    return "[SSN]"


def _ipv4(m: re.Match) -> str | None:
    """A globally routed IPv4 address (det.ipv4_is_personal), unless it reads as a version or a
    section number ("1.1.1.2", "version is 2.6.8.205", "cuDNN 8.9.7.29") or is the network address
    of a CIDR block ("52.94.0.0/16": a network, not a host)."""
    octets = m.group(0).split(".")
    if all(len(o) == 1 for o in octets) or not det.ipv4_is_personal(m.group(0)):
        return None
    if det.reads_as_version(m.string[max(0, m.start() - 32):m.start()], octets):
        return None
    cidr = re.match(r"/(\d{1,3})(?!\d)", m.string[m.end():m.end() + 4])
    if cidr and det.is_network(m.group(0), cidr.group(1)):
        return None
    return "[IP_ADDRESS]"


def _ipv6(m: re.Match) -> str | None:
    """A globally routed IPv6 address, unless it opens a CIDR block ("2a02:8108::/32")."""
    if not det.ipv6_is_personal(m.group(0)):
        return None
    cidr = re.match(r"/(\d{1,3})(?!\d)", m.string[m.end():m.end() + 4])
    return None if cidr and det.is_network(m.group(0), cidr.group(1)) else "[IP_ADDRESS]"


def _cli_value(m: re.Match) -> str | None:
    """A credential on a command line (`curl -u user:password`, `mysql -pSECRET`): the value, unless
    it is a variable or placeholder, or `user:group` ids (`docker run -u 1000:1000`, `-u app:app`)."""
    value = m.group("v")
    user, sep, secret = value.partition(":") if ":" in value else ("", "", value)
    if sep == "" and "%" in value and m.group(0).lstrip("-")[:1] == "U":  # smbclient -U user%password
        user, sep, secret = value.partition("%")
    if not secret or secret[:1] in "$%{<*" or _PLACEHOLDERISH.search(secret) or secret.startswith("//"):
        return None
    if sep and (user[:1] in "$%{<" or user == secret or (user.isdigit() and secret.isdigit())):
        return None
    return m.group(0)[: m.start("v") - m.start(0)] + "[SECRET]" + m.group(0)[m.end("v") - m.start(0):]


def _name(m: re.Match) -> str | None:
    """A name a user gives as their own: group 1, or after "my name is" and its equivalents (group
    "n"), as much of what follows as is a name (scrub_detectors.name_length)."""
    if "n" not in m.re.groupindex:
        return m.group(0)[: m.start(1) - m.start(0)] + "[NAME]" + m.group(0)[m.end(1) - m.start(0):]
    length = det.name_length(m.group("n"))
    if not length:
        return None
    cut = m.start("n") - m.start(0)
    return m.group(0)[:cut] + "[NAME]" + m.group(0)[cut + length:]


def _address(m: re.Match) -> str:
    """[ADDRESS] for the match; the comma before a postcode and city stays (", [ADDRESS]")."""
    return (", " if m.group(0).startswith(",") else "") + "[ADDRESS]"


def _crypto(m: re.Match) -> str | None:
    value = m.group(0)
    if value.startswith("bc1") or det.base58check_ok(value):
        return "[CRYPTO_ADDRESS]"
    return None


_REPLACEMENTS: dict[str, Repl] = {
    "private_key": "[SECRET]", "url_credentials": _url_credentials, "url_secret_param": _url_param,
    "email": _email, "webhook": "[SECRET]", "api_key": "[API_KEY]", "token": "[TOKEN]", "jwt": "[TOKEN]",
    "bearer_token": _bearer, "auth_header": lambda m: m.group(1) + "[TOKEN]",
    "connection_secret": lambda m: m.group(1) + "[SECRET]",
    "secret_assignment": _keyword_value, "password": _prose_value, "password_bare": _bare_password,
    "card_cvv": _checked(lambda v: True, "[SECRET]", 1), "card_expiry": _checked(lambda v: True, "[SECRET]", 1),
    "crypto_wallet": _crypto, "secret": _hex, "high_entropy": _random_run,
    "iban": det.scrub_iban, "ssn": _ssn, "ssn_context": _checked(lambda v: True, "[SSN]", 1),
    "national_id": "[ID_NUMBER]", "id_context": _checked(lambda v: sum(c.isdigit() for c in v) >= 4, "[ID_NUMBER]", 1),
    "bank_account": _checked(lambda v: sum(c.isdigit() for c in v) >= 6, "[ACCOUNT_NUMBER]", 1),
    "date_of_birth": _checked(lambda v: True, "[DATE_OF_BIRTH]", 1),
    "ip_address": _ipv4, "ipv6_address": _ipv6, "mac_address": "[MAC_ADDRESS]",
    "street_address": _address, "name": _name, "cli_credentials": _cli_value,
}

_RULES = [(kind, pattern, gate, _REPLACEMENTS[kind]) for kind, pattern, gate in PATTERNS]


def _open_gate(gate, text: str, lower: str) -> bool:
    if isinstance(gate, re.Pattern):
        return gate.search(text) is not None
    return any(g.search(text) is not None if isinstance(g, re.Pattern) else g in lower for g in gate)


def scrub(text: str) -> Scrubbed:
    """Replace personal data and secrets with fixed placeholders; report whether anything was
    replaced and which kinds."""
    kinds: set[str] = set()
    lower = text.lower()
    for kind, pattern, gate, repl in _RULES:
        if gate is not None and not _open_gate(gate, text, lower):
            continue
        def sub(m: re.Match, kind: str = kind, repl: Repl = repl) -> str:
            out = repl if isinstance(repl, str) else repl(m)
            if out is None or out == m.group(0):
                return m.group(0)
            kinds.add(kind)
            return out
        text = pattern.sub(sub, text)
        if kind == "iban":  # cards after IBANs (an IBAN holds digit groups), before phones and IDs
            text = det.scrub_cards(text, kinds)
    text = scrub_phones(text, kinds)
    return Scrubbed(text, bool(kinds), tuple(sorted(kinds)))
