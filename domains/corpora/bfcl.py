"""existing_benchmark tool rows from BFCL: question + offered functions + ground-truth call.

Only single-call categories with one user message (simple_python, multiple, live_simple,
live_multiple) are used; the canonical call takes, for every parameter, the first value BFCL's
`possible_answer` accepts, and leaves out a parameter whose accepted values include "" (BFCL's mark
for "may be omitted"). Nested dict values are lists of accepted values again and are resolved the
same way.

Mapping:
- two questions with the same canonical call -> PARA_SAFE (EQUIV if their texts differ only in
  case, spacing or punctuation), and only when their texts pass common.paraphrase_guard: BFCL's
  ground truth leaves out what the function cannot express ("this weekend", "preferably one who
  accepts insurance"), and a question in Thai or a pasted reply has the same call as an English
  request; never for a function that looks state-changing or live (the tool domain's policy
  cannot claim `mutation` or `time_sensitive` for BFCL's function names, so such HITs are left
  out rather than served);
- same function, exactly one argument changed and word overlap >= 0.5 -> ADVERSARIAL; same
  function, word overlap < 0.3 -> RELATED_UNSAFE; otherwise left out. Left out as well: identical
  questions (after normalisation) with different ground truths, and argument values that are one
  value formatted two ways (their word tokens overlap: "08-16-2022" / "2022-08-16", "PlayStation"
  / "Playstation", "Paris, FR" / "Paris, France", "Yellowstone" / "Yellowstone National Park");
- different functions and word overlap < 0.2 -> UNRELATED.
Questions cut off mid-sentence ("... Bruce Willis in it. Can you") are not used.

Verification: json_schema_call against each side's offered functions, converted from BFCL's
dialect to JSON Schema: `dict` -> `object`, `float` -> `number`, `tuple` -> `array`, `any` -> no
type; a function with another non-standard type is left out (counted).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from typing import Any, Mapping

from domains.base import Candidate, GenContext, canonical_json, normalize_text
from domains.corpora.common import make, overlap, paraphrase_guard, pick, records, unfinished
from domains.verify.tool_call import canonical_call

CATEGORIES = ("simple_python", "multiple", "live_simple", "live_multiple")
TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array"}
JSON_TYPES = frozenset({"object", "number", "array", "string", "integer", "boolean", "null"})
MAX_CHARS = 300
# Words of a call that is never served from a cache (it changes state, or reads live data); the
# guard matches them inside a function name or request. Public because the reference verified
# cache's features read them (pipeline/references/verified_lexicon.py): editing them changes that cache.
NO_HIT_WORDS = (r"(create|delete|remove|send|post|update|set|add|book|buy|sell|cancel|transfer|pay|order|"
                r"reserve|submit|write|start|stop|turn|control|execute|upload|modify|edit|register|schedule|"
                r"weather|stock|price|news|current|latest|forecast|now|today)")
_NO_HIT = re.compile(NO_HIT_WORDS, re.IGNORECASE)
GROUNDING = {
    "EQUIV": "A user repeats a function-calling request with different casing or punctuation.",
    "PARA_SAFE": "Two BFCL requests whose ground-truth function call is identical.",
    "RELATED_UNSAFE": "Two requests to the same function that need different arguments.",
    "ADVERSARIAL": "Two nearly identical function-calling requests that differ in one argument value.",
    "UNRELATED": "Two function-calling requests that call different functions.",
}


class UnsupportedType(ValueError):
    """A BFCL schema type with no JSON Schema counterpart."""


def to_json_schema(node: Any) -> Any:
    """BFCL's schema dialect as JSON Schema (type names mapped, recursively)."""
    if isinstance(node, Mapping):
        out = {}
        for k, v in node.items():
            if k == "type" and isinstance(v, str):
                t = TYPE_MAP.get(v, v)
                if t == "any":
                    continue
                if t not in JSON_TYPES:
                    raise UnsupportedType(v)
                out[k] = t
            elif k == "properties" and isinstance(v, Mapping):
                out[k] = {p: to_json_schema(s) for p, s in v.items()}
            else:
                out[k] = to_json_schema(v)
        return out
    if isinstance(node, list):
        return [to_json_schema(v) for v in node]
    return node


