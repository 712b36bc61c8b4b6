"""The `code` domain: requests for small functions, answered by a reference solution.

Seed material is sources/curated/code.yaml: tasks with a function name and parameters, behaviour
clauses, and variants (each a Python and a JavaScript reference plus test cases). A request is a
`Spec` (task, variant, language, frame, clause, surface form); rendering a Spec gives the query,
the reference solution (the expected answer) and the test program for that solution.

Rows: EQUIV = one Spec and a surface variant of it; PARA_SAFE = two frames and two clauses of the
same task, variant and language; RELATED_UNSAFE = two tasks of one topic group; UNRELATED = tasks
of different groups; ADVERSARIAL = a typed operator applied to a Spec (language swap, the task's
variant swap, a rename of the function in an attached stub). Every query text is used by one
candidate only, so families stay small. All rows verify with `ast_sandbox`.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Iterable

from domains.curated import read_curated
from domains.families import method_generators
from domains.base import Candidate, DomainSpec, Operator, Provenance, normalize_text, stable_rng
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "code"
VERSION = "1"
SOURCE = CURATED / "code.yaml"
LANGS = ("python", "javascript")
VARIANT_OPERATORS = ("ascending_descending", "encode_decode", "inclusive_exclusive", "off_by_one", "in_place_copy")
SURFACE_OPS = ("lower", "no_period", "spaces", "colon", "newline")


# ----------------------------------------------------------------------------- curated source

@lru_cache(maxsize=1)
def curated() -> dict[str, Any]:
    """The parsed and checked curated file (tasks keyed by id)."""
    data = read_curated(SOURCE, ("languages", "frames", "stub_frames", "groups", "tasks"))
    tasks = {}
    for i, t in enumerate(data["tasks"]):
        _check_task(t, i)
        tasks[t["id"]] = t
    grouped = sorted(tid for members in data["groups"].values() for tid in members)
    if grouped != sorted(tasks):
        raise InputError(f"{SOURCE}: groups: every task must be in exactly one group. Fix the group lists")
    return {**data, "tasks": tasks}


def _check_task(t: dict, i: int) -> None:
    where = f"{SOURCE}:tasks[{i}]"
    for key in ("id", "subcategory", "name", "params", "rename_to", "does", "variants"):
        if key not in t:
            raise InputError(f"{where}: missing key '{key}'. Add it")
    variants = t["variants"]
    if t.get("operator"):
        if t["operator"] not in VARIANT_OPERATORS or len(variants) != 2 or "slot" not in t:
            raise InputError(f"{where} ({t['id']}): a task with an operator needs one of {VARIANT_OPERATORS}, "
                             "a slot and exactly two variants. Fix the task")
        if not all("{" + t["slot"] + "}" in d for d in t["does"]):
            raise InputError(f"{where} ({t['id']}): every clause must contain {{{t['slot']}}}. Add the slot")
    elif len(variants) != 1:
        raise InputError(f"{where} ({t['id']}): a task without an operator has one variant. Remove the others")
    for v in variants:
        for key in ("id", "cases", *LANGS):
            if key not in v:
                raise InputError(f"{where} ({t['id']}/{v.get('id')}): variant misses '{key}'. Add it")


def task(tid: str) -> dict:
    return curated()["tasks"][tid]


def variant(tid: str, vid: str) -> dict:
    return next(v for v in task(tid)["variants"] if str(v["id"]) == vid)


def group_of(tid: str) -> str:
    return next(g for g, members in sorted(curated()["groups"].items()) if tid in members)


# ----------------------------------------------------------------------------- rendering

@dataclass(frozen=True)
class Spec:
    """One request: everything its query, answer and tests are rendered from."""

    task: str
    variant: str
    lang: str
    frame: str          # frame id (a stub frame when stub is True)
    does: int           # index of the behaviour clause
    stub: bool = False
    name: str | None = None          # the function name, when renamed
    surface: tuple[str, ...] = ()    # surface operations (EQUIV side)

    @property
    def fn(self) -> str:
        return self.name or task(self.task)["name"]

    @property
    def template_id(self) -> str:
        return f"{self.task}/{self.variant}/{self.lang}/{self.frame}/d{self.does}"


def _frame_text(spec: Spec) -> str:
    frames = curated()["stub_frames" if spec.stub else "frames"]
    return next(f["text"] for f in frames if f["id"] == spec.frame)


def _apply_surface(frame: str, lang_name: str, ops: tuple[str, ...]) -> tuple[str, str]:
    """Surface changes touch only the frame's own words, never identifiers or the clause."""
    for op in ops:
        if op == "lower":
            frame, lang_name = frame.lower(), lang_name.lower()
        elif op == "no_period":
            frame = frame[:-1] if frame.endswith(".") else frame
        elif op == "spaces":
            frame = "  " + frame.replace(" {sig}", "   {sig}").replace("{lang} ", "{lang}  ") + " "
        elif op == "colon":
            # Any run of spaces: the "spaces" op may already have widened the gap before {sig}.
            frame = re.sub(r"function( +)\{sig\}", r"function:\1{sig}", frame)
        elif op == "newline":
            # Either case: the "lower" op may already have turned "It" into "it".
            frame = re.sub(r"([.?]) ([Ii]t )", "\\1\n\\2", frame)
    return frame, lang_name


