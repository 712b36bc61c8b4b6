"""creative: poems, stories and slogans. Every pair is policy_no_cache ("creative").

A user asking for a poem wants a new poem, so a cached creative answer is a wrong answer: every row
is binary MISS whatever its 5-class label. The label is still checked with `rubric` as the
underlying method: three criteria (the form, the subject, the brief's extra requirement) are equal
for EQUIV (same request, surface variant) and PARA_SAFE (same brief reworded) and differ for
RELATED_UNSAFE (same subject, another form of brief), ADVERSARIAL (one operator change: the form,
the subject or a named character; a form swap never stays inside a group of near-synonym forms such
as slogan/tagline/motto, listed under form_groups) and UNRELATED (briefs of different families).
Briefs and wordings come from sources/curated/creative.yaml. Candidates are built once
(`families.capped_builder`, labels taking turns at one family guard) up to
`caps_for(ctx.need, spare=8)`: max(need, 40) plus 20%, plus 8, per label.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping

from domains.corpora import mining
from domains.curated import read_curated
from domains.base import LABELS, Candidate, DomainSpec, MinedRule, Operator, Provenance
from domains.families import capped_builder, fix_articles, method_generators, round_robin, surface
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "creative"
VERSION = "1"
SOURCE_FILE = CURATED / "creative.yaml"
FAMILIES = ("poem", "story", "slogan")


@lru_cache(maxsize=1)
def _seed() -> dict:
    data = read_curated(SOURCE_FILE, ("phrasings", "related", "greetings", "forms", "form_groups", "form_criteria",
                                      "briefs", "names", "subjects"))
    for i, b in enumerate(data["briefs"]):
        missing = [k for k in ("family", "form", "subject", "extra") if k not in b]
        if b.get("extra") and "extra_criterion" not in b:
            missing.append("extra_criterion")
        if missing or b["family"] not in FAMILIES or b["form"] not in data["forms"][b["family"]]:
            raise InputError(f"{SOURCE_FILE}:briefs[{i}]: needs {', '.join(missing) or 'a form listed under forms.<family>'}. Fix the record")
        if "character" in b and b["character"] not in b["extra"]:
            raise InputError(f"{SOURCE_FILE}:briefs[{i}]: character '{b['character']}' does not occur in extra. Fix the record")
    for fam, forms in data["forms"].items():
        for f in forms:
            if f not in data["form_criteria"]:
                raise InputError(f"{SOURCE_FILE}:form_criteria: no criterion for form '{f}'. Add one")
    known = {f for forms in data["forms"].values() for f in forms}
    seen: set[str] = set()
    for g, group in enumerate(data["form_groups"]):
        if not isinstance(group, list) or len(group) < 2:
            raise InputError(f"{SOURCE_FILE}:form_groups[{g}]: a group needs two or more forms. "
                             "List the interchangeable forms, or drop the group")
        bad = [str(f) for f in group if f not in known or f in seen]
        if bad:
            raise InputError(f"{SOURCE_FILE}:form_groups[{g}]: form '{bad[0]}' is not under forms or is already "
                             "in a group. Use forms from forms.<family>, each in one group only")
        seen.update(group)
    return data


def form_group(form: str) -> tuple[str, ...]:
    """The forms interchangeable with `form` (its synonym group from form_groups), itself included."""
    for group in _seed()["form_groups"]:
        if form in group:
            return tuple(group)
    return (form,)


def briefs() -> list[dict[str, str]]:
    return [dict(b) for b in _seed()["briefs"]]


def criteria(brief: Mapping[str, str]) -> list[str]:
    """The three criteria a fresh answer to this brief must meet: form, subject, and the extra
    requirement (or, without one, what the form itself demands)."""
    third = brief.get("extra_criterion") or _seed()["form_criteria"][brief["form"]]
    return [fix_articles(f"is a {brief['form']}"), f"is about {brief['subject']}", third]


def query(brief: Mapping[str, str], phrasing: int) -> str:
    """The phrasing-th wording of a brief: phrasings rotate first, then greetings."""
    ph = _seed()["phrasings"][brief["family"]]
    greet = _seed()["greetings"]
    return greet[(phrasing // len(ph)) % len(greet)] + fix_articles(ph[phrasing % len(ph)].format(**brief))


# ---- operators: each returns the perturbed brief and its parameters, or None ----

def _form_swap(brief: Mapping[str, str], rng: Any = None) -> tuple[dict, dict] | None:
    """haiku -> limerick: the next form of the same family that is not a near-synonym of the
    brief's form (slogan -> jingle, never slogan -> tagline: those briefs ask for the same thing).
    None for form-bound extras such as an acrostic word, or when every form of the family is a
    synonym of the brief's."""
    if brief.get("form_bound"):
        return None
    forms = _seed()["forms"][brief["family"]]
    start = forms.index(brief["form"])
    synonyms = form_group(brief["form"])
    # Walk the family's forms in file order after the brief's own, so the choice is deterministic.
    new = next((f for f in forms[start + 1:] + forms[:start] if f not in synonyms), None)
    if new is None:
        return None
    return {**brief, "form": new}, {"from": brief["form"], "to": new}


