"""The system traps (#29 item 4): pairs a cache must MISS whatever the wording, because of who asks,
how, or what was stored, not what the query says.

Each trap row wraps one HIT row of the benchmark (EQUIV or PARA_SAFE, binary HIT): the pair that
would be a HIT becomes a MISS by one difference outside the query's meaning. Nine traps in five
groups (BENCHMARK.md's rule covers a different user and time-sensitive questions; this is the
suite that tests it):

- (a) `other_user`: the same tenant, another user id; `other_tenant`: the same user id in another
  tenant (policy `cross_user` / `cross_tenant`: an answer built for one principal is not served to
  another);
- (b) `other_system_prompt`: the same request under another system prompt whose instruction
  changes the answer (another language, length or format);
- (c) `other_tools`: another tool set offered (none of A's tools); `other_tool_choice`: the same
  tools with another `tool_choice` (a call is required, forbidden or left to the model);
- (d) `stored_error`, `stored_refusal`: the response stored for A was an error or a refusal
  (`status_a`): it answers nothing (policy `stored_error` / `stored_refusal`);
- (e) `regenerate`: B asks for a fresh answer to the same request ("try again", "give me another
  one"); `fresh_value`: both ask for something only the moment can give (the current time or
  price, a new random joke, a die roll), which no stored response holds (policy `fresh_output`).

A trap row's `domain` is its trap (so every report's per-domain table is the per-trap table),
`subcategory` the source row's domain, and its id `trap-<trap>-<source row id>`: stable while the
source row is. Which rows each trap takes is seeded (sha256 of `system_traps/v1/<trap>`), each
source row used by one trap at most, `other_tools` and `other_tool_choice` from the rows that offer
tools, the others from the rows that do not. The new request fields (user_*, tenant_*,
tool_choice_*, status_a) follow the 22 of BENCHMARK.md, then `licence` and `provenance` (the trap,
its group, the source row and its label), so the suite follows the scoring contract (`cacheeval
eval --bench outputs/traps/system_traps.jsonl`), not the build's strict schema.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from typing import Any, Callable, Mapping, Sequence

SUITE = "system_traps"
VERSION = "1"
FILE = "traps/system_traps.jsonl"
PER_TRAP = 24
CONSTRUCTION = "system_trap"
# trap -> (group, what differs)
TRAPS = {
    "other_user": ("a", "another user of the same tenant"),
    "other_tenant": ("a", "the same user id in another tenant"),
    "other_system_prompt": ("b", "another system prompt"),
    "other_tools": ("c", "another tool set"),
    "other_tool_choice": ("c", "another tool_choice"),
    "stored_error": ("d", "the stored response was an error"),
    "stored_refusal": ("d", "the stored response was a refusal"),
    "regenerate": ("e", "a request for a fresh answer"),
    "fresh_value": ("e", "a request for a live or random value"),
}
GROUPS = {"a": "another user or tenant", "b": "another system prompt", "c": "other tools or tool_choice",
          "d": "the stored response was an error or a refusal", "e": "a request for fresh output"}
TOOL_TRAPS = ("other_tools", "other_tool_choice")
INSTRUCTIONS = ("Answer in French only.", "Answer in German only.", "Answer in Spanish only.",
                "Reply in one sentence of at most ten words.",
                'Reply with a JSON object whose only key is "answer".',
                "Answer as a numbered list of short steps.")
TOOL_CHOICES = (("auto", "none"), ("required", "none"), ("none", "auto"), ("none", "required"))
REGENERATE = ("Try again, with a different answer this time: {q}", "Regenerate your answer, but make it new: {q}",
              "Give me another one, not the one you gave before: {q}",
              "{q} (Please regenerate: I want a new answer, not the previous one.)")
FRESH = ("Also tell me the current time.", "Also give me the current price of bitcoin in US dollars.",
         "Also tell me a new random joke.", "Also roll a six-sided die for me and give the result.",
         "And include today's date.")
RATIONALE = {
    "other_user": "The same request from another user: a response made for one user may hold that user's data or "
                  "follow their context, so it is never served to another (policy cross_user).",
    "other_tenant": "The same request under another tenant: tenants' caches never share responses (policy "
                    "cross_tenant).",
    "other_system_prompt": "The system prompts differ in an instruction that changes the answer ({a} vs {b}); the "
                           "response to A does not follow B's.",
    "other_tools": "B is offered other tools (none of A's), so A's response (a call to one of A's tools, or an answer "
                   "built on them) is not one B's model could give.",
    "other_tool_choice": "The same tools with tool_choice {a} for A and {b} for B: one must or may call a tool where the "
                         "other must answer in text.",
    "stored_error": "The response stored for A was an error: it answers nothing and is never served (policy "
                    "stored_error).",
    "stored_refusal": "The response stored for A was a refusal: serving it refuses B without asking the model (policy "
                      "stored_refusal).",
    "regenerate": "B asks for a new answer to the same request: the stored one is exactly what it does not want "
                  "(policy fresh_output).",
    "fresh_value": "Both ask for a live or random value ({s}): no stored response holds the current one (policy "
                   "fresh_output).",
}


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join((SUITE, "v" + VERSION) + parts).encode("utf-8")).hexdigest()


def _rng(*parts: str) -> random.Random:
    return random.Random(int(_digest(*parts)[:16], 16))


def tool_names(tools: Any) -> frozenset:
    return frozenset(t.get("name") for t in tools or () if isinstance(t, Mapping))


def _base(src: Mapping[str, Any], trap: str, **changes: Any) -> dict[str, Any]:
    """The trap row in contract key order: the source's requests with `changes` applied."""
    group = TRAPS[trap][0]
    row = {
        "id": f"trap-{trap}-{src['id']}", "domain": trap, "subcategory": src["domain"], "label": "RELATED_UNSAFE",
        "binary_label": "MISS", "difficulty": src["difficulty"],
        **{k: src[k] for k in ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b",
                               "tools_a", "tools_b", "expected_answer_a", "expected_answer_b")},
        "rationale": "", "verification_method": "rubric", "verification_payload": {},
        "construction_method": CONSTRUCTION, "source": f"cachebench:{src['id']}",
        "real_world_grounding": f"system trap ({group}: {GROUPS[group]}): {TRAPS[trap][1]}",
    }
    row.update(changes)
    return row