def surface_steps_effective(spec: Spec, ops: tuple[str, ...]) -> bool:
    """True when each of `ops`, applied in order, changes the query, so that a rationale listing
    `ops` names exactly the changes made (no op silently undone or blocked by an earlier one)."""
    frame, lang = _frame_text(spec), curated()["languages"][spec.lang]["display"]
    for op in ops:
        nxt = _apply_surface(frame, lang, (op,))
        if nxt == (frame, lang):
            return False
        frame, lang = nxt
    return True


def surface_ops_for(spec: Spec) -> list[str]:
    """The surface operations that change this spec's frame."""
    base = _frame_text(spec)
    lang = curated()["languages"][spec.lang]["display"]
    return [op for op in SURFACE_OPS if _apply_surface(base, lang, (op,)) != (base, lang)]


def render_query(spec: Spec) -> str:
    t = task(spec.task)
    langs = curated()["languages"][spec.lang]
    frame, lang_name = _apply_surface(_frame_text(spec), langs["display"], spec.surface)
    does = t["does"][spec.does]
    if t.get("slot"):
        does = does.replace("{" + t["slot"] + "}", spec.variant)
    sig = f"{spec.fn}({', '.join(t['params'])})"
    if spec.lang == "python":
        stub = f"def {sig}:\n    ..."
    else:
        stub = f"function {sig} {{\n  // TODO\n}}"
    values = {"lang": lang_name, "sig": sig, "does": does, "fence": langs["fence"], "stub": stub}
    return re.sub(r"\{(lang|sig|does|fence|stub)\}", lambda m: values[m.group(1)], frame)


def rename_identifier(code: str, lang: str, old: str, new: str) -> str:
    """Rename identifier `old` to `new` in code. Refuses (ValueError) when `old` occurs inside a
    string literal, where a textual rename could not be trusted."""
    if lang == "python":
        strings = [tok.string for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                   if tok.type == tokenize.STRING]
    else:
        strings = re.findall(r'"[^"\n]*"|\'[^\'\n]*\'|`[^`]*`', code)
    if any(re.search(rf"\b{re.escape(old)}\b", s) for s in strings):
        raise ValueError(f"{old!r} occurs in a string literal")
    return re.sub(rf"\b{re.escape(old)}\b", new, code)


def render_answer(spec: Spec) -> str:
    code = variant(spec.task, spec.variant)[spec.lang].rstrip() + "\n"
    base = task(spec.task)["name"]
    return rename_identifier(code, spec.lang, base, spec.fn) if spec.fn != base else code


