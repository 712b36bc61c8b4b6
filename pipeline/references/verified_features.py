"""Features of the reference verified cache: what a cache sees of a request pair on any traffic.

A pair is read through `request_view`, which keeps only the request fields (query texts, system
prompts, earlier turns, offered tools). Nothing else of a row (domain, subcategory, label, id,
construction method, source, verification payload, rationale, expected answers) can reach a
feature: the functions below never see it.

Features, in FEATURE_NAMES order:
- embeddings: cosine of the two queries under MiniLM-L6 and a second embedder; MiniLM cosine of
  the earlier turns, of the system prompts, and of each query to three policy prototypes (a
  creative request, a question about the present, a state-changing command); the tool each query
  most likely calls (the offered tool whose name and description are closest to it under MiniLM);
- lexical: the project's pair rule (domains.corpora.mining.classify: surface variant, one token
  substituted as a number, language, direction or name, role swap, ...), token and content-word
  overlap, edits, length;
- answer-determining tokens: numbers (digits and number words), variables and identifiers,
  quoted strings, capitalised names, negation, direction words and swapped direction pairs,
  operators, units, programming and natural language names mentioned, the text's natural
  language (script and stopwords);
- request parts: whether system prompts, earlier turns and offered tools are equal, and what
  differs in them (numbers, names);
- policy signals: creative request, time-sensitive words, the no-hit words of function calling
  (mutation verbs, live data), on either side and in the tool each side calls.

The word lists are the project's own (domains.text, domains.corpora.common / mining / bfcl); the
few that exist nowhere else (negation, units, natural-language stopwords, operator words) are here.
Standard library at import; numpy only inside `pair_features` (cosines).
"""
from __future__ import annotations

import json
import re
import unicodedata
from difflib import SequenceMatcher
from typing import Any, Callable, Mapping

FEATURE_VERSION = "1"

# The only row fields a feature may read: what a cache sees of a request on any traffic.
REQUEST_FIELDS = ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b",
                  "tools_a", "tools_b")

# Prototype requests for the policy signals (MiniLM cosine of each query to each).
PROTOTYPES = {
    "creative": "Write me a poem, a short story, song lyrics, a slogan or a joke.",
    "live": "What is the weather, the price or the latest news right now, today?",
    "action": "Send, delete, book, pay, order, set or change something for me.",
}

# Words that negate (en, de, fr, es, it, pt, nl); "n't" is tokenised as "t".
NEGATION = frozenset("""not no never none nothing nobody neither nor cannot without t isnt dont doesnt
didnt cant wont nicht kein keine keinen nie ohne ne pas jamais sans ni nunca sin nada non senza mai
nao não sem nunca niet geen nooit zonder""".split())
# Words naming an arithmetic operation or comparison.
OPERATOR_WORDS = frozenset("""plus minus times multiplied divided over sum difference product quotient
add subtract multiply divide squared cubed root power modulo mod greater less equal exceeds""".split())
OPERATOR_SYMBOLS = frozenset("+-*/^=<>%√×÷·")
UNITS = re.compile(
    r"(?<![^\W\d])(?:km|kms|m|cm|mm|kg|g|mg|lb|lbs|oz|l|ml|mph|kmh|km/h|m/s|ft|in|yd|mi|s|ms|h|hr|hrs|min|mins|"
    r"°c|°f|c|f|k|%|percent|kilomet(?:er|re)s?|met(?:er|re)s?|centimet(?:er|re)s?|millimet(?:er|re)s?|"
    r"miles?|feet|foot|inch(?:es)?|yards?|grams?|kilograms?|kilos?|pounds?|ounces?|lit(?:er|re)s?|"
    r"millilit(?:er|re)s?|gallons?|gal|quarts?|pints?|cups?|tablespoons?|teaspoons?|seconds?|minutes?|"
    r"hours?|days?|weeks?|months?|years?|celsius|fahrenheit|kelvin|degrees?|dollars?|euros?|pounds?|"
    r"usd|eur|gbp|jpy|cents?|bytes?|kb|mb|gb|tb|watts?|volts?|hz|khz|mhz|ghz|acres?|hectares?)(?![\w])")
