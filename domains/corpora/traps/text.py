"""Text helpers the trap operators share: words with their offsets, the regions no operator may touch
(code, quotes, URLs, paths, placeholders, emails), sentence starts, title-like capitalised runs, case
transfer and the a/an article rule. Standard library only.

The acceptance check (`accept.py`) does NOT use these helpers: it tokenises on its own, so that an
operator bug here cannot make its own output pass."""
from __future__ import annotations

import re
from dataclasses import dataclass

WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?(?:[+#]+)?")

# Regions no operator edits: fenced and inline code, quoted text (double quotes, curly quotes, single
# quotes that open after a space), URLs, e-mail addresses, file paths and names, bracketed
# placeholders ([NAME], the scrubber's [SECRET]), braces, and code-looking lines.
_PROTECT = [
    re.compile(r"```.*?(?:```|\Z)", re.S),
    re.compile(r"`[^`\n]*`"),
    re.compile(r'"[^"\n]*"'),
    re.compile(r"“[^”\n]*”"),
    re.compile(r"‘[^’\n]*’"),
    re.compile(r"(?:(?<=\s)|^)'[^'\n]{1,80}'(?=[\s.,;:!?)]|$)"),
    re.compile(r"(?:https?://|www\.)\S+", re.I),
    re.compile(r"\S+@\S+\.\w+"),
    re.compile(r"\S*[/\\]\S+"),
    re.compile(r"\b[\w-]+\.(?:py|js|ts|java|c|cpp|h|rb|go|rs|php|html|css|json|yaml|yml|txt|csv|md|sh|exe|pdf|docx?|xlsx?)\b", re.I),
    re.compile(r"\[[^\]\n]*\]"),
    re.compile(r"\{[^}]*\}", re.S),
    re.compile(r"<[^>\n]*>"),
    re.compile(r"^.*(?:[;{}=]|\(\)|=>|->|::).*$", re.M),
    re.compile(r"^(?: {4}|\t).*$", re.M),
    re.compile(r"\b\w+_\w+\b"),                 # snake_case identifiers
    re.compile(r"\b[a-z]+[A-Z]\w*\b"),          # camelCase identifiers
    re.compile(r"\b\w+\(\S*\)"),                # calls: f(x)
]


@dataclass(frozen=True)
class Tok:
    text: str
    start: int
    end: int

    @property
    def low(self) -> str:
        return self.text.lower()


def words(text: str) -> list[Tok]:
    return [Tok(m.group(0), m.start(), m.end()) for m in WORD.finditer(text)]


def protected(text: str) -> list[tuple[int, int]]:
    """Character ranges inside a protected region."""
    spans = [(m.start(), m.end()) for p in _PROTECT for m in p.finditer(text)]
    return sorted(spans)


def is_free(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return not any(s < end and start < e for s, e in spans)


_SENT_END = re.compile(r"[.!?:;\n]\s*$")


def sentence_initial(text: str, start: int) -> bool:
    """Whether the word starting at `start` opens a sentence (or the text, or a line)."""
    before = text[:start]
    return not before.strip() or bool(_SENT_END.search(before)) or before.rstrip().endswith(('"', "(", "-"))


def capitalised(word: str) -> bool:
    return word[:1].isupper()


def in_title_run(text: str, toks: list[Tok], i: int, j: int) -> bool:
    """Whether tokens i..j-1 sit inside a longer run of capitalised words (a title, a name, an
    organisation: "New York Times", "University of Paris", "Paris Hilton") in mixed-case text."""
    nxt = toks[j] if j < len(toks) else None
    prev = toks[i - 1] if i > 0 else None
    if nxt is not None and capitalised(nxt.text) and text[toks[j - 1].end:nxt.start] in (" ", "-"):
        return True
    if prev is not None and capitalised(prev.text) and text[prev.end:toks[i].start] in (" ", "-") \
            and not sentence_initial(text, prev.start):
        return True
    if prev is not None and prev.low in ("of", "de", "the", "and", "&") and i >= 2 and capitalised(toks[i - 2].text) \
            and not sentence_initial(text, toks[i - 2].start) and prev.text != "The":
        return True
    return False


def match_case(source: str, target: str) -> str:
    """`target` written in the case style of `source` (lower, UPPER, Title, or as given)."""
    if source.islower():
        return target.lower()
    if source.isupper() and len(source) > 1:
        return target.upper()
    if source[:1].isupper() and source[1:].islower() and target[:1].islower():
        return target[:1].upper() + target[1:]
    return target


def fix_article(text: str, start: int, new: str) -> tuple[int, str] | None:
    """When the word before `start` is the article a/an and `new` needs the other one, return the
    new start (the article's) and the replacement with the right article; None when nothing to fix."""
    m = re.search(r"\b([Aa]n?) $", text[:start])
    if not m:
        return None
    article = m.group(1)
    wants_an = needs_an(new)
    if (article.lower() == "an") == wants_an:
        return None
    fixed = ("An" if article[0] == "A" else "an") if wants_an else ("A" if article[0] == "A" else "a")
    return m.start(1), f"{fixed} {new}"


def needs_an(word: str) -> bool:
    w = word.strip().lower()
    if not w:
        return False
    if re.match(r"(?:uni|use|usu|eu|one|once|ewe|u[bcfhjkqrst][aeiou])", w):
        return False
    if re.match(r"(?:hour|honest|honou?r|heir)", w):
        return True
    if re.match(r"[8]|11\b|18\b", w):
        return True
    if len(w) > 1 and w.isupper() is False and re.fullmatch(r"[a-z]", w[0]) and word[:2].isupper():
        return w[0] in "aefhilmnorsx"     # acronyms read letter by letter: an FAQ, an MBA
    return w[0] in "aeiou"


def replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


@dataclass(frozen=True)
class Edit:
    """One replacement: text[start:end] (== old) becomes new."""

    start: int
    end: int
    old: str
    new: str
    kind: str
    evidence: tuple[tuple[str, object], ...] = ()


def make_edit(text: str, start: int, end: int, new: str, kind: str, **evidence) -> Edit:
    """An edit, with the article before it fixed when the new word needs the other one."""
    fixed = fix_article(text, start, new)
    if fixed is not None:
        start, new = fixed
    return Edit(start, end, text[start:end], new, kind, tuple(sorted(evidence.items())))


WH = frozenset("what which who whom whose why how when where whether".split())
AUX = frozenset("is are was were am be been being can could should would will shall may might must do does did "
                "has have had".split())
PRONOUNS = frozenset("i you he she it we they me him her us them".split())
DETERMINERS = frozenset("a an the this that these those my your his her its our their some any no every each".split())
ADJ_SUFFIX = ("ful", "ous", "ive", "able", "ible", "al", "ic", "ent", "ant", "ary", "ing", "ed", "y", "ate", "ile",
              "ure", "ise", "ize", "ose", "less", "ish")
NOT_ADJ = frozenset(("ing thing things nothing something anything everything money time data people energy way "
                    "family body company country history city story study party day days many any only early "
                    "reality quality").split())


def adjective_like(word: str) -> bool:
    """A rough test that a lower-case word is an adjective (after "more"/"less"/"most")."""
    w = word.lower()
    if w in NOT_ADJ or len(w) < 4:
        return w in {"fun", "big", "fit", "hot", "new", "old"}
    return w.endswith(ADJ_SUFFIX) or w in {"secure", "robust", "concise", "complex", "simple", "stable", "likely",
                                           "clear", "strict", "accurate", "formal", "casual", "polite", "modern",
                                           "common", "popular", "famous", "recent", "precise", "detailed"}
