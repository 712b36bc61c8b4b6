"""The personalized domain's part in LM-written near-misses (domains/lm/edits.py): a model rewrites a
curated user profile (the system prompt) with one attribute changed, and the domain's policy and
rubric, never the model, decide the row.

Seeds: each persona's system prompt, once per identity field (name, role, city, diet, hobby), with
the detail to change in words ("vegetarian to another diet, such as vegan, halal or kosher").

A rewrite is resolved only when it is the persona's own system prompt re-rendered, character for
character (articles fixed as the curated prompts are), with that field set to another value the curated
personas use: so exactly that attribute changed, to a known value, and nothing was added. The row
pairs the same request (a task that depends on the changed field, so its rubric criteria differ)
under the curated profile and under the rewritten one: two users, so the policy (`cross_user`,
binary MISS) decides, with the 5-class label ADVERSARIAL like the curated identity swaps.

Not done, on purpose: a rewording of a profile that keeps every attribute is no HIT here. The
domain's policy (BENCHMARK.md: "a different user (same query, different system prompt or
identity)") serves no answer across two different system prompts, and a rule cannot confirm that
a free rewording added nothing the answer depends on ("who loves spicy food").
"""
from __future__ import annotations

from functools import lru_cache

from domains.base import Candidate, EditSeed, Span, normalize_text

# (task, field) pairs too weak to carry a row: an out-of-office reply barely depends on the job, so
# two profiles differing only in it could share one (blind readers of the first 15 rows).
WEAK = frozenset({("out_of_office", "role")})
# How the prompt names each identity field, and examples of other values shown to the model.
_FIELD_WORDS = {"name": "first name", "role": "job", "city": "city", "diet": "diet", "hobby": "hobby"}
SOURCE = "sources/curated/personalized.yaml"
# Only personas whose system prompt has the first wording ("You are assisting ..."; persona k has
# wording k mod 3): in the trial Qwen2.5-Coder copied the other two unchanged (0 of 9 edited).
TEMPLATES = 3


def _values(field: str) -> list[str]:
    from domains.personalized import personas   # the domain module imports this one to register SPEC

    return sorted({p[field] for p in personas()})


@lru_cache(maxsize=1)
def edit_seeds() -> tuple[EditSeed, ...]:
    """Every persona's system prompt once per field that some task depends on."""
    from domains.personalized import FIELDS, _seed, personas, system_prompt

    used = {f for t in _seed()["tasks"].values() for f in t["depends_on"]}
    out = []
    for k, p in enumerate(personas()):
        if k % TEMPLATES:
            continue
        for field in (f for f in FIELDS if f in used):
            others = [v for v in _values(field) if v != p[field]]
            a, b, c = (others[(k * 7 + i * 11) % len(others)] for i in range(3))
            what = f"{p[field]} to another {_FIELD_WORDS[field]}, such as {a}, {b} or {c}"
            out.append(EditSeed(record=f"{p['name']}.{field}", text=system_prompt(p, k), spread_key=field,
                                what=what, data=(k, field)))
    return tuple(out)


def resolve_edit(seed: EditSeed, rewrite: str, span: Span) -> Candidate | str:
    """The cross-user near-miss a rewritten profile makes, or why it is dropped."""
    from domains.personalized import OPERATORS, _cand, _query, _seed, personas, system_prompt

    k, field = seed.data
    p = personas()[k]
    new = next((v for v in _values(field) if v != p[field] and system_prompt({**p, field: v}, k) == rewrite.strip()), None)
    if new is None:
        # another field, an unknown value, or a stray word: the profile is not re-rendered word for word
        if span.old.casefold() != p[field].casefold():
            return "changed_another_detail"
        return "not_re_rendered" if any(normalize_text(v) == normalize_text(span.new) for v in _values(field)) \
            else "not_a_known_value"
    tasks = [name for name, t in _seed()["tasks"].items() if field in t["depends_on"] and (name, field) not in WEAK]
    if not tasks:
        return "no_task_depends_on_it"
    task = tasks[k % len(tasks)]
    t = _seed()["tasks"][task]
    value = t["values"][k % len(t["values"])]
    q = _query(task, k + 4, value)
    p2 = {**p, field: new}
    c = _cand("ADVERSARIAL", p, k, task, q, value, p2, k, task, q, value, "lm_generated", "lm_profile_edit",
              f"The same request from a model-rewritten profile whose {field} is {new} instead of {p[field]}.",
              OPERATORS["identity_swap"].name, {"field": field, "from": p[field], "to": new})
    if c.verification_payload.get("underlying_payload", {}).get("criteria_a") == \
            c.verification_payload.get("underlying_payload", {}).get("criteria_b"):
        return "answer_unchanged"
    return c