_PY_HARNESS = '''
# --- tests
import copy as _copy_mod


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


_failed = []


def _case(n, check, fn, args, want):
    try:
        args = _copy_mod.deepcopy(args)
        before = _copy_mod.deepcopy(args)
        got = fn(*args)
        if check == "returns":
            ok = _same(got, want)
        elif check == "in_place":
            ok = got is None and _same(args[0], want)
        else:
            ok = _same(got, want) and _same(args, before)
    except Exception as exc:
        _failed.append(f"case {n}: {type(exc).__name__}: {exc}")
        return
    if not ok:
        _failed.append(f"case {n}: wrong result")

'''

_JS_HARNESS = '''
// --- tests
const _assert = require("node:assert");
const _failed = [];
function _case(n, check, fn, args, want) {
  try {
    const before = structuredClone(args);
    const got = fn(...args);
    if (check === "returns") {
      _assert.deepStrictEqual(got, want);
    } else if (check === "in_place") {
      _assert.strictEqual(got, undefined);
      _assert.deepStrictEqual(args[0], want);
    } else {
      _assert.deepStrictEqual(got, want);
      _assert.deepStrictEqual(args, before);
    }
  } catch (e) {
    _failed.push(`case ${n}: ${String(e.message).split("\\n")[0]}`);
  }
}
'''