def _policy(src: Mapping[str, Any], trap: str, policy: str, **changes: Any) -> dict[str, Any]:
    """A trap whose pair is MISS by policy: the source's 5-class label stays, policy_no_cache makes it MISS."""
    changes = {"rationale": RATIONALE[trap], **changes}
    return _base(src, trap, label=src["label"], verification_method="policy_no_cache",
                 verification_payload={"policy": policy, "trap": trap}, **changes)


def _principal(prefix: str, *parts: str) -> str:
    return f"{prefix}-{_digest(prefix, *parts)[:10]}"


def _other_user(src, rng, ctx):
    tenant = _principal("tenant", src["id"])
    return _policy(src, "other_user", "cross_user", tenant_a=tenant, tenant_b=tenant,
                   user_a=_principal("user", src["id"], "a"), user_b=_principal("user", src["id"], "b"))


def _other_tenant(src, rng, ctx):
    user = _principal("user", src["id"])
    return _policy(src, "other_tenant", "cross_tenant", user_a=user, user_b=user,
                   tenant_a=_principal("tenant", src["id"], "a"), tenant_b=_principal("tenant", src["id"], "b"))


def _join(prompt: str | None, instruction: str) -> str:
    return f"{prompt}\n{instruction}" if prompt else instruction


def _other_system_prompt(src, rng, ctx):
    a, b = rng.sample(INSTRUCTIONS, 2)
    return _base(src, "other_system_prompt", system_prompt_a=_join(src["system_prompt_a"], a),
                 system_prompt_b=_join(src["system_prompt_b"], b),
                 expected_answer_b=f"{src['expected_answer_b']} (as B's system prompt asks: {b})",
                 rationale=RATIONALE["other_system_prompt"].format(a=json.dumps(a), b=json.dumps(b)),
                 verification_payload={"criteria": [f"follows: {b}"], "differs": "system_prompt", "trap": "other_system_prompt"})


def _other_tools(src, rng, ctx):
    names = tool_names(src["tools_a"]) | tool_names(src["tools_b"])
    disjoint = [t for t in ctx["tool_sets"] if not (tool_names(t) & names)]
    if not disjoint:
        return None
    tools = rng.choice(disjoint)
    return _base(src, "other_tools", tools_b=tools,
                 expected_answer_b=f"an answer with only these tools offered: {', '.join(sorted(tool_names(tools)))}",
                 rationale=RATIONALE["other_tools"],
                 verification_payload={"criteria": ["uses none of A's tools"], "differs": "tools", "trap": "other_tools"})