def tool_schema(fn: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": fn["name"], "description": fn.get("description", ""), "parameters": to_json_schema(fn["parameters"])}


def _choose(value: Any) -> Any:
    """Resolve nested accepted-value lists inside a chosen dict value."""
    if isinstance(value, Mapping):
        return {k: _choose(v[0]) if isinstance(v, list) and v else _choose(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_choose(v) for v in value]
    return value


def ground_call(gt: Any, required: frozenset[str] = frozenset()) -> tuple[str, dict[str, Any], dict[str, set[str]]] | None:
    """(function, arguments, accepted values per argument as canonical JSON) of a single-call
    ground truth, or None when it is not one or its alternatives are coupled (BFCL's
    `width: [12, 2], height: [2, 12]` accepts either order, so a first-choice pick per argument
    could produce a call it does not accept)."""
    if not (isinstance(gt, list) and len(gt) == 1 and isinstance(gt[0], Mapping) and len(gt[0]) == 1):
        return None
    (name, params), = gt[0].items()
    if not isinstance(params, Mapping):
        return None
    args, accepted = {}, {}
    for p, values in sorted(params.items()):
        if not isinstance(values, list):
            return None
        options = [v for v in values if v != ""]
        if not options:
            if p in required or not values:
                return None
            continue
        if "" in values and p not in required:
            continue   # may be omitted: the canonical call omits it
        args[p] = _choose(options[0])
        accepted[p] = {canonical_json(_choose(v)) for v in options}
    multi = [v for v in accepted.values() if len(v) > 1]
    if any(x & y for i, x in enumerate(multi) for y in multi[i + 1:]):
        return None
    return name, args, accepted


def value_tokens(value: Any) -> frozenset[str]:
    """An argument value's word tokens (casefolded, split on non-alphanumerics; dict keys
    included): two values sharing one may be one value formatted two ways."""
    text = value if isinstance(value, str) else canonical_json(value)
    return frozenset(t for t in re.split(r"[^0-9a-z]+", unicodedata.normalize("NFKC", text).casefold()) if t)


def _entries(ctx: GenContext, drops: Counter) -> list[dict[str, Any]]:
    out = []
    for r in records(ctx, "bfcl"):
        if r.split not in CATEGORIES:
            drops["category_not_single_call"] += 1
            continue
        if len(r.question) != 1 or len(r.question[0]) != 1 or r.question[0][0]["role"] != "user":
            drops["not_one_user_message"] += 1
            continue
        text = " ".join(r.text.split())
        if not text or len(text) > MAX_CHARS:
            drops["text_empty_or_too_long"] += 1
            continue
        if unfinished(text):
            drops["text_unfinished"] += 1
            continue
        fn = {f["name"]: f for f in r.functions}
        name = next(iter(r.ground_truth[0]), None) if isinstance(r.ground_truth, list) and r.ground_truth and \
            isinstance(r.ground_truth[0], Mapping) else None
        required = frozenset(fn.get(name, {}).get("parameters", {}).get("required", ()) or ())
        call = ground_call(r.ground_truth, required)
        if call is None:
            drops["ground_truth_not_one_call"] += 1
            continue
        try:
            tools = tuple(tool_schema(f) for f in r.functions)
        except UnsupportedType as exc:
            drops[f"unsupported_schema_type:{exc}"] += 1
            continue
        out.append({"r": r, "text": text, "name": call[0], "args": call[1],
                    "accepted": call[2], "canon": canonical_call(call[0], call[1]), "tools": tools})
    return out


def _cand(ctx: GenContext, label: str, a: dict, b: dict, why: str) -> Candidate:
    ra, rb = a["r"], b["r"]
    return make(
        ctx, method="existing_benchmark", label=label, subcategory=f"bfcl_{ra.split}", query_a=a["text"],
        query_b=b["text"], answer_a=a["canon"], answer_b=b["canon"], rationale=why,
        verification_method="json_schema_call", payload={"note": "BFCL ground truth; schemas mapped dict->object"},
        source="bfcl", licence=ra.licence, grounding=GROUNDING[label],
        source_file=ra.source_file if ra.source_file == rb.source_file else f"{ra.source_file}|{rb.source_file}",
        source_record=f"{ra.split}/{ra.record_id}|{rb.split}/{rb.record_id}", original_label="possible_answer",
        template_id=f"bfcl:{a['name']}", generator="bfcl", tools_a=a["tools"], tools_b=b["tools"])


def bfcl_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                 drops: Counter) -> list[Candidate]:
    """BFCL pairs, the mapping "bfcl" (module docstring; the project's tool domain takes them)."""
    entries = _entries(ctx, drops)
    pools: dict[str, list[Candidate]] = defaultdict(list)
    by_call: dict[str, list[dict]] = defaultdict(list)
    by_name: dict[str, list[dict]] = defaultdict(list)
    for e in entries:
        by_call[e["canon"]].append(e)
        by_name[e["name"]].append(e)
    for canon in sorted(by_call):
        distinct = {}
        for e in by_call[canon]:
            distinct.setdefault(normalize_text(e["text"]), e)
        group = [distinct[k] for k in sorted(distinct)]
        if len(group) < 2:
            continue
        if _NO_HIT.search(group[0]["name"]) or any(_NO_HIT.search(e["text"]) for e in group):
            drops["hit_call_mutation_or_live"] += len(group) // 2
            continue
        taken: set[int] = set()
        for i, a in enumerate(group):
            if i in taken:
                continue
            j = next((j for j in range(i + 1, len(group)) if j not in taken
                      and paraphrase_guard(a["text"], group[j]["text"]) is None), None)
            if j is None:
                drops["same_call_no_safe_paraphrase"] += 1
                continue
            taken |= {i, j}
            pools["PARA_SAFE"].append(_cand(ctx, "PARA_SAFE", a, group[j], f"Both requests have the ground-truth call "
                                            f"{canon}, and their wordings differ only in function words, word forms or "
                                            "punctuation (no added constraint)."))
    for name in sorted(by_name):
        group = sorted({e["canon"]: e for e in by_name[name]}.values(), key=lambda e: e["canon"])
        for a, b in zip(group, group[1:]):
            changed = sorted(k for k in set(a["args"]) | set(b["args"]) if a["args"].get(k) != b["args"].get(k))
            if any(a["accepted"].get(k, set()) & b["accepted"].get(k, set()) for k in changed):
                drops["changed_argument_shares_an_accepted_value"] += 1   # maybe the same value, other spelling
                continue
            if any((k in a["args"]) != (k in b["args"]) for k in changed):
                drops["changed_argument_omitted_on_one_side"] += 1       # a default may equal the other value
                continue
            if normalize_text(a["text"]) == normalize_text(b["text"]):
                drops["identical_question_different_ground_truth"] += 1   # annotation variants, one request
                continue
            if any(value_tokens(a["args"][k]) & value_tokens(b["args"][k]) for k in changed):
                drops["changed_argument_formatting_variant"] += 1         # "Paris, FR" vs "Paris, France"
                continue
            ov = overlap(a["text"], b["text"])
            if len(changed) == 1 and ov >= 0.5:
                label = "ADVERSARIAL"
            elif ov < 0.3:
                label = "RELATED_UNSAFE"
            else:
                drops["same_function_undecided"] += 1
                continue
            pools[label].append(_cand(ctx, label, a, b, f"Same function {name}; arguments {changed} differ "
                                                        f"(word overlap {ov:.2f})."))
    names = sorted(by_name)
    rng = ctx.rng("bfcl", "unrelated")
    for i, name in enumerate(names):
        other = names[(i + 1 + rng.randrange(max(1, len(names) - 1))) % len(names)]
        if other == name:
            continue
        a, b = rng.choice(by_name[name]), rng.choice(by_name[other])
        if overlap(a["text"], b["text"]) >= 0.2:
            drops["different_functions_overlapping_text"] += 1
            continue
        pools["UNRELATED"].append(_cand(ctx, "UNRELATED", a, b, f"Different functions {name} and {other}."))
    return pick(ctx, "bfcl", pools, shares, drops, used)


MAPPINGS = {"bfcl": bfcl_mapping}
