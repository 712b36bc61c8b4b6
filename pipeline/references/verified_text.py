"""The request view of a pair and the features of one text, for the reference verified cache.

A pair is read through `request_view`, which keeps only the request fields (query texts, system
prompts, earlier turns, offered tools) and the scope fields of the pair contract (who asks: user and
tenant ids, the tool_choice, and the status of the response stored for A; None when not given,
pipeline.harness.interface.OPTIONAL_FIELDS). Nothing else of a row (domain, subcategory, label, id,
construction method, source, verification payload, rationale, expected answers) can reach a
feature: the functions here and in verified_features.py never see it.

One text: its earlier turns and offered tools as text, and its answer-determining tokens (variables,
identifiers, quoted strings, operators, units, language names, natural language, capitalised names)
and policy signals (`side_signals`). The word lists are verified_lexicon.py's.
Standard library and pipeline.harness.interface only.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, Mapping

from pipeline.harness.interface import OPTIONAL_FIELDS, optional_fields
from pipeline.references.verified_lexicon import LANG_STOPWORDS, OPERATOR_SYMBOLS, OPERATOR_WORDS, UNITS, word_lists

# The only row fields a feature may read: what a cache sees of a request on any traffic.
REQUEST_FIELDS = ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b",
                  "tools_a", "tools_b")
# Who asks (user, tenant), the tool_choice and the stored response's status: a cache sees them on any
# traffic (the pair contract), and a pair that differs in them is never served (verified.VETOES).
SCOPE_FIELDS = OPTIONAL_FIELDS

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*\(|\b[A-Za-z]+_[A-Za-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b|"
                    r"\b[A-Z]{2,}[0-9]*\b|\b[A-Za-z]+[0-9]+[A-Za-z0-9]*\b")
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|'([^']{2,80})'(?!\w)")
_FIRST_PERSON = frozenset("i me my mine myself we us our ours".split())


def request_view(row: Any) -> dict[str, Any]:
    """The request and scope fields of a row (a Row, a mapping or a Pair), and nothing else."""
    get = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    scope = optional_fields(row)
    return {**{k: get(k, None) for k in REQUEST_FIELDS}, **{k: scope.get(k) for k in SCOPE_FIELDS}}


# ---- one text

def context_text(context: Any) -> str:
    """Earlier turns as one text ("role: content" per turn); "" when there are none."""
    if not context:
        return ""
    if isinstance(context, str):
        return context
    parts = []
    for turn in context:
        if isinstance(turn, Mapping):
            parts.append(f"{turn.get('role', '')}: {turn.get('content', '')}")
        else:
            parts.append(str(turn))
    return "\n".join(parts)


def tool_texts(tools: Any) -> list[tuple[str, str]]:
    """(name, "name words: description") of each offered tool, sorted by name."""
    out = []
    for t in tools or []:
        if not isinstance(t, Mapping):
            continue
        fn = t.get("function") if isinstance(t.get("function"), Mapping) else t
        name = str(fn.get("name", ""))
        desc = str(fn.get("description", ""))
        out.append((name, f"{name.replace('_', ' ').replace('.', ' ')}: {desc}".strip()))
    return sorted(set(out))


def variables(text: str) -> frozenset[str]:
    """Single letters used as variables: next to an operator, a digit, a bracket or a comma."""
    toks = re.findall(r"\d+(?:[.,]\d+)*|[^\W\d_]+|[^\w\s]", unicodedata.normalize("NFKC", text))
    out = set()
    for i, t in enumerate(toks):
        if len(t) == 1 and t.isalpha() and t.isascii():
            nb = [toks[j] for j in (i - 1, i + 1) if 0 <= j < len(toks)]
            if any(n in OPERATOR_SYMBOLS or n in "(),[]" or n[0].isdigit() for n in nb):
                out.add(t)
    return frozenset(out)


def identifiers(text: str) -> frozenset[str]:
    """Code-like names: calls `name(`, snake_case, camelCase, ACRONYMS, letters with digits."""
    return frozenset(m.group(0).rstrip("( ").casefold() for m in _IDENT.finditer(text))


def quoted(text: str) -> frozenset[str]:
    return frozenset(next(g for g in m.groups() if g).casefold() for m in _QUOTED.finditer(text))


def math_signature(text: str) -> str:
    """Digits, signs and brackets of a text in order, written one way ("x**2 - 3*x" and "x^2-3x" agree)."""
    t = unicodedata.normalize("NFKC", text).replace("**", "^").replace("×", "*").replace("−", "-")
    t = re.sub(r"\.(?!\d)", "", t)
    return "".join(ch for ch in t if ch.isdigit() or ch in "+-/^=()<>%.√∫")


def operators(text: str) -> tuple[str, ...]:
    """Operator symbols (in order) and operator words (sorted) of a text."""
    syms = [ch for ch in unicodedata.normalize("NFKC", text) if ch in OPERATOR_SYMBOLS]
    wds = sorted(w for w in word_lists()["words"](text) if w in OPERATOR_WORDS)
    return tuple(syms) + tuple(wds)


def units(text: str) -> frozenset[str]:
    """Units written after a number or on their own ("km", "miles", "%", "celsius")."""
    t = unicodedata.normalize("NFKC", text).casefold()
    found = set()
    for m in UNITS.finditer(t):
        u = m.group(0)
        before = t[:m.start()].rstrip()
        # a one- or two-letter unit only right after a number ("5 m", "2lb"), else it is a word
        if len(u) <= 2 and u != "%" and not (before and before[-1].isdigit()):
            continue
        found.add(u.rstrip("s") if len(u) > 3 else u)
    return frozenset(found)


def language_names(text: str) -> frozenset[str]:
    """Programming and natural languages a text names (mining.LANGUAGES); "C" and "R" only capitalised."""
    langs = word_lists()["languages"]
    out = set()
    for m in re.finditer(r"[A-Za-z+#]+", unicodedata.normalize("NFKC", text)):
        w = m.group(0)
        lw = {"c++": "cpp", "c#": "csharp", "js": "javascript", "ts": "typescript", "go": "golang"}.get(w.casefold(), w.casefold())
        if lw in ("c", "r") and w not in ("C", "R"):
            continue
        if lw == "golang" and w != "Go":
            continue
        if lw in langs:
            out.add(lw)
    return frozenset(out)


def natural_language(text: str) -> str:
    """The text's writing system, and for Latin script the language whose stopwords it uses most."""
    sc = word_lists()["script"](text)
    if sc != "LATIN":
        return sc
    ws = word_lists()["words"](text)
    scores = sorted((-sum(w in sw for w in ws), lang) for lang, sw in LANG_STOPWORDS.items())
    if scores[0][0] == 0 or scores[0][0] == scores[1][0]:
        return "und"   # no stopword, or a tie: undetermined
    return scores[0][1]


