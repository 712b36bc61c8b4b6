"""Features of the reference verified cache: what a cache sees of a request pair on any traffic.

A pair is read through verified_text.request_view, which keeps only the request fields: no other
field of a row can reach a feature. The features of one text are verified_text.py's, the word lists
verified_lexicon.py's (the project's own, by their public names, and the few that exist nowhere else).

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
  differs in them (numbers, names); v3: whether the scope differs (user, tenant or tool_choice) and
  whether the response stored for A was not ok (an error or a refusal), which verified.VETOES read;
  v4: whether the two queries differ only by a negation added or removed (`negation_toggle_only`,
  verified_text.without_negation), another veto;
- the change (v2, verified_change.py): the words that differ after aligning the two queries (and
  the earlier turns, the system prompts), by class: names, numbers, dates, units, scope words,
  polarity and negation words, comparison words, or function words only; swapped or inserted;
  how many turns differ; tools added, removed or changed. v2 also drops the two absolute lengths
  (len_a, len_b), which name a generator's template more than the request;
- policy signals: creative request, time-sensitive words, the no-hit words of function calling
  (mutation verbs, live data), on either side and in the tool each side calls.

Standard library at import; numpy only inside `pair_features` (cosines).
"""
from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from typing import Any, Callable, Mapping

from pipeline.references.verified_change import change_features
from pipeline.references.verified_lexicon import NEGATION, PROTOTYPES, word_lists
from pipeline.references.verified_text import (REQUEST_FIELDS, capitalised, context_text, identifiers, language_names,
                                               math_signature, names, natural_language, operators, quoted,
                                               side_signals, tool_texts, units, variables,
                                               without_negation)

FEATURE_VERSION = "4"

# A tool description saying its result is live, or reads the user's own state.
_LIVE = re.compile(r"\blive\b", re.IGNORECASE)
_PERSONAL = re.compile(r"\b(?:user'?s?|my|home'?s?)\b", re.IGNORECASE)

# The rules of domains.corpora.mining.classify, one-hot (None = dropped for another reason).
CLASSIFY_RULES = ("identical_text", "surface_variant", "number_change", "language_swap", "direction_swap",
                  "entity_change", "role_swap", "number_dropped", "one_token_undecided", "word_order_change",
                  "insertion_or_deletion", "multi_token_change", "no_tokens")


# ---- a pair

def _jaccard(a: set | frozenset, b: set | frozenset) -> float:
    return len(a & b) / len(a | b) if (a or b) else 1.0


def _set_feats(prefix: str, a: frozenset, b: frozenset) -> dict[str, float]:
    return {f"{prefix}_differ": float(a != b), f"{prefix}_symdiff": float(len(a ^ b)),
            f"{prefix}_any": float(bool(a or b)), f"{prefix}_one_side": float(bool(a) != bool(b))}


def lexical_features(qa: str, qb: str) -> dict[str, float]:
    """Features of two texts that need no model."""
    L = word_lists()
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
    # v4: the one change is a negation added or removed ("was not a fan" / "was a fan"): the meaning flips
    (wa_, ka), (wb_, kb) = without_negation(qa), without_negation(qb)
    f["negation_toggle_only"] = float(wa_ == wb_ and ka != kb)
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
    L = word_lists()
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
    # the pair contract's scope: who asks and the tool_choice; the status of the response stored for A
    f["scope_differ"] = float(any(view.get(f"{k}_a") != view.get(f"{k}_b") for k in ("user", "tenant", "tool_choice")))
    f["stored_not_ok"] = float(view.get("status_a") not in (None, "ok"))
    return f


EMBEDDING_FEATURES = ("cos_minilm", "cos_second", "cos_context", "cos_system",
                      "proto_creative_max", "proto_creative_min", "proto_live_max", "proto_live_min",
                      "proto_action_max", "proto_action_min",
                      "tool_same", "tool_cos_min", "tool_no_hit_max", "tool_no_hit_min", "tool_time_max",
                      "tool_personal_max", "cos_diff")


def diff_spans(qa: str, qb: str) -> tuple[str, str]:
    """The words of each text the other lacks, in text order ("causes" / "effects")."""
    L = word_lists()
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
    f.update(change_features(view))
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
        L = word_lists()
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
                   "tool_personal_max", "scope_differ", "stored_not_ok")

_NAMES: list[str] = []


def feature_names() -> list[str]:
    """The feature names, in vector order (derived once from a probe pair)."""
    if not _NAMES:
        probe = {k: None for k in REQUEST_FIELDS}
        probe.update(query_a="a", query_b="b")
        _NAMES.extend([*lexical_features("a", "b"), *part_features(probe), *change_features(probe),
                       *EMBEDDING_FEATURES])
    return list(_NAMES)


def describe(view: Mapping[str, Any]) -> dict[str, Any]:
    """The extracted tokens of a pair, for tests and error analysis (no model needed)."""
    qa, qb = view["query_a"] or "", view["query_b"] or ""
    return {side: {"numbers": sorted(word_lists()["number_set"](q)), "variables": sorted(variables(q)),
                   "identifiers": sorted(identifiers(q)), "quoted": sorted(quoted(q)), "names": sorted(names(q)),
                   "units": sorted(units(q)), "languages": sorted(language_names(q)),
                   "natural_language": natural_language(q), "operators": list(operators(q)), **side_signals(q)}
            for side, q in (("a", qa), ("b", qb))}