def _js_literal(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def render_tests(spec: Spec) -> str:
    """The test program appended to a solution: exit status 0 iff every case passes. The function
    is looked up by the spec's name, so a renamed function fails the original's tests."""
    v = variant(spec.task, spec.variant)
    check = v.get("check", "returns")
    cases = v["cases"]
    if spec.lang == "python":
        lines = [_PY_HARNESS]
        for n, (args, want) in enumerate(cases, 1):
            lines.append(f"_case({n}, {check!r}, lambda *a: {spec.fn}(*a), {args!r}, {want!r})")
        lines.append(f'print(f"{{{len(cases)} - len(_failed)}}/{len(cases)} passed")')
        lines.append('print("\\n".join(_failed))')
        lines.append("raise SystemExit(1 if _failed else 0)")
    else:
        lines = [_JS_HARNESS]
        for n, (args, want) in enumerate(cases, 1):
            lines.append(f"_case({n}, {_js_literal(check)}, (...a) => {spec.fn}(...a), "
                         f"{_js_literal(args)}, {_js_literal(want)});")
        lines.append(f"console.log(`${{{len(cases)} - _failed.length}}/{len(cases)} passed`);")
        lines.append('console.log(_failed.join("\\n"));')
        lines.append("process.exit(_failed.length ? 1 : 0);")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- operators

def _lang_swap(seed: Spec, rng) -> tuple[Spec, dict] | None:
    other = next(lang for lang in LANGS if lang != seed.lang)
    return replace(seed, lang=other), {"from": seed.lang, "to": other}


def _variant_swap(op_name: str) -> Callable[[Spec, Any], tuple[Spec, dict] | None]:
    def apply(seed: Spec, rng) -> tuple[Spec, dict] | None:
        t = task(seed.task)
        if t.get("operator") != op_name:
            return None
        other = next(str(v["id"]) for v in t["variants"] if str(v["id"]) != seed.variant)
        return replace(seed, variant=other), {"slot": t["slot"], "from": seed.variant, "to": other}
    return apply


def _rename(seed: Spec, rng) -> tuple[Spec, dict] | None:
    if not seed.stub:
        return None  # the identifier must be shown in attached code
    t = task(seed.task)
    new = t["rename_to"]
    try:
        rename_identifier(variant(seed.task, seed.variant)[seed.lang], seed.lang, t["name"], new)
    except ValueError:
        return None
    return replace(seed, name=new), {"identifier": seed.fn, "to": new, "where": "attached stub"}


OPERATORS: dict[str, Operator] = {
    "language_swap": Operator("language_swap", "the same request in another programming language", _lang_swap),
    "ascending_descending": Operator("ascending_descending", "ascending order swapped with descending",
                                     _variant_swap("ascending_descending")),
    "encode_decode": Operator("encode_decode", "encode swapped with decode", _variant_swap("encode_decode")),
    "inclusive_exclusive": Operator("inclusive_exclusive", "an inclusive bound made exclusive or back",
                                    _variant_swap("inclusive_exclusive")),
    "off_by_one": Operator("off_by_one", "a number in the spec moved by one (size, width, start index)",
                           _variant_swap("off_by_one")),
    "in_place_copy": Operator("in_place_copy", "mutate the argument in place vs return a new list",
                              _variant_swap("in_place_copy")),
    "identifier_rename": Operator("identifier_rename", "the function in the attached stub renamed", _rename),
}


# ----------------------------------------------------------------------------- candidates

class _Texts:
    """Hands out query texts so that every normalised text is used by one candidate only."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def free(self, *specs: Spec) -> bool:
        norms = [normalize_text(render_query(s)) for s in specs]
        return len(set(norms)) == len(norms) and not any(n in self.used for n in norms)

    def take(self, *specs: Spec) -> None:
        self.used.update(normalize_text(render_query(s)) for s in specs)


def _combos(tid: str, stub: bool, rng) -> list[tuple[str, int]]:
    frames = curated()["stub_frames" if stub else "frames"]
    combos = [(f["id"], d) for f in frames for d in range(len(task(tid)["does"]))]
    rng.shuffle(combos)
    return combos


def _fresh(texts: _Texts, tid: str, vid: str, lang: str, rng, stub: bool = False,
           pair: Callable[[Spec], Spec | None] | None = None) -> tuple[Spec, Spec | None] | None:
    """The first unused request of (task, variant, language) in a seeded order; with `pair`, the
    first whose paired request is unused too. Marks the texts used."""
    for frame, d in _combos(tid, stub, rng):
        spec = Spec(tid, vid, lang, frame, d, stub=stub)
        other = pair(spec) if pair else None
        if pair and other is None:
            continue
        specs = (spec, other) if other else (spec,)
        if texts.free(*specs):
            texts.take(*specs)
            return spec, other
    return None


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


def _units() -> list[tuple[str, str, str]]:
    """Every (task, variant, language), in file order."""
    return [(tid, str(v["id"]), lang) for tid, t in curated()["tasks"].items()
            for v in t["variants"] for lang in LANGS]


@lru_cache(maxsize=1)
def _plan() -> tuple[Candidate, ...]:
    """All candidates of the domain, built in one pass so that no query text is used twice."""
    texts = _Texts()
    out: list[Candidate] = []
    out += _adversarial(texts)  # first: operator pairs need two matching free texts
    out += _equiv(texts)
    out += _para(texts)
    out += _related(texts)
    out += _unrelated(texts)
    return tuple(out)


def _equiv(texts: _Texts) -> Iterable[Candidate]:
    for tid, vid, lang in _units():
        rng = stable_rng(DOMAIN, "equiv", tid, vid, lang)

        def surface(spec: Spec) -> Spec | None:
            # Two ops that both take effect together: the rationale lists exactly these.
            ops = surface_ops_for(spec)
            pairs = [(x, y) for i, x in enumerate(ops) for y in ops[i + 1:]]
            rng.shuffle(pairs)
            return next((replace(spec, surface=p) for p in pairs if surface_steps_effective(spec, p)), None)

        for frame, d in _combos(tid, False, rng):
            a = Spec(tid, vid, lang, frame, d)
            b = surface(a)
            if b is None or render_query(a) == render_query(b) or not texts.free(a):
                continue
            texts.take(a, b)
            yield _candidate("EQUIV", a, b, "curated", f"Surface change only ({', '.join(b.surface)}); "
                             "same function, name and language, so the same reference solution.")
            break


def _para(texts: _Texts) -> Iterable[Candidate]:
    for tid, vid, lang in _units():
        rng = stable_rng(DOMAIN, "para", tid, vid, lang)
        # A reworded request; sometimes one side attaches the stub instead of naming the signature.
        stub_b = rng.random() < 0.3
        done = False
        for fa, da in _combos(tid, False, rng):
            for fb, db in _combos(tid, stub_b, rng):
                a, b = Spec(tid, vid, lang, fa, da), Spec(tid, vid, lang, fb, db, stub=stub_b)
                if fa == fb or da == db or not texts.free(a, b):
                    continue
                texts.take(a, b)
                yield _candidate("PARA_SAFE", a, b, "curated", "Reworded request with the same function "
                                 "name, parameters, behaviour and language: the same reference solution.")
                done = True
                break
            if done:
                break


def _group_pairs(kind: str) -> list[tuple[str, str]]:
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


def _first_variant(tid: str) -> str:
    return str(task(tid)["variants"][0]["id"])


def _related(texts: _Texts) -> Iterable[Candidate]:
    for lang in LANGS:
        for x, y in _group_pairs("related"):
            rng = stable_rng(DOMAIN, "related", x, y, lang)
            got = _fresh(texts, x, _first_variant(x), lang, rng, pair=lambda s: _other_task(s, y))
            if got:
                a, b = got
                yield _candidate("RELATED_UNSAFE", a, b, "curated",
                                 f"Same topic ({group_of(x)}) but a different task: {x} vs {y} need different code.")


def _other_task(spec: Spec, tid: str) -> Spec | None:
    d = spec.does % len(task(tid)["does"])
    return Spec(tid, _first_variant(tid), spec.lang, spec.frame, d)


def _unrelated(texts: _Texts) -> Iterable[Candidate]:
    for lang in LANGS:
        for x, z in _group_pairs("unrelated"):
            rng = stable_rng(DOMAIN, "unrelated", x, z, lang)
            first = _fresh(texts, x, _first_variant(x), lang, rng)
            second = _fresh(texts, z, _first_variant(z), lang, rng)
            if first and second:
                yield _candidate("UNRELATED", first[0], second[0], "curated",
                                 f"Different tasks from different topics ({x} vs {z}).")


def _adversarial(texts: _Texts) -> Iterable[Candidate]:
    tids = list(curated()["tasks"])
    for tid in tids:
        t = task(tid)
        if t.get("operator"):  # the variant swap, both directions, both languages
            op = OPERATORS[t["operator"]]
            for v in t["variants"]:
                for lang in LANGS:
                    yield from _perturb(texts, op, tid, str(v["id"]), lang, stub=False)
    for i, tid in enumerate(tids):
        rng = stable_rng(DOMAIN, "adv_variant", tid)
        vid = rng.choice([str(v["id"]) for v in task(tid)["variants"]])
        yield from _perturb(texts, OPERATORS["language_swap"], tid, vid, LANGS[i % 2], stub=False)
        yield from _perturb(texts, OPERATORS["identifier_rename"], tid, vid, LANGS[(i + 1) % 2], stub=True)


def _perturb(texts: _Texts, op: Operator, tid: str, vid: str, lang: str, stub: bool) -> Iterable[Candidate]:
    rng = stable_rng(DOMAIN, "adv", op.name, tid, vid, lang)
    params: dict = {}

    def pair(spec: Spec) -> Spec | None:
        got = op.apply(spec, rng)
        if got is None:
            return None
        params.clear()
        params.update(got[1])
        return got[0]

    got = _fresh(texts, tid, vid, lang, rng, stub=stub, pair=pair)
    if got:
        a, b = got
        yield _candidate("ADVERSARIAL", a, b, "adversarial_perturbation",
                         f"{op.description}: one answer-determining detail differs, so the code differs.",
                         operator=op.name, params=dict(params))



def policy(candidate: Candidate) -> str | None:
    """Code answers are neither personal, mutating, creative nor time-sensitive: no policy."""
    return None


SPEC = DomainSpec(
    name=DOMAIN,
    description="Small function requests in Python and JavaScript, answered by curated reference solutions.",
    # Curated rows need no corpus; the plan is the same for every profile (the pipeline selects).
    generators=method_generators(DOMAIN, lambda ctx: _plan()),
    verifier="ast_sandbox",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
)
