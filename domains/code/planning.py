"""Building the code domain's candidates, every label, under one family guard.

Code families are the smallest possible: every normalised query text goes into one candidate
only (`FamilyGuard(max_uses=1, max_group=1)`). Each generator walks the requests of a (task,
variant, language) in a seeded order and keeps the first candidate the guard accepts. ADVERSARIAL
pairs are planned first, because an operator pair needs two matching free texts.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Iterable, Iterator

from domains.base import Candidate, Operator, Provenance, normalize_text, stable_rng
from domains.code.catalog import LANGS, curated, first_variant, group_of, task, units
from domains.code.operators import OPERATORS
from domains.code.render import Spec, render_answer, render_query, surface_ops_for, surface_steps_effective
from domains.code.sandbox_tests import render_tests
from domains.families import FamilyGuard

DOMAIN = "code"
VERSION = "1"

GROUNDING = {
    "EQUIV": "Developers resend the same coding request with different casing, spacing or punctuation.",
    "PARA_SAFE": "Developers phrase the same function request in different words, keeping its name and behaviour.",
    "RELATED_UNSAFE": "A developer asks for a neighbouring utility on the same data, which needs different code.",
    "UNRELATED": "A coding assistant receives unrelated function requests from the same kinds of users.",
    "ADVERSARIAL": "Near-identical coding requests differ in one detail (language, order, bound, name) that changes the code.",
}


def _candidate(label: str, a: Spec, b: Spec, method: str, rationale: str,
               operator: str | None = None, params: dict | None = None) -> Candidate:
    payload = {"language_a": a.lang, "language_b": b.lang,
               "tests_a": render_tests(a), "tests_b": render_tests(b)}
    return Candidate(
        domain=DOMAIN, subcategory=task(a.task)["subcategory"], label=label,
        query_a=render_query(a), query_b=render_query(b),
        expected_answer_a=render_answer(a), expected_answer_b=render_answer(b),
        rationale=rationale, verification_method="ast_sandbox", verification_payload=payload,
        construction_method=method, source="curated", real_world_grounding=GROUNDING[label],
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION,
                              template_id=f"{a.template_id}|{b.template_id}", operator=operator,
                              operator_params=params, source_file="sources/curated/code.yaml",
                              source_record=a.task))


def first_admitted(guard: FamilyGuard, tries: Iterable[Candidate]) -> Candidate | None:
    """The first of `tries` the guard accepts (and counts). Only an EQUIV pair may normalise to
    one text on both sides (a change of case, spacing or end punctuation); FamilyGuard alone
    would count any such pair as one text, so the other labels are refused here."""
    for c in tries:
        if c.label != "EQUIV" and normalize_text(c.query_a) == normalize_text(c.query_b):
            continue
        if guard.offer(c):
            return c
    return None


def _combos(tid: str, stub: bool, rng) -> list[tuple[str, int]]:
    """Every (frame, clause) of the task, shuffled by `rng`."""
    frames = curated()["stub_frames" if stub else "frames"]
    combos = [(f["id"], d) for f in frames for d in range(len(task(tid)["does"]))]
    rng.shuffle(combos)
    return combos


def _specs(tid: str, vid: str, lang: str, rng, stub: bool = False) -> list[Spec]:
    """The requests of (task, variant, language) in a seeded order."""
    return [Spec(tid, vid, lang, frame, d, stub=stub) for frame, d in _combos(tid, stub, rng)]


@lru_cache(maxsize=1)
def plan() -> tuple[Candidate, ...]:
    """All candidates of the domain, built in one pass so that no query text is used twice."""
    guard = FamilyGuard(max_uses=1, max_group=1)
    out: list[Candidate] = []
    out += _adversarial(guard)  # first: operator pairs need two matching free texts
    out += _equiv(guard)
    out += _para(guard)
    out += _related(guard)
    out += _unrelated(guard)
    return tuple(out)


def _surface_variant(spec: Spec, rng) -> Spec | None:
    """`spec` with two surface ops that both take effect together (the rationale lists exactly
    these), or None."""
    ops = surface_ops_for(spec)
    pairs = [(x, y) for i, x in enumerate(ops) for y in ops[i + 1:]]
    rng.shuffle(pairs)
    return next((replace(spec, surface=p) for p in pairs if surface_steps_effective(spec, p)), None)


def _equiv_tries(tid: str, vid: str, lang: str, rng) -> Iterator[Candidate]:
    for a in _specs(tid, vid, lang, rng):
        b = _surface_variant(a, rng)
        if b is not None and render_query(a) != render_query(b):
            yield _candidate("EQUIV", a, b, "curated", f"Surface change only ({', '.join(b.surface)}); "
                             "same function, name and language, so the same reference solution.")


def _equiv(guard: FamilyGuard) -> Iterator[Candidate]:
    for tid, vid, lang in units():
        c = first_admitted(guard, _equiv_tries(tid, vid, lang, stable_rng(DOMAIN, "equiv", tid, vid, lang)))
        if c:
            yield c


def _para_tries(tid: str, vid: str, lang: str, rng) -> Iterator[Candidate]:
    # A reworded request; sometimes one side attaches the stub instead of naming the signature.
    stub_b = rng.random() < 0.3
    for a in _specs(tid, vid, lang, rng):
        for b in _specs(tid, vid, lang, rng, stub=stub_b):
            if a.frame != b.frame and a.does != b.does:
                yield _candidate("PARA_SAFE", a, b, "curated", "Reworded request with the same function "
                                 "name, parameters, behaviour and language: the same reference solution.")


def _para(guard: FamilyGuard) -> Iterator[Candidate]:
    for tid, vid, lang in units():
        c = first_admitted(guard, _para_tries(tid, vid, lang, stable_rng(DOMAIN, "para", tid, vid, lang)))
        if c:
            yield c


def _group_pairs(kind: str) -> list[tuple[str, str]]:
    """Task pairs: each task with the next of its group ("related"), or with a seeded pick from a
    group that is neither its own nor listed as near it ("unrelated")."""
    groups = curated()["groups"]
    pairs = []
    for g in sorted(groups):
        members = groups[g]
        for i, tid in enumerate(members):
            if kind == "related":
                pairs.append((tid, members[(i + 1) % len(members)]))
            else:
                near = set(curated().get("near_groups", {}).get(g, []))
                others = sorted(t for h in sorted(groups) if h != g and h not in near for t in groups[h])
                pairs.append((tid, stable_rng(DOMAIN, "unrelated", tid).choice(others)))
    return pairs


def _other_task(spec: Spec, tid: str) -> Spec:
    """The same frame and language asking for task `tid` (its first variant)."""
    d = spec.does % len(task(tid)["does"])
    return Spec(tid, first_variant(tid), spec.lang, spec.frame, d)


def _related(guard: FamilyGuard) -> Iterator[Candidate]:
    for lang in LANGS:
        for x, y in _group_pairs("related"):
            rng = stable_rng(DOMAIN, "related", x, y, lang)
            c = first_admitted(guard, (
                _candidate("RELATED_UNSAFE", a, _other_task(a, y), "curated",
                           f"Same topic ({group_of(x)}) but a different task: {x} vs {y} need different code.")
                for a in _specs(x, first_variant(x), lang, rng)))
            if c:
                yield c


def _unrelated(guard: FamilyGuard) -> Iterator[Candidate]:
    for lang in LANGS:
        for x, z in _group_pairs("unrelated"):
            rng = stable_rng(DOMAIN, "unrelated", x, z, lang)
            firsts, seconds = _specs(x, first_variant(x), lang, rng), _specs(z, first_variant(z), lang, rng)
            c = first_admitted(guard, (
                _candidate("UNRELATED", a, b, "curated", f"Different tasks from different topics ({x} vs {z}).")
                for a in firsts for b in seconds))
            if c:
                yield c


def _adversarial(guard: FamilyGuard) -> Iterator[Candidate]:
    tids = list(curated()["tasks"])
    for tid in tids:
        t = task(tid)
        if t.get("operator"):  # the variant swap, both directions, both languages
            op = OPERATORS[t["operator"]]
            for v in t["variants"]:
                for lang in LANGS:
                    yield from _perturb(guard, op, tid, str(v["id"]), lang, stub=False)
    for i, tid in enumerate(tids):
        rng = stable_rng(DOMAIN, "adv_variant", tid)
        vid = rng.choice([str(v["id"]) for v in task(tid)["variants"]])
        yield from _perturb(guard, OPERATORS["language_swap"], tid, vid, LANGS[i % 2], stub=False)
        yield from _perturb(guard, OPERATORS["identifier_rename"], tid, vid, LANGS[(i + 1) % 2], stub=True)


def _perturb_tries(op: Operator, tid: str, vid: str, lang: str, stub: bool) -> Iterator[Candidate]:
    rng = stable_rng(DOMAIN, "adv", op.name, tid, vid, lang)
    for a in _specs(tid, vid, lang, rng, stub=stub):
        got = op.apply(a, rng)
        if got is not None:
            b, params = got
            yield _candidate("ADVERSARIAL", a, b, "adversarial_perturbation",
                             f"{op.description}: one answer-determining detail differs, so the code differs.",
                             operator=op.name, params=dict(params))


def _perturb(guard: FamilyGuard, op: Operator, tid: str, vid: str, lang: str, stub: bool) -> Iterator[Candidate]:
    c = first_admitted(guard, _perturb_tries(op, tid, vid, lang, stub))
    if c:
        yield c