def _other_tool_choice(src, rng, ctx):
    if not src["tools_a"] or not src["tools_b"]:
        return None
    a, b = rng.choice(TOOL_CHOICES)
    return _base(src, "other_tool_choice", tool_choice_a=a, tool_choice_b=b,
                 expected_answer_b=("a text answer, no tool call" if b == "none" else
                                    f"{src['expected_answer_b']} (tool_choice {b})"),
                 rationale=RATIONALE["other_tool_choice"].format(a=json.dumps(a), b=json.dumps(b)),
                 verification_payload={"criteria": [f"tool_choice {b} obeyed"], "differs": "tool_choice",
                                       "trap": "other_tool_choice"})


def _stored(status: str) -> Callable:
    trap = f"stored_{status}"

    def make(src, rng, ctx):
        return _policy(src, trap, trap, status_a=status)
    return make


def _regenerate(src, rng, ctx):
    template = rng.choice(REGENERATE)
    return _policy(src, "regenerate", "fresh_output", query_b=template.format(q=src["query_b"]),
                   expected_answer_b="a new answer to the same request, not the one given before")


def _fresh_value(src, rng, ctx):
    suffix = rng.choice(FRESH)
    return _policy(src, "fresh_value", "fresh_output", query_a=f"{src['query_a']} {suffix}",
                   query_b=f"{src['query_b']} {suffix}", rationale=RATIONALE["fresh_value"].format(s=json.dumps(suffix)),
                   expected_answer_a=f"{src['expected_answer_a']} (and the value asked for, as of now)",
                   expected_answer_b=f"{src['expected_answer_b']} (and the value asked for, as of now)")


MAKERS: dict[str, Callable] = {
    "other_user": _other_user, "other_tenant": _other_tenant, "other_system_prompt": _other_system_prompt,
    "other_tools": _other_tools, "other_tool_choice": _other_tool_choice, "stored_error": _stored("error"),
    "stored_refusal": _stored("refusal"), "regenerate": _regenerate, "fresh_value": _fresh_value,
}
OPTIONAL_ORDER = ("user_a", "user_b", "tenant_a", "tenant_b", "tool_choice_a", "tool_choice_b", "status_a")


def eligible(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The benchmark's HIT rows a trap may wrap: EQUIV or PARA_SAFE, binary HIT, by id."""
    return sorted((r for r in rows if r["binary_label"] == "HIT" and r["label"] in ("EQUIV", "PARA_SAFE")),
                  key=lambda r: r["id"])


def _finish(row: dict[str, Any], src: Mapping[str, Any], trap: str) -> dict[str, Any]:
    """Key order: the 22 fields, the optional request fields set, licence, provenance."""
    out = {k: v for k, v in row.items() if k not in OPTIONAL_ORDER}
    out.update((k, row[k]) for k in OPTIONAL_ORDER if row.get(k) is not None)
    if "licence" in src:
        out["licence"] = src["licence"]
    out["provenance"] = {"suite": SUITE, "suite_version": VERSION, "trap": trap, "trap_group": TRAPS[trap][0],
                         "source_row": src["id"], "source_label": src["label"], "source_domain": src["domain"]}
    return out


def build_traps(rows: Sequence[Mapping[str, Any]], per_trap: int = PER_TRAP) -> list[dict[str, Any]]:
    """The suite from benchmark rows (dicts in contract form), sorted by id; see the module docstring."""
    sources = eligible(rows)
    tool_rows = [r for r in sources if r["tools_a"]]
    plain = [r for r in sources if not r["tools_a"]]
    sets = {json.dumps(t, sort_keys=True): t for r in tool_rows for t in (r["tools_a"], r["tools_b"]) if t}
    ctx = {"tool_sets": [sets[k] for k in sorted(sets)]}
    used: set[str] = set()
    out = []
    # a small benchmark (the smoke profile) shares its rows out, so that every trap gets some
    quota = {t: min(per_trap, len(tool_rows) // len(TOOL_TRAPS) if t in TOOL_TRAPS
                    else len(plain) // (len(TRAPS) - len(TOOL_TRAPS))) for t in TRAPS}
    for trap in TRAPS:
        pool = [r for r in (tool_rows if trap in TOOL_TRAPS else plain) if r["id"] not in used]
        _rng(trap).shuffle(pool)
        taken = 0
        for src in pool:
            if taken == quota[trap]:
                break
            row = MAKERS[trap](src, _rng(trap, src["id"]), ctx)
            if row is None:
                continue
            out.append(_finish(row, src, trap))
            used.add(src["id"])
            taken += 1
    return sorted(out, key=lambda r: r["id"])


def trap_of(row: Mapping[str, Any]) -> str:
    return row["provenance"]["trap"]


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    c = Counter(trap_of(r) for r in rows)
    return {t: c[t] for t in TRAPS}