# A handful of frequent function words per language, enough to tell the languages of the
# multilingual seeds and the corpora (PAWS-X, XQuAD, MASSIVE) apart on a short question.
LANG_STOPWORDS = {
    "en": frozenset("the is are what which who how of in on to a an and do does did you my for with it this that "
                    "be can from me your at by".split()),
    "de": frozenset("der die das ist sind was welche welcher welches wer wie von in im auf und ein eine nach vor man".split()),
    "fr": frozenset("le la les est sont que quel quelle qui comment de du des en et un une après avant on".split()),
    "es": frozenset("el la los las es son qué que cuál quién cómo de del en y un una después antes se".split()),
    "it": frozenset("il lo la gli le è sono che quale chi come di del della in e un una dopo prima si".split()),
    "pt": frozenset("o a os as é são que qual quem como de do da em e um uma depois antes se".split()),
    "nl": frozenset("de het een is zijn wat welke wie hoe van in op en na voor men komt".split()),
}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*\(|\b[A-Za-z]+_[A-Za-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b|"
                    r"\b[A-Z]{2,}[0-9]*\b|\b[A-Za-z]+[0-9]+[A-Za-z0-9]*\b")
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|'([^']{2,80})'(?!\w)")
_FIRST_PERSON = frozenset("i me my mine myself we us our ours".split())
# A tool description saying its result is live, or reads the user's own state.
_LIVE = re.compile(r"\blive\b", re.IGNORECASE)
_PERSONAL = re.compile(r"\b(?:user'?s?|my|home'?s?)\b", re.IGNORECASE)


def request_view(row: Any) -> dict[str, Any]:
    """The request fields of a row (a Row, or a mapping), and nothing else."""
    get = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    return {k: get(k, None) for k in REQUEST_FIELDS}


# ---- the project's word lists, imported when first used (the harness imports nothing heavy)

_LISTS: dict[str, Any] = {}


def _lists() -> dict[str, Any]:
    if not _LISTS:
        from domains.corpora import bfcl, common, mining
        from domains import text

        _LISTS.update(
            tokens=mining.tokens, classify=mining.classify, languages=mining.LANGUAGES,
            directions=mining.DIRECTIONS, direction_words=mining.DIRECTION_WORDS,
            creative=mining._CREATIVE, no_hit=bfcl._NO_HIT,
            number_set=common.number_set, entities=common.entities, content_stems=common.content_stems,
            words=common.words, stopwords=common.STOPWORDS, constraint_words=common.CONSTRAINT_WORDS,
            time_sensitive=text.time_sensitive, time_scopes=text.time_scopes, script=text.script,
            normalize=__import__("domains.base", fromlist=["normalize_text"]).normalize_text,
        )
        # a time scope or a live topic (weather, prices, news): domains.text.live_request
        _LISTS["live"] = text.live_request
        # the creative nouns of mining's creative-request rule, without its verb
        _LISTS["creative_nouns"] = re.compile(mining._CREATIVE.pattern.split(".{0,60}?")[1], re.IGNORECASE)
        # the no-hit words as whole words (the BFCL guard matches inside words: "address" has "add")
        _LISTS["no_hit_words"] = re.compile(r"\b(?:" + bfcl._NO_HIT.pattern + r")(?:s|es|ed|d|ing)?\b", re.IGNORECASE)
    return _LISTS


# The rules of domains.corpora.mining.classify, one-hot (None = dropped for another reason).
CLASSIFY_RULES = ("identical_text", "surface_variant", "number_change", "language_swap", "direction_swap",
                  "entity_change", "role_swap", "number_dropped", "one_token_undecided", "word_order_change",
                  "insertion_or_deletion", "multi_token_change", "no_tokens")


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
    wds = sorted(w for w in _lists()["words"](text) if w in OPERATOR_WORDS)
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
    langs = _lists()["languages"]
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
    sc = _lists()["script"](text)
    if sc != "LATIN":
        return sc
    ws = _lists()["words"](text)
    scores = sorted((-sum(w in sw for w in ws), lang) for lang, sw in LANG_STOPWORDS.items())
    if scores[0][0] == 0 or scores[0][0] == scores[1][0]:
        return "und"   # no stopword, or a tie: undetermined
    return scores[0][1]


def names(text: str) -> frozenset[str]:
    """Capitalised words other than at a sentence start (domains.corpora.common.entities)."""
    found = _lists()["entities"](text)
    return frozenset(found or ())


def capitalised(text: str) -> frozenset[str]:
    """Every capitalised word, sentence starts included ("1. Guernica" in a listed answer), except "I"."""
    return frozenset(w.casefold() for w in re.findall(r"[^\W\d_][\w'-]*", unicodedata.normalize("NFKC", text))
                     if w[0].isupper() and w != "I")