def _subject_swap(brief: Mapping[str, str], rng: Any = None) -> tuple[dict, dict] | None:
    """autumn leaves -> spring rain: a subject from the family's replacement list. Not for briefs
    whose extra names the subject ("a wizard named X") or is tied to the form."""
    if brief.get("character") or brief.get("form_bound"):
        return None
    pool = [s for s in _seed()["subjects"][brief["family"]] if s != brief["subject"]]
    new = pool[len(brief["subject"]) % len(pool)]
    return {**brief, "subject": new}, {"from": brief["subject"], "to": new}


def _character_rename(brief: Mapping[str, str], rng: Any = None) -> tuple[dict, dict] | None:
    """Biscuit -> Juniper: a named character in the brief renamed (in the request and the criterion)."""
    old = brief.get("character")
    if not old:
        return None
    kind = brief.get("character_kind", "person")
    pool = [n for n in _seed()["names"][kind] if n != old]
    new = pool[sum(map(ord, old)) % len(pool)]
    return ({**brief, "character": new, "extra": brief["extra"].replace(old, new),
             "extra_criterion": brief["extra_criterion"].replace(old, new)}, {"from": old, "to": new})


OPERATORS = {
    "form_swap": Operator("form_swap", "change the requested form within its family (haiku -> limerick)", _form_swap),
    "subject_swap": Operator("subject_swap", "change the subject of the piece", _subject_swap),
    "character_rename": Operator("character_rename", "rename a named character or brand", _character_rename),
}


def policy(c: Candidate) -> str | None:
    """Every creative request wants a fresh piece: never served from a cache."""
    return "creative" if c.domain == DOMAIN else None


GROUNDING = {
    "EQUIV": "A user sends the same creative request again, expecting a new piece rather than the old one.",
    "PARA_SAFE": "Two users word the same creative brief differently; each still expects an original piece.",
    "RELATED_UNSAFE": "A user asks for a different kind of piece on the same subject.",
    "ADVERSARIAL": "A creative request that differs from a cached one in one detail (the form, the subject or a name).",
    "UNRELATED": "Two unrelated creative requests reach the same writing assistant.",
}


