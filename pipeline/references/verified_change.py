"""What changed between the two requests of a pair (features v2 of the verified cache, #27 item 7).

A cache that learns one generator's templates (their lengths, their fixed phrasings) does not carry
over to other traffic; what carries over is *what the edit touched*. The two queries are aligned
word by word (difflib), and the words on either side of each non-equal stretch are the changed
words. Each changed word is put in the classes below, and the features say which classes the
change touched, whether a class was swapped (a replaced stretch with the class on both sides: one
number for another, one name for another, "before" for "after"), and how large the change is:

- `entity`: a capitalised word not first in its sentence (a name, a place); `number`: digits or a
  number word; `date`: month and day names, years, date-shaped tokens; `unit`: units of measure;
- `scope`: all/some/only/every/any/each/none/most/few, and region or time windows (today, this
  week, per month, in Europe ...); `polarity`: negation and opposite pairs (not, without,
  before/after, best/worst, increase/decrease, pros/cons, advantages/disadvantages, ...);
  `comparison`: than, more, less, better, versus, compare ...;
- `function`: stopwords only (the change is surface: articles, politeness, punctuation).

The earlier turns are aligned turn by turn (how many differ, the share of their words that differ,
whether the last turn differs, and the classes of the words that changed); the system prompts and
the offered tools likewise (differ or not, changed classes, tools added or removed).

Request fields only (verified_text.request_view). Standard library only.
"""
from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from typing import Any, Mapping, Sequence

from pipeline.references.verified_lexicon import UNITS, word_lists
from pipeline.references.verified_text import context_text, tool_texts

_TOKEN = re.compile(r"[^\W_]+(?:[.,'’:/-][^\W_]+)*|[^\w\s]", re.UNICODE)
_DIGIT = re.compile(r"\d")
_DATE = re.compile(r"^(?:1[0-9]{3}|20[0-9]{2})$|^\d{1,4}[/.-]\d{1,2}(?:[/.-]\d{1,4})?$|^\d{1,2}(?:st|nd|rd|th)$")
NUMBER_WORDS = frozenset("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                         "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
                         "eighty ninety hundred thousand million billion first second third fourth fifth sixth "
                         "seventh eighth ninth tenth half double triple twice once dozen".split())
DATE_WORDS = frozenset("january february march april may june july august september october november december "
                       "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
                       "friday saturday sunday weekend century decade".split())
SCOPE_WORDS = frozenset("all some only every any each none most few many several both either neither whole "
                        "entire just except including excluding per today tonight tomorrow yesterday now "
                        "currently current week weekly month monthly year yearly annual annually daily hourly "
                        "day days weeks months years hour hours morning evening night this next last past "
                        "upcoming recent recently worldwide global globally local locally national nationwide "
                        "region regional country city state europe european asia asian africa african america "
                        "american us uk eu world".split())
POLARITY_WORDS = frozenset("not no never without cannot can't don't doesn't isn't aren't won't nor none nothing "
                           "before after best worst good bad increase increases decrease decreases raise lower "
                           "rise fall up down pros cons pro con advantages disadvantages advantage disadvantage "
                           "benefits drawbacks benefit drawback causes effects cause effect prevent prevention "
                           "treat treatment cure min max minimum maximum ascending descending encode decode "
                           "encrypt decrypt inclusive exclusive add remove include exclude allow forbid enable "
                           "disable open close start stop on off true false positive negative beginner beginners "
                           "expert experts easy hard cheap expensive safe unsafe legal illegal first last".split())
COMPARISON_WORDS = frozenset("than more less fewer better worse larger smaller bigger greater higher lower faster "
                             "slower longer shorter cheaper older younger vs versus compare compared comparison "
                             "difference differ between rather instead prefer most least".split())
CLASSES = ("entity", "number", "date", "unit", "scope", "polarity", "comparison", "function")
_SENT_END = frozenset(".?!:;\n")


def tokens(text: str) -> list[str]:
    """Words and punctuation marks of a text, case kept."""
    return _TOKEN.findall(text or "")


def _classes(tok: str, prev: str | None) -> set[str]:
    """The classes of one token (`prev`: the token before it, None at the start)."""
    low = tok.casefold()
    out = set()
    if _DIGIT.search(tok) or low in NUMBER_WORDS:
        out.add("number")
    if low in DATE_WORDS or _DATE.match(low):
        out.add("date")
    if UNITS.fullmatch(low):
        out.add("unit")
    if low in SCOPE_WORDS:
        out.add("scope")
    if low in POLARITY_WORDS or low.endswith("n't"):
        out.add("polarity")
    if low in COMPARISON_WORDS or (low.endswith("est") and len(low) > 5) or (low.endswith("er") and low[:-2] in COMPARISON_WORDS):
        out.add("comparison")
    if tok[:1].isupper() and prev is not None and prev not in _SENT_END and not tok.isupper() or (tok.isupper() and len(tok) > 1):
        out.add("entity")
    if not out and (low in word_lists()["stopwords"] or not tok[:1].isalnum()):
        out.add("function")
    return out