def side_signals(text: str) -> dict[str, float]:
    """Policy signals of one request text."""
    L = _lists()
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


# ---- a pair

def _jaccard(a: set | frozenset, b: set | frozenset) -> float:
    return len(a & b) / len(a | b) if (a or b) else 1.0


def _set_feats(prefix: str, a: frozenset, b: frozenset) -> dict[str, float]:
    return {f"{prefix}_differ": float(a != b), f"{prefix}_symdiff": float(len(a ^ b)),
            f"{prefix}_any": float(bool(a or b)), f"{prefix}_one_side": float(bool(a) != bool(b))}


def lexical_features(qa: str, qb: str) -> dict[str, float]:
    """Features of two texts that need no model."""
    L = _lists()
    f: dict[str, float] = {}
    rule = L["classify"](qa, qb).rule
    for r in CLASSIFY_RULES:
        f[f"rule_{r}"] = float(rule == r)
    ta, tb = L["tokens"](qa), L["tokens"](qb)
    sa, sb = set(ta), set(tb)
    ca, cb = L["content_stems"](qa), L["content_stems"](qb)
    f["raw_equal"] = float(qa == qb)
    f["norm_equal"] = float(L["normalize"](qa) == L["normalize"](qb))
    f["tokens_equal"] = float(ta == tb)
    f["token_bag_equal"] = float(sorted(ta) == sorted(tb))
    f["token_jaccard"] = _jaccard(sa, sb)
    f["content_jaccard"] = _jaccard(ca, cb)
    f["content_only_a"] = float(len(ca - cb))
    f["content_only_b"] = float(len(cb - ca))
    f["content_changed_min"] = float(min(len(ca - cb), len(cb - ca)))
    f["content_changed_max"] = float(max(len(ca - cb), len(cb - ca)))
    sm = SequenceMatcher(None, ta, tb, autojunk=False)
    ops = [op for op in sm.get_opcodes() if op[0] != "equal"]
    f["seq_ratio"] = sm.ratio()
    f["edit_ops"] = float(len(ops))
    f["edit_tokens"] = float(sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in ops))
    f["len_a"] = float(len(ta))
    f["len_b"] = float(len(tb))
    f["len_ratio"] = min(len(ta), len(tb)) / max(len(ta), len(tb), 1)
    f["char_ratio"] = SequenceMatcher(None, L["normalize"](qa), L["normalize"](qb), autojunk=False).ratio()
    # words that change what is asked, on one side only
    cw = L["constraint_words"]
    f["constraint_symdiff"] = float(len({w for w in sa if w in cw} ^ {w for w in sb if w in cw}))
    f.update(_set_feats("numbers", L["number_set"](qa), L["number_set"](qb)))
    f.update(_set_feats("variables", variables(qa), variables(qb)))
    f.update(_set_feats("identifiers", identifiers(qa), identifiers(qb)))
    f.update(_set_feats("quoted", quoted(qa), quoted(qb)))
    f.update(_set_feats("names", names(qa), names(qb)))
    f.update(_set_feats("units", units(qa), units(qb)))
    f.update(_set_feats("languages", language_names(qa), language_names(qb)))
    na = sum(1 for w in L["words"](qa) if w in NEGATION)
    nb = sum(1 for w in L["words"](qb) if w in NEGATION)
    f["negation_differ"] = float(na != nb)
    f["negation_any"] = float(bool(na or nb))
    da, db = sa & L["direction_words"], sb & L["direction_words"]
    f.update(_set_feats("directions", frozenset(da), frozenset(db)))
    f["direction_swap"] = float(any(frozenset((x, y)) in L["directions"] for x in da - db for y in db - da))
    # the same words in another order ("NYC to FL" vs "FL to NYC")
    f["order_changed"] = float(sorted(ta) == sorted(tb) and ta != tb)
    f["operators_differ"] = float(operators(qa) != operators(qb))
    f["operators_any"] = float(bool(operators(qa) or operators(qb)))
    ma, mb = math_signature(qa), math_signature(qb)
    f["math_equal"] = float(ma == mb)
    f["math_ratio"] = SequenceMatcher(None, ma, mb, autojunk=False).ratio() if (ma or mb) else 1.0
    la, lb = natural_language(qa), natural_language(qb)
    f["natural_language_differ"] = float(la != lb and "und" not in (la, lb))
    f["script_differ"] = float(L["script"](qa) != L["script"](qb))
    f["non_ascii_share"] = sum(1 for ch in qa + qb if ord(ch) > 127) / max(1, len(qa + qb))
    # time scopes asked about ("right now" vs "today")
    f["time_scopes_differ"] = float(L["time_scopes"](qa) != L["time_scopes"](qb))
    for key, va in side_signals(qa).items():
        vb = side_signals(qb)[key]
        f[f"{key}_max"] = max(va, vb)
        f[f"{key}_min"] = min(va, vb)
    return f


