"""personalized: the same or a similar request under different user identities (system prompts).

Personas and tasks come from sources/curated/personalized.yaml. A task's answer depends on some
persona fields (`depends_on`: diet, city, name, ...) and on one request slot (meal, season, ...);
its three rubric criteria name exactly those, so the `rubric` verifier sees a difference whenever a
field or slot that decides the answer differs.

Same user (identical system prompt): EQUIV (surface variant), PARA_SAFE (rephrasing; a phrasing is
paired with the one sharing the fewest words with it, `families.far_rotation`) are HIT under
`rubric`; RELATED_UNSAFE (another task of the same `topic`), ADVERSARIAL (a request slot swapped:
dinner -> breakfast) and UNRELATED (a task of another topic) are MISS under `rubric`. The task's
`topic` alone decides RELATED vs UNRELATED (`related(a, b)`), so no pair of tasks is labelled both
ways. Paraphrases of one task keep the same explicit constraints (`explicit_constraints`): the
loader rejects phrasings that state a length, count or amount on one side only.
Different users (system prompts differ): `policy_no_cache` with policy "cross_user", binary MISS;
the 5-class label says how the answer differs: ADVERSARIAL when one identity detail the answer
depends on is swapped by an operator (vegetarian -> vegan), RELATED_UNSAFE for the same request by
another person, UNRELATED for another request by another person.

lm_generated (lm_hooks.py, domains/lm/edits.py): a model rewrites a persona's system prompt with
one identity detail changed; kept only when it is that prompt re-rendered with another persona's
value, it makes an ADVERSARIAL cross-user row like the curated identity swaps.

Candidates are built once (`families.capped_builder`, labels taking turns at one family guard) up
to `caps_for(ctx.need, spare=8)`: max(need, 40) plus 20%, plus 8, per label.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Mapping

from domains.curated import read_curated
from domains.personalized import lm_hooks
from domains.base import LABELS, Candidate, DomainSpec, LMHooks, Operator, Provenance
from domains.lm import edits as lm_edits
from domains.text import NUMBER_WORDS
from domains.families import capped_builder, far_rotation, fix_articles, method_generators, surface
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "personalized"
VERSION = "1"
SOURCE_FILE = CURATED / "personalized.yaml"
FIELDS = ("name", "role", "city", "diet", "hobby")
TASK_KEYS = {"topic", "depends_on", "slot", "values", "phrasings", "criteria", "answer"}


@lru_cache(maxsize=1)
def _seed() -> dict:
    data = read_curated(SOURCE_FILE, ("personas", "system_prompts", "greetings", "tasks"))
    for i, p in enumerate(data["personas"]):
        if not isinstance(p, list) or len(p) != len(FIELDS):
            raise InputError(f"{SOURCE_FILE}:personas[{i}]: expected [{', '.join(FIELDS)}]. Give all five fields")
    for name, t in data["tasks"].items():
        if set(t) != TASK_KEYS:
            raise InputError(f"{SOURCE_FILE}:tasks.{name}: keys must be {', '.join(sorted(TASK_KEYS))}. Fix the record")
        if len(t["criteria"]) != 3 or any(f not in FIELDS for f in t["depends_on"]):
            raise InputError(f"{SOURCE_FILE}:tasks.{name}: needs 3 criteria and depends_on among {', '.join(FIELDS)}. Fix the record")
        _check_constraints(name, t)
    return data


# A number (digits or a word) and the word it counts or qualifies: "two-line", "20 minutes",
# "one simple", "100 euros". Such a phrase is an explicit constraint on the answer.
_NUMBER = r"\d+(?:[.,]\d+)?|" + "|".join(sorted(set(NUMBER_WORDS) | {"couple", "pair"}, key=lambda w: (-len(w), w)))
_CONSTRAINT = re.compile(rf"\b({_NUMBER})\b(?:[\s-]+([a-z]+))?", re.IGNORECASE)


def explicit_constraints(text: str) -> tuple[str, ...]:
    """The explicit limits a request states (a number with the word after it, lower-cased and
    sorted): "Write a two-line bio" -> ("two line",). Paraphrases must state the same ones."""
    return tuple(sorted(f"{m.group(1)} {m.group(2) or ''}".strip().lower() for m in _CONSTRAINT.finditer(text)))


def _check_constraints(name: str, task: Mapping[str, Any]) -> None:
    """Every phrasing of the task, filled with the same slot value, states the same explicit
    constraints; otherwise two "paraphrases" could differ in a length or amount the answer obeys."""
    for value in task["values"]:
        texts = [ph.format(**{task["slot"]: value}) for ph in task["phrasings"]]
        first = explicit_constraints(texts[0])
        for i, text in enumerate(texts[1:], start=1):
            if explicit_constraints(text) != first:
                raise InputError(f"{SOURCE_FILE}:tasks.{name}.phrasings[{i}]: states {list(explicit_constraints(text))} "
                                 f"where phrasings[0] states {list(first)}. Give every phrasing the same explicit limits")


def related(task_a: str, task_b: str) -> bool:
    """Whether a same-user pair of two different tasks is RELATED_UNSAFE (the same topic: another
    question about the same thing) rather than UNRELATED (different topics)."""
    tasks = _seed()["tasks"]
    return task_a != task_b and tasks[task_a]["topic"] == tasks[task_b]["topic"]


def personas() -> list[dict[str, str]]:
    """Personas in file order, each a dict of the five identity fields."""
    return [dict(zip(FIELDS, (str(v) for v in p))) for p in _seed()["personas"]]


def system_prompt(persona: Mapping[str, str], template: int) -> str:
    prompts = _seed()["system_prompts"]
    return fix_articles(prompts[template % len(prompts)].format(**persona))


def _fill(text: str, persona: Mapping[str, str], slot: str, value: str) -> str:
    return fix_articles(text.format(**persona, **{slot: value}))


def _criteria(task: str, persona: Mapping[str, str], value: str) -> list[str]:
    t = _seed()["tasks"][task]
    return [_fill(c, persona, t["slot"], value) for c in t["criteria"]]


def _query(task: str, phrasing: int, value: str) -> str:
    """The phrasing-th wording: phrasings rotate first, then a greeting that never changes the
    answer ("Hi! ..."), so that query texts are varied enough for the split rule."""
    t = _seed()["tasks"][task]
    n = len(t["phrasings"])
    greetings = _seed()["greetings"]
    return greetings[(phrasing // n) % len(greetings)] + fix_articles(t["phrasings"][phrasing % n].format(**{t["slot"]: value}))


# ---- operators ----

def _identity_swap(seed: tuple[Mapping[str, str], str], rng: Any = None) -> tuple[dict[str, str], str, str] | None:
    """The same persona with one field the task depends on replaced by another persona's value
    (vegetarian -> vegan, Leeds -> Lisbon). Returns (new persona, field, new value)."""
    persona, task = seed
    fields = _seed()["tasks"][task]["depends_on"]
    field = fields[len(persona["name"]) % len(fields)]
    pool = sorted({p[field] for p in personas()} - {persona[field]})
    if not pool:
        return None
    new = pool[sum(map(ord, persona["name"])) % len(pool)]
    return {**persona, field: new}, field, new


def _slot_swap(seed: tuple[str, str], rng: Any = None) -> str | None:
    """The request slot replaced by the next value of the task (dinner -> snack, spring -> summer)."""
    task, value = seed
    values = _seed()["tasks"][task]["values"]
    return values[(values.index(value) + 1) % len(values)] if value in values and len(values) > 1 else None


OPERATORS = {
    "identity_swap": Operator("identity_swap", "change one identity detail the answer depends on", _identity_swap),
    "request_slot_swap": Operator("request_slot_swap", "change the request's answer-determining slot", _slot_swap),
}


def policy(c: Candidate) -> str | None:
    """Answers tailored to one user are never served to another: different system prompts MISS."""
    return "cross_user" if (c.system_prompt_a or "") != (c.system_prompt_b or "") else None


GROUNDING = {
    ("EQUIV", False): "The same user sends the same request again with different casing or punctuation.",
    ("PARA_SAFE", False): "The same user rephrases a request in a later session; the tailored answer still fits.",
    ("RELATED_UNSAFE", False): "The same user asks a related but different question about the same part of their life.",
    ("ADVERSARIAL", False): "The same user repeats a request with one detail changed (breakfast instead of dinner).",
    ("UNRELATED", False): "The same user asks about something unrelated.",
    ("RELATED_UNSAFE", True): "Two users of a shared assistant send the same request; each answer is tailored to its user.",
    ("ADVERSARIAL", True): "Two user profiles differ in one detail (diet, city, name) that the tailored answer depends on.",
    ("UNRELATED", True): "Two different users of one deployment ask unrelated things.",
}


def _cand(label: str, pa: Mapping[str, str], ta: int, task_a: str, qa: str, va: str,
          pb: Mapping[str, str], tb: int, task_b: str, qb: str, vb: str,
          method: str, template: str, rationale: str, op: str | None = None, params: Mapping | None = None) -> Candidate:
    spa, spb = system_prompt(pa, ta), system_prompt(pb, tb)
    crit = {"criteria_a": _criteria(task_a, pa, va), "criteria_b": _criteria(task_b, pb, vb)}
    cross = spa != spb
    ans_a = _fill(_seed()["tasks"][task_a]["answer"], pa, _seed()["tasks"][task_a]["slot"], va)
    ans_b = _fill(_seed()["tasks"][task_b]["answer"], pb, _seed()["tasks"][task_b]["slot"], vb)
    tasks = task_a if task_a == task_b else f"{task_a}+{task_b}"
    c = Candidate(
        domain=DOMAIN, subcategory=("cross_user_" if cross else "same_user_") + tasks, label=label,
        query_a=qa, query_b=qb, expected_answer_a=ans_a, expected_answer_b=ans_b, rationale=rationale,
        verification_method="rubric", verification_payload=crit, construction_method=method, source="curated",
        real_world_grounding=GROUNDING[(label, cross)],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template,
                              operator=op, operator_params=dict(params) if params is not None else None,
                              source_file="sources/curated/personalized.yaml", source_record=f"{pa['name']}:{task_a}"),
        system_prompt_a=spa, system_prompt_b=spb,
    )
    return c.under_policy(policy(c))


def _pools(rng_for: Callable[..., Any]) -> dict[str, list[Candidate]]:
    """Per-label candidates, persona by persona and task by task (the phrasing rotation is the
    variety; `rng_for` is unused)."""
    data = _seed()
    tasks = list(data["tasks"])
    people = personas()
    out: dict[str, list[Candidate]] = {lab: [] for lab in LABELS}
    for j in range(len(tasks)):
        for k, p in enumerate(people):
            task = tasks[(k + j) % len(tasks)]
            t = data["tasks"][task]
            v = t["values"][(k // len(tasks) + j) % len(t["values"])]
            ph = k + 2 * j
            q = _query(task, ph, v)
            same = (p, k, task)
            out["EQUIV"].append(_cand("EQUIV", *same, q, v, *same, surface(q, k + j), v, "curated", "same_user_surface",
                                      "Same user, same request; only case or punctuation differ."))
            far = far_rotation(t["phrasings"], ph + 1)  # the rewording sharing the fewest words: a hard paraphrase
            out["PARA_SAFE"].append(_cand("PARA_SAFE", *same, _query(task, ph + 1, v), v, *same, _query(task, far, v), v,
                                          "curated", "same_user_paraphrase", "Same user, the request reworded with the same details."))
            v2 = OPERATORS["request_slot_swap"].apply((task, v))
            q3 = _query(task, ph + 3, v)
            q3b = _query(task, ph + 3, v2)
            out["ADVERSARIAL"].append(_cand("ADVERSARIAL", *same, q3, v, *same, q3b, v2, "adversarial_perturbation",
                                            "same_user_slot_swap", f"Same user; the request asks for {v2} instead of {v}.",
                                            "request_slot_swap", {"slot": t["slot"], "from": v, "to": v2}))
            swapped = OPERATORS["identity_swap"].apply((p, task))
            if swapped is not None:
                p2, field, new = swapped
                q4 = _query(task, ph + 4, v)
                out["ADVERSARIAL"].append(_cand("ADVERSARIAL", p, k, task, q4, v, p2, k, task, q4, v, "adversarial_perturbation",
                                                "identity_detail_swap",
                                                f"The same request from a profile whose {field} is {new} instead of {p[field]}.",
                                                "identity_swap", {"field": field, "from": p[field], "to": new}))
            oi = (k + 5 + 3 * j) % len(people)
            other = people[oi]
            qo = _query(task, ph + 5, v)
            if _criteria(task, p, v) != _criteria(task, other, v):  # else both users get the same answer
                out["RELATED_UNSAFE"].append(_cand("RELATED_UNSAFE", p, k, task, qo, v, other, oi, task, qo, v, "curated",
                                                   "cross_user_same_request", "The same request from another user gets an answer tailored to that user."))
            partners = [u for u in tasks if related(task, u)]
            if partners:
                t2 = partners[k % len(partners)]
                w = data["tasks"][t2]["values"][k % len(data["tasks"][t2]["values"])]
                out["RELATED_UNSAFE"].append(_cand("RELATED_UNSAFE", *same, _query(task, ph + 6, v), v, p, k, t2, _query(t2, ph + 6, w), w,
                                                   "curated", "same_user_related_task",
                                                   "Same user, a related request about the same topic with a different answer."))
            unrel = [u for u in tasks if u != task and not related(task, u)]
            u = unrel[(k + j) % len(unrel)]
            w = data["tasks"][u]["values"][(k + 1) % len(data["tasks"][u]["values"])]
            if k % 2 == 0:
                out["UNRELATED"].append(_cand("UNRELATED", *same, _query(task, ph + 7, v), v, p, k, u, _query(u, ph + 7, w), w,
                                              "curated", "same_user_unrelated", "Same user, two unrelated requests."))
            else:
                out["UNRELATED"].append(_cand("UNRELATED", *same, _query(task, ph + 7, v), v, other, oi, u, _query(u, ph + 8, w), w,
                                              "curated", "cross_user_unrelated", "Two users with unrelated requests."))
    return out


# Eight spare above the default 20% margin: 56 per label for both profiles.
_build = capped_builder(DOMAIN, _pools, LABELS, spare=8)


SPEC = DomainSpec(
    name=DOMAIN,
    description="The same or a similar request under different user identities; cross-user pairs never hit.",
    generators={**method_generators(DOMAIN, _build.for_ctx), "lm_generated": lambda ctx: lm_edits.generate(SPEC, ctx)[0]},
    verifier="rubric",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    lm=LMHooks(source_file=lm_hooks.SOURCE, edit_seeds=lm_hooks.edit_seeds,
               resolve_edit=lm_hooks.resolve_edit),
)