def names(text: str) -> frozenset[str]:
    """Capitalised words other than at a sentence start (domains.corpora.common.entities)."""
    found = word_lists()["entities"](text)
    return frozenset(found or ())


def capitalised(text: str) -> frozenset[str]:
    """Every capitalised word, sentence starts included ("1. Guernica" in a listed answer), except "I"."""
    return frozenset(w.casefold() for w in re.findall(r"[^\W\d_][\w'-]*", unicodedata.normalize("NFKC", text))
                     if w[0].isupper() and w != "I")


# English negation as a request writes it: a word, or a verb's "n't" (with or without the apostrophe).
# Not the polarity trap's table (domains/corpora/traps/tables.py): a cache that read the generator's own
# list would learn our template, not the change.
_NEGATED_VERB = re.compile(r"\b(ca|wo|sha|is|was|are|were|do|does|did|could|should|would|has|have|had|must|need|might)"
                           r"(?:n't|nt)\b")
_NEGATION_WORD = re.compile(r"\b(?:not|never|no|cannot)\b")
_BARE = {"ca": "can", "wo": "will", "sha": "shall"}


def without_negation(text: str) -> tuple[tuple[str, ...], int]:
    """(the text's words with every English negation taken out, how many were taken out): "wasn't"
    -> "was", "can't" and "cannot" -> "can", "won't" -> "will", "is not" -> "is". Two requests whose
    words are then equal, with another count, differ only by a negation added or removed."""
    t = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    t, verbs = _NEGATED_VERB.subn(lambda m: _BARE.get(m.group(1), m.group(1)), t)
    t = re.sub(r"\bcannot\b", "can not", t)
    t, words = _NEGATION_WORD.subn(" ", t)
    return tuple(re.findall(r"\w+", t)), verbs + words


def side_signals(text: str) -> dict[str, float]:
    """Policy signals of one request text."""
    L = word_lists()
    norm = L["normalize"](text)
    toks = L["tokens"](text)
    return {
        "creative": float(bool(L["creative"].search(" ".join(toks[:60])))),
        "creative_noun": float(bool(L["creative_nouns"].search(" ".join(toks)))),
        "time": float(L["live"](norm)),
        "no_hit": float(len(L["no_hit_words"].findall(text))),
        "first_person": float(sum(1 for w in L["words"](text) if w in _FIRST_PERSON)),
        "question": float("?" in text),
    }