def part_features(view: Mapping[str, Any]) -> dict[str, float]:
    """Equality and differences of the system prompts, earlier turns and offered tools."""
    L = _lists()
    f: dict[str, float] = {}
    spa, spb = view["system_prompt_a"] or "", view["system_prompt_b"] or ""
    f["system_any"] = float(bool(spa or spb))
    f["system_equal"] = float(spa == spb)
    f["system_norm_equal"] = float(L["normalize"](spa) == L["normalize"](spb))
    f["system_names_differ"] = float(names(spa) != names(spb))
    f["system_jaccard"] = _jaccard(set(L["words"](spa)), set(L["words"](spb)))
    ca, cb = context_text(view["context_a"]), context_text(view["context_b"])
    f["context_any"] = float(bool(ca or cb))
    f["context_one_side"] = float(bool(ca) != bool(cb))
    f["context_equal"] = float(ca == cb)
    f["context_norm_equal"] = float(L["normalize"](ca) == L["normalize"](cb))
    f["context_jaccard"] = _jaccard(set(L["words"](ca)), set(L["words"](cb)))
    f["context_numbers_differ"] = float(L["number_set"](ca) != L["number_set"](cb))
    f["context_names_differ"] = float(capitalised(ca) != capitalised(cb))
    f["context_quoted_differ"] = float(quoted(ca) != quoted(cb))
    f["context_turns_differ"] = float(len(view["context_a"] or []) != len(view["context_b"] or []))
    ua = [t.get("content", "") for t in (view["context_a"] or []) if isinstance(t, Mapping) and t.get("role") == "user"]
    ub = [t.get("content", "") for t in (view["context_b"] or []) if isinstance(t, Mapping) and t.get("role") == "user"]
    f["context_user_equal"] = float([L["normalize"](u) for u in ua] == [L["normalize"](u) for u in ub])
    ta, tb = view["tools_a"], view["tools_b"]
    f["tools_any"] = float(bool(ta or tb))
    f["tools_equal"] = float(json.dumps(ta, sort_keys=True) == json.dumps(tb, sort_keys=True))
    na, nb = {n for n, _ in tool_texts(ta)}, {n for n, _ in tool_texts(tb)}
    f["tools_names_jaccard"] = _jaccard(na, nb)
    return f


EMBEDDING_FEATURES = ("cos_minilm", "cos_second", "cos_context", "cos_system",
                      "proto_creative_max", "proto_creative_min", "proto_live_max", "proto_live_min",
                      "proto_action_max", "proto_action_min",
                      "tool_same", "tool_cos_min", "tool_no_hit_max", "tool_no_hit_min", "tool_time_max",
                      "tool_personal_max", "cos_diff")


def diff_spans(qa: str, qb: str) -> tuple[str, str]:
    """The words of each text the other lacks, in text order ("causes" / "effects")."""
    L = _lists()
    wa, wb = L["words"](qa), L["words"](qb)
    sa, sb = set(wa), set(wb)
    return " ".join(w for w in wa if w not in sb), " ".join(w for w in wb if w not in sa)