def _spans(ta: Sequence[str], tb: Sequence[str]) -> list[tuple[str, list[int], list[int]]]:
    """(opcode, changed token indices of a, of b) per non-equal stretch, aligned case-insensitively."""
    sm = SequenceMatcher(None, [t.casefold() for t in ta], [t.casefold() for t in tb], autojunk=False)
    return [(op, list(range(i1, i2)), list(range(j1, j2))) for op, i1, i2, j1, j2 in sm.get_opcodes() if op != "equal"]


def _token_classes(toks: Sequence[str]) -> list[set[str]]:
    return [_classes(t, toks[i - 1] if i else None) for i, t in enumerate(toks)]


def change_of(a: str, b: str) -> dict[str, Any]:
    """The changed words of two texts and their classes (for features and error analysis)."""
    ta, tb = tokens(a), tokens(b)
    ca, cb = _token_classes(ta), _token_classes(tb)
    spans = _spans(ta, tb)
    touched: set[str] = set()
    swapped: set[str] = set()
    changed_a, changed_b = [], []
    case_only = True
    for op, ia, ib in spans:
        sa = set().union(*(ca[i] for i in ia)) if ia else set()
        sb = set().union(*(cb[j] for j in ib)) if ib else set()
        touched |= sa | sb
        if op == "replace":
            swapped |= sa & sb
        changed_a += [ta[i] for i in ia]
        changed_b += [tb[j] for j in ib]
    if [t.casefold() for t in changed_a if t[:1].isalnum()] != [t.casefold() for t in changed_b if t[:1].isalnum()]:
        case_only = False
    content = [t for t, c in zip(changed_a + changed_b, [ca[i] for _, ia, _ in spans for i in ia] +
                                                      [cb[j] for _, _, ib in spans for j in ib]) if "function" not in c]
    return {"spans": len(spans), "changed_a": changed_a, "changed_b": changed_b, "touched": touched,
            "swapped": swapped, "content": content, "case_only": case_only and bool(spans),
            "inserted_only": bool(spans) and all(op in ("insert", "delete") for op, _, _ in spans),
            "len": max(len(ta), len(tb), 1)}


def _text_change(prefix: str, a: str, b: str) -> dict[str, float]:
    ch = change_of(a, b)
    n = len(ch["changed_a"]) + len(ch["changed_b"])
    f = {f"{prefix}_spans": float(ch["spans"]), f"{prefix}_share": n / (2 * ch["len"]),
         f"{prefix}_content_words": float(len(ch["content"])), f"{prefix}_case_only": float(ch["case_only"]),
         f"{prefix}_inserted_only": float(ch["inserted_only"]),
         f"{prefix}_surface_only": float(bool(ch["spans"]) and not ch["content"])}
    for c in CLASSES:
        f[f"{prefix}_{c}"] = float(c in ch["touched"])
        if c != "function":
            f[f"{prefix}_{c}_swap"] = float(c in ch["swapped"])
    return f


def _turns(context: Any) -> list[str]:
    return [context_text([t]) for t in (context or [])] if not isinstance(context, str) else [context]


def _tools_json(tools: Any) -> dict[str, str]:
    return {n: json.dumps(t, sort_keys=True, ensure_ascii=False) for (n, _), t in zip(tool_texts(tools), tools or [])}


def change_features(view: Mapping[str, Any]) -> dict[str, float]:
    """The change features of a pair's request view (see the module docstring)."""
    f = _text_change("chg", view["query_a"] or "", view["query_b"] or "")
    ta, tb = _turns(view["context_a"]), _turns(view["context_b"])
    n = max(len(ta), len(tb))
    differ = [i for i in range(n) if i >= len(ta) or i >= len(tb) or ta[i].casefold() != tb[i].casefold()]
    f["turns_differing"] = float(len(differ))
    f["turns_differing_share"] = len(differ) / n if n else 0.0
    f["turns_last_differs"] = float(bool(n) and (n - 1) in differ)
    f["turns_count_diff"] = float(abs(len(ta) - len(tb)))
    f.update(_text_change("ctx", "\n".join(ta), "\n".join(tb)))
    f.update(_text_change("sys", view["system_prompt_a"] or "", view["system_prompt_b"] or ""))
    ja, jb = _tools_json(view["tools_a"]), _tools_json(view["tools_b"])
    f["tools_added_removed"] = float(len(set(ja) ^ set(jb)))
    f["tools_changed"] = float(sum(1 for k in set(ja) & set(jb) if ja[k] != jb[k]))
    return f

