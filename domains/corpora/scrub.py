"""Scrub personal data and secrets from real-traffic text before anything is embedded or written.

`scrub(text)` returns `Scrubbed(text, scrubbed, kinds)`: the text with every match replaced by a
fixed placeholder ("[EMAIL]", "[PHONE]", "[API_KEY]", "[TOKEN]", "[SECRET]",
"[URL_WITH_CREDENTIALS]"), whether anything was replaced, and the sorted kinds replaced. The
placeholders are deterministic (no hashing of the secret), so two prompts that differed only in a
scrubbed value become identical and are then handled as duplicates, never as a pair that leaks it.

Order matters: credential URLs before e-mails (`user:pass@host` looks like an address), specific
key formats before the generic long hex/base64 rule, and phones last (keys contain digit runs).
The rules err on the side of scrubbing: a false positive costs a prompt, a miss leaks a secret.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple


class Scrubbed(NamedTuple):
    text: str
    scrubbed: bool
    kinds: tuple[str, ...]


def _has_digit_and_letters(s: str) -> bool:
    return any(ch.isdigit() for ch in s) and any(ch.islower() for ch in s) and any(ch.isupper() for ch in s)


def _phone(m: re.Match) -> str | None:
    digits = sum(ch.isdigit() for ch in m.group(0))
    # 9-15 digits: shorter runs are years, ranges and prices; longer ones are not phone numbers.
    return "[PHONE]" if 9 <= digits <= 15 else None


# (kind, pattern, replacement: fixed string or function returning the string, or None to keep the match)
_RULES: list[tuple[str, re.Pattern, str | Callable[[re.Match], str | None]]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
     "[SECRET]"),
    ("url_credentials", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:[^\s/@]+@[^\s/?#]+"), "[URL_WITH_CREDENTIALS]"),
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), "[EMAIL]"),
    # A scheme word followed by a long token with a digit: "basic certifications" is not a credential.
    ("bearer_token", re.compile(r"\b([Bb]earer|BEARER|Basic)\s+([A-Za-z0-9._~+/=-]{12,})"),
     lambda m: f"{m.group(1)} [TOKEN]" if any(ch.isdigit() for ch in m.group(2)) else None),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), "[TOKEN]"),
    ("api_key", re.compile(r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"), "[API_KEY]"),
    ("api_key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "[API_KEY]"),
    ("api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), "[API_KEY]"),
    ("api_key", re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), "[API_KEY]"),
    ("token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,})"), "[TOKEN]"),
    ("token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "[TOKEN]"),
    ("token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "[TOKEN]"),
    # `password = hunter22`, `"api_key": "..."`: keep the name, drop the value.
    ("secret_assignment", re.compile(
        r"""(?i)\b((?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token|password|passwd|pwd)"""
        r"""["']?\s*[:=]\s*["']?)([^\s"',;]{6,})"""),
     lambda m: None if m.group(2).startswith("[") else f"{m.group(1)}[SECRET]"),
    ("secret", re.compile(r"\b[0-9a-fA-F]{32,}\b"), "[SECRET]"),
    ("secret", re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/_-]{40,}={0,2}"),
     lambda m: "[SECRET]" if _has_digit_and_letters(m.group(0)) else None),
    ("phone", re.compile(r"(?<![\w.+])\+\d{9,14}(?!\w|[.,-]\d)"), "[PHONE]"),
    # With a country code or a bracketed area code: any grouping of 9-15 digits.
    ("phone", re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?|\(\d{1,4}\)[\s.-]?)\d{2,4}(?:[\s.-]\d{2,4}){1,3}(?!\w|[.,-]\d)"),
     _phone),
    # Bare: exactly the 3-3-4 / 3-4-4 shape (555-123-4567, 020 7946 0958), not decimals or number lists.
    ("phone", re.compile(r"(?<![\w.,-])\d{3}([\s.-])\d{3,4}\1\d{4}(?!\w|[.,-]\d)"), "[PHONE]"),
]


def scrub(text: str) -> Scrubbed:
    """Replace e-mails, phone numbers, API keys, tokens, long hex/base64 secrets and credential URLs
    with fixed placeholders; report whether anything was replaced and which kinds."""
    kinds: set[str] = set()
    for kind, pattern, repl in _RULES:
        def sub(m: re.Match, kind: str = kind, repl=repl) -> str:
            out = repl if isinstance(repl, str) else repl(m)
            if out is None:
                return m.group(0)
            kinds.add(kind)
            return out
        text = pattern.sub(sub, text)
    return Scrubbed(text, bool(kinds), tuple(sorted(kinds)))