def texts_to_embed(view: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(texts for MiniLM, texts for the second embedder) that `pair_features` needs."""
    first = [view["query_a"], view["query_b"], *PROTOTYPES.values(),
             *(d for d in diff_spans(view["query_a"] or "", view["query_b"] or "") if d)]
    for side in "ab":
        c = context_text(view[f"context_{side}"])
        if c:
            first.append(c)
        s = view[f"system_prompt_{side}"]
        if s:
            first.append(s)
        first.extend(t for _, t in tool_texts(view[f"tools_{side}"]))
    return sorted(set(first)), sorted({view["query_a"], view["query_b"]})


def _called_tool(query_vec, tools: list[tuple[str, str]], vec: Callable[[str], Any]) -> tuple[str, str, float]:
    """(name, text, cosine) of the offered tool closest to the query; ties by name."""
    best = ("", "", -2.0)
    for name, text in tools:
        c = round(float(query_vec @ vec(text)), 6)
        if c > best[2]:
            best = (name, text, c)
    return best


def pair_features(view: Mapping[str, Any], minilm: Callable[[str], Any], second: Callable[[str], Any]) -> list[float]:
    """The feature vector of one pair (FEATURE_NAMES order); `minilm` and `second` map a text to
    its L2-normalised vector (numpy) under each embedder."""
    qa, qb = view["query_a"] or "", view["query_b"] or ""
    f = lexical_features(qa, qb)
    f.update(part_features(view))
    va, vb = minilm(qa), minilm(qb)
    f["cos_minilm"] = round(float(va @ vb), 6)
    f["cos_second"] = round(float(second(qa) @ second(qb)), 6)
    ca, cb = context_text(view["context_a"]), context_text(view["context_b"])
    f["cos_context"] = round(float(minilm(ca) @ minilm(cb)), 6) if ca and cb else (1.0 if ca == cb else 0.0)
    sa, sb = view["system_prompt_a"] or "", view["system_prompt_b"] or ""
    f["cos_system"] = round(float(minilm(sa) @ minilm(sb)), 6) if sa and sb else (1.0 if sa == sb else 0.0)
    da, db = diff_spans(qa, qb)
    f["cos_diff"] = round(float(minilm(da) @ minilm(db)), 6) if da and db else (1.0 if da == db else 0.0)
    for key, text in PROTOTYPES.items():
        p = minilm(text)
        x, y = round(float(va @ p), 6), round(float(vb @ p), 6)
        f[f"proto_{key}_max"], f[f"proto_{key}_min"] = max(x, y), min(x, y)
    tools_a, tools_b = tool_texts(view["tools_a"]), tool_texts(view["tools_b"])
    if tools_a or tools_b:
        L = _lists()
        na, ta, ka = _called_tool(va, tools_a, minilm) if tools_a else ("", "", 0.0)
        nb, tb, kb = _called_tool(vb, tools_b, minilm) if tools_b else ("", "", 0.0)
        f["tool_same"] = float(na == nb)
        f["tool_cos_min"] = min(ka, kb)
        ha, hb = float(bool(L["no_hit_words"].search(ta))), float(bool(L["no_hit_words"].search(tb)))
        f["tool_no_hit_max"], f["tool_no_hit_min"] = max(ha, hb), min(ha, hb)
        f["tool_time_max"] = float(any(L["live"](t) or _LIVE.search(t) for t in (ta, tb)))
        f["tool_personal_max"] = float(any(_PERSONAL.search(t) for t in (ta, tb)))
    else:
        f.update(tool_same=1.0, tool_cos_min=0.0, tool_no_hit_max=0.0, tool_no_hit_min=0.0, tool_time_max=0.0,
                 tool_personal_max=0.0)
    return [float(f[name]) for name in feature_names()]


# Policy signals: a request that is creative, asks about the present or changes state is never
# served from a cache, so these may only lower P(HIT) (the classifier's monotonic constraints).
POLICY_FEATURES = ("creative_max", "creative_min", "creative_noun_max", "creative_noun_min", "time_max", "time_min",
                   "proto_creative_max", "proto_creative_min", "proto_live_max", "proto_live_min",
                   "proto_action_max", "proto_action_min", "tool_no_hit_max", "tool_no_hit_min", "tool_time_max",
                   "tool_personal_max")

_NAMES: list[str] = []


def feature_names() -> list[str]:
    """The feature names, in vector order (derived once from a probe pair)."""
    if not _NAMES:
        probe = {k: None for k in REQUEST_FIELDS}
        probe.update(query_a="a", query_b="b")
        _NAMES.extend([*lexical_features("a", "b"), *part_features(probe), *EMBEDDING_FEATURES])
    return list(_NAMES)


def describe(view: Mapping[str, Any]) -> dict[str, Any]:
    """The extracted tokens of a pair, for tests and error analysis (no model needed)."""
    qa, qb = view["query_a"] or "", view["query_b"] or ""
    return {side: {"numbers": sorted(_lists()["number_set"](q)), "variables": sorted(variables(q)),
                   "identifiers": sorted(identifiers(q)), "quoted": sorted(quoted(q)), "names": sorted(names(q)),
                   "units": sorted(units(q)), "languages": sorted(language_names(q)),
                   "natural_language": natural_language(q), "operators": list(operators(q)), **side_signals(q)}
            for side, q in (("a", qa), ("b", qb))}

