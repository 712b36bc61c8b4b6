"""The code domain's part in LM-written near-misses (domains/lm/edits.py).

Seeds: one plain request per (task, variant, language) of the curated file, in a stable frame and
behaviour clause, naming the detail to change: the language, or for a task with two variants the
slot's value ("ascending"). A model rewrites it; the test program, never the model, decides what
the rewrite asks for:

- the rewrite must be the seed with the language swapped (Python <-> JavaScript, the two the
  reference solutions and tests are written in) or the task's variant swapped, re-rendered word for
  word (`render_query`);
- both sides then expect their curated reference solutions, and the verifier (ast_sandbox) runs
  each side's tests against both solutions: the row is kept only when the answers differ.
"""
from __future__ import annotations

from dataclasses import replace

from domains.base import Candidate, EditSeed, Span, normalize_text, stable_rng
from domains.code.catalog import LANGS, curated, task, units
from domains.code.planning import DOMAIN, _candidate
from domains.code.render import Spec, render_query


def _display(lang: str) -> str:
    return curated()["languages"][lang]["display"]


def lm_edit_seeds() -> list[EditSeed]:
    """One request per (task, variant, language), each naming the language or the variant's slot value."""
    frames = [f["id"] for f in curated()["frames"]]
    out = []
    for tid, vid, lang in units():
        t = task(tid)
        rng = stable_rng(DOMAIN, "lm_edit", tid, vid, lang)
        spec = Spec(tid, vid, lang, rng.choice(frames), rng.randrange(len(t["does"])))
        other_lang = next(x for x in LANGS if x != lang)
        whats = [f"{_display(lang)} to another programming language, such as {_display(other_lang)}"]
        if t.get("slot") and len(t["variants"]) == 2 and any("{" + t["slot"] + "}" in d for d in t["does"]):
            other = next(str(v["id"]) for v in t["variants"] if str(v["id"]) != vid)
            if "{" + t["slot"] + "}" in t["does"][spec.does]:
                whats.append(f'"{vid}" to "{other}"')
        out.append(EditSeed(f"{tid}/{vid}/{lang}", render_query(spec), tid, rng.choice(whats), spec))
    return out


def lm_resolve_edit(seed: EditSeed, rewrite: str, span: Span) -> Candidate | str:
    """The curated reading of a rewrite: the other language or the other variant of the same request."""
    spec: Spec = seed.data
    t, want = task(spec.task), normalize_text(rewrite)
    options = [("language_swap", replace(spec, lang=x), {"from": spec.lang, "to": x}) for x in LANGS if x != spec.lang]
    if t.get("slot"):
        options += [(str(t["operator"]), replace(spec, variant=str(v["id"])),
                     {"slot": t["slot"], "from": spec.variant, "to": str(v["id"])})
                    for v in t["variants"] if str(v["id"]) != spec.variant]
    for op, other, params in options:
        if normalize_text(render_query(other)) == want:
            return _candidate("ADVERSARIAL", spec, other, "lm_generated",
                              f"A model changed {params['from']} to {params['to']} ({op}); each side expects its "
                              f"curated reference solution, and each side's tests tell them apart.",
                              params={"kind": op, **params})
    return "not_a_curated_request"