def _cand(label: str, ba: Mapping, qa: str, bb: Mapping, qb: str, method: str, template: str, rationale: str,
          ca: list[str] | None = None, cb: list[str] | None = None, op: str | None = None, params: Mapping | None = None) -> Candidate:
    crit = {"criteria_a": ca or criteria(ba), "criteria_b": cb or criteria(bb)}
    sub = ba["family"] if ba["family"] == bb["family"] else f"{ba['family']}+{bb['family']}"
    c = Candidate(
        domain=DOMAIN, subcategory=sub, label=label, query_a=qa, query_b=qb,
        expected_answer_a=f"A new {ba['form']} about {ba['subject']}{ba['extra']}.",
        expected_answer_b=f"A new {bb['form']} about {bb['subject']}{bb['extra']}.",
        rationale=rationale, verification_method="rubric", verification_payload=crit, construction_method=method,
        source="curated", real_world_grounding=GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template,
                              operator=op, operator_params=dict(params) if params is not None else None,
                              source_file="sources/curated/creative.yaml", source_record=f"{ba['form']}:{ba['subject']}"),
    )
    return c.under_policy(policy(c))


def _pools(rng_for: Callable[..., Any]) -> dict[str, list[Candidate]]:
    """Per-label candidates, brief by brief (the phrasing rotation is the variety; `rng_for` is unused)."""
    # Round-robin over families, so that the per-label caps spread over poems, stories and slogans.
    bs = round_robin([[b for b in briefs() if b["family"] == f] for f in FAMILIES])
    out: dict[str, list[Candidate]] = {lab: [] for lab in LABELS}
    for k, b in enumerate(bs):
        ph = k
        for extra_round in (0, 10):
            q = query(b, ph + extra_round)
            out["EQUIV"].append(_cand("EQUIV", b, q, b, surface(q, k), "curated", "same_request_surface",
                                      "The same creative request; only case or punctuation differ."))
            out["PARA_SAFE"].append(_cand("PARA_SAFE", b, query(b, ph + 1 + extra_round), b, query(b, ph + 2 + extra_round),
                                          "curated", "same_brief_reworded", "The same brief (form, subject, requirement) in other words."))
        for n, rel in enumerate(_seed()["related"][b["family"]]):
            rb = {**b, "form": rel["form"], "extra": "", "extra_criterion": rel["criterion"]}
            rq = ("" if n == 0 else _seed()["greetings"][1 + k % 3]) + fix_articles(rel["template"].format(**b))
            out["RELATED_UNSAFE"].append(_cand("RELATED_UNSAFE", b, query(b, ph + 3 + n), rb, rq, "curated", f"related_brief_{n}",
                                               fix_articles(f"Same subject, but a {rel['form']} instead of a {b['form']}.")))
        for name in ("character_rename", "form_swap", "subject_swap"):
            res = OPERATORS[name].apply(b)
            if res is None:
                continue
            nb, params = res
            qa = query(b, ph + 5)
            qb = query(nb, ph + 5)
            if qa == qb:
                continue
            out["ADVERSARIAL"].append(_cand("ADVERSARIAL", b, qa, nb, qb, "adversarial_perturbation", name,
                                            f"One detail of the brief changed ({params['from']} -> {params['to']}).",
                                            op=name, params=params))
        other = bs[(k + len(bs) // 3) % len(bs)]
        if other["family"] != b["family"]:
            out["UNRELATED"].append(_cand("UNRELATED", b, query(b, ph + 6), other, query(other, ph + 7), "curated",
                                          "other_family", "Different creative requests: another form and subject."))
        other2 = bs[(k + 2 * len(bs) // 3) % len(bs)]
        if other2["family"] != b["family"]:
            out["UNRELATED"].append(_cand("UNRELATED", b, query(b, ph + 8), other2, query(other2, ph + 9), "curated",
                                          "other_family", "Different creative requests: another form and subject."))
    return out


# Eight spare above the default 20% margin: 56 per label for both profiles.
_build = capped_builder(DOMAIN, _pools, LABELS, spare=8)


SPEC = DomainSpec(
    name=DOMAIN,
    description="Poems, stories and slogans; a creative request is never served from a cache.",
    generators={**method_generators(DOMAIN, _build.for_ctx),
                "real_traffic_mined": mining.real_traffic_rows},
    verifier="policy_no_cache",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    mined_rules=(MinedRule("creative"),),   # mined creative requests (under the creative policy)
)
