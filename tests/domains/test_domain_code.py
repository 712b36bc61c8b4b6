"""The code domain: references pass their tests, operators change the answer, the ast_sandbox
verifier accepts true HITs and rejects each MISS kind, and the domain meets quota."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import domains.code as code
from domains.code import catalog
from domains.code.planning import first_admitted
from domains.base import LABELS, Candidate, normalize_text
from domains.families import FamilyGuard
from domains.check import generate_verified
from domains.verify import verify
from domains.verify.code import normalise_python
from domains.verify.sandbox import run
from pipeline.core.config import load_profile
from pipeline.core.errors import InputError

UNITS = code.units()
PLAN = code.plan()


def _by(label: str, operator: str | None = None) -> list[Candidate]:
    return [c for c in PLAN if c.label == label and (operator is None or c.provenance.operator == operator)]


@pytest.mark.parametrize("unit", UNITS, ids=["/".join(u) for u in UNITS])
def test_every_reference_passes_its_own_tests(unit):
    spec = code.Spec(unit[0], unit[1], unit[2], "write", 0)
    res = run(code.render_answer(spec), code.render_tests(spec), spec.lang)
    assert res.passed, res.summary()


SEEDS = [code.Spec(t, v, lang, "complete" if stub else "write", 0, stub=stub)
         for t, v, lang in UNITS for stub in (False, True)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), op_name=st.sampled_from(sorted(code.OPERATORS)))
def test_each_operator_changes_the_answer(seed, op_name):
    got = code.OPERATORS[op_name].apply(seed, None)
    assume(got is not None)  # the operator does not apply to this seed (counted as a drop by the generator)
    other, params = got
    assert params and code.render_query(other) != code.render_query(seed)
    assert code.render_answer(other) != code.render_answer(seed)
    if other.lang == seed.lang:
        # Tests tell them apart: the perturbed reference fails the seed's tests and vice versa.
        assert not run(code.render_answer(other), code.render_tests(seed), seed.lang).passed
        assert not run(code.render_answer(seed), code.render_tests(other), seed.lang).passed


def test_every_operator_is_used_and_recorded():
    used = Counter(c.provenance.operator for c in _by("ADVERSARIAL"))
    assert set(used) == set(code.OPERATORS)
    for c in _by("ADVERSARIAL"):
        assert c.construction_method == "adversarial_perturbation" and c.provenance.operator_params


def test_verifier_accepts_true_hits():
    for label in ("EQUIV", "PARA_SAFE"):
        for c in _by(label)[:5]:
            assert verify(c).passed, (label, verify(c))
    # A reformatted answer with other local names and a docstring is the same answer.
    c = _by("EQUIV")[0]
    a = code.Spec("remove_duplicates", "returning a new list and leaving items unchanged", "python", "write", 0)
    rewritten = ('def remove_duplicates(items):\n    """Keep first occurrences."""\n    s = set()\n    out = []\n'
                 '    for x in items:\n        if x not in s:\n            s.add(x)\n            out.append(x)\n'
                 '    return out\n')
    hit = c.with_(expected_answer_a=code.render_answer(a), expected_answer_b=rewritten,
                  verification_payload={"language_a": "python", "language_b": "python",
                                        "tests_a": code.render_tests(a), "tests_b": code.render_tests(a)})
    out = verify(hit)
    assert out.passed and out.tier == "programmatic", out


@pytest.mark.parametrize("label", ["RELATED_UNSAFE", "UNRELATED", "ADVERSARIAL"])
def test_verifier_accepts_miss_kinds_and_rejects_them_as_hits(label):
    for c in _by(label)[:4]:
        assert verify(c).passed
        assert not verify(c.with_(label="EQUIV")).passed


@pytest.mark.parametrize("op", sorted(code.OPERATORS))
def test_each_operator_row_fails_as_a_hit(op):
    c = _by("ADVERSARIAL", op)[0]
    assert verify(c).passed
    out = verify(c.with_(label="PARA_SAFE"))
    assert not out.passed and out.reason == "answers_differ_for_hit"


def test_verifier_rejects_wrong_misses_and_broken_references():
    c = _by("EQUIV")[0]
    assert verify(c.with_(label="ADVERSARIAL")).reason == "answers_equal_for_miss"
    # Same names, same behaviour, different text: a rewrite, not a different answer.
    rev = next(x for x in _by("EQUIV") if x.expected_answer_b.strip().endswith("return text[::-1]")
               and x.verification_payload["language_b"] == "python")
    rewrite = rev.expected_answer_b.replace("return text[::-1]", "return ''.join(reversed(text))")
    assert verify(rev.with_(label="RELATED_UNSAFE", expected_answer_b=rewrite)).reason == "same_behaviour_for_miss"
    broken = c.with_(expected_answer_a="def nothing():\n    pass\n")
    assert verify(broken).reason == "reference_a_fails_own_tests"
    assert verify(c.with_(verification_payload={})).reason == "payload_missing"


def test_renamed_function_in_stub_is_a_different_answer_by_name():
    c = _by("ADVERSARIAL", "identifier_rename")[0]
    out = verify(c)
    assert out.passed and out.evidence["same_names"] is False
    old, new = c.provenance.operator_params["identifier"], c.provenance.operator_params["to"]
    assert old in c.query_a and new in c.query_b and new in c.expected_answer_b


def test_python_normalisation_keeps_answer_determining_names():
    a, names = normalise_python("def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total", [])
    b, _ = normalise_python("def f(xs):\n    acc=0\n    for v in xs: acc += v\n    return acc", [])
    c, _ = normalise_python("def g(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total", [])
    assert a == b and a != c and names == ["f", "xs"]


def test_policy_never_applies_and_binary_labels_follow_labels():
    for c in PLAN:
        assert code.policy(c) is None
        assert c.binary_label == ("HIT" if c.label in ("EQUIV", "PARA_SAFE") else "MISS")


def test_rows_are_distinct_and_families_small():
    sigs = [c.pair_signature() for c in PLAN]
    assert len(sigs) == len(set(sigs))
    uses: Counter = Counter()
    for c in PLAN:
        assert c.query_a != c.query_b
        if c.label != "EQUIV":  # only a surface change may leave the normalised text unchanged
            assert normalize_text(c.query_a) != normalize_text(c.query_b), c.provenance.template_id
        for q in {normalize_text(c.query_a), normalize_text(c.query_b)}:
            uses[q] += 1
    assert max(uses.values()) == 1  # code families: every query text in one candidate only
    # Components linked by shared query texts hold at most 6 candidates.
    by_text = defaultdict(set)
    for i, c in enumerate(PLAN):
        for q in (normalize_text(c.query_a), normalize_text(c.query_b)):
            by_text[q].add(i)
    parent = list(range(len(PLAN)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for members in by_text.values():
        first, *rest = sorted(members)
        for m in rest:
            parent[find(m)] = find(first)
    assert max(Counter(find(i) for i in range(len(PLAN))).values()) <= 6


def test_first_admitted_skips_refused_tries_and_lets_only_equiv_normalise_alike():
    c = _by("PARA_SAFE")[0]
    guard = FamilyGuard(max_uses=1, max_group=1)
    shouted = c.with_(query_b=c.query_a.upper() + "  ")
    assert first_admitted(guard, [shouted]) is None  # a PARA_SAFE pair must differ after normalisation
    as_equiv = shouted.with_(label="EQUIV")
    assert first_admitted(guard, [as_equiv]) is as_equiv
    fresh = c.with_(query_a="Write a new function, please.", query_b="Please write a new function.")
    assert first_admitted(guard, [c, fresh]) is fresh  # c reuses as_equiv's text: refused, next try taken
    assert first_admitted(guard, [fresh.with_(label="UNRELATED")]) is None  # texts already used


def test_generation_is_deterministic():
    keys = [c.key for c in PLAN]
    code.plan.cache_clear()
    assert [c.key for c in code.plan()] == keys


def test_bad_curated_file_is_a_one_line_input_error(tmp_path, monkeypatch):
    bad = tmp_path / "code.yaml"
    bad.write_text("languages: {}\nframes: []\nstub_frames: []\ngroups: {}\ntasks:\n  - id: x\n", encoding="utf-8")
    monkeypatch.setattr(catalog, "SOURCE", bad)
    code.curated.cache_clear()
    try:
        with pytest.raises(InputError, match=r"tasks\[0\]: missing key 'subcategory'"):
            code.curated()
    finally:
        code.curated.cache_clear()


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_quota_met_with_margin(profile):
    need = dict(load_profile(profile).matrix["code"])
    rep = generate_verified("code", need, profile=profile)
    assert not rep.drops, dict(rep.drops)
    for label in LABELS:
        want = math.ceil(1.1 * max(need[label], 40))
        assert len(rep.kept[label]) >= want, (label, len(rep.kept[label]), want)


def _equiv_spec(c: Candidate) -> tuple[code.Spec, tuple[str, ...]]:
    """The EQUIV row's query_a spec (from its template id) and the surface ops its rationale lists."""
    tid, *variant, lang, frame, d = c.provenance.template_id.split("|")[0].split("/")
    ops = tuple(c.rationale.split("(", 1)[1].split(")", 1)[0].split(", "))
    return code.Spec(tid, "/".join(variant), lang, frame, int(d[1:])), ops


def test_equiv_rationale_lists_exactly_the_surface_changes_applied():
    # cb-code-0010 said "(lower, newline)" although lowercasing had already blocked the newline.
    rows = _by("EQUIV")
    assert rows
    for c in rows:
        spec, ops = _equiv_spec(c)
        assert set(ops) <= set(code.SURFACE_OPS), c.rationale
        assert code.render_query(spec) == c.query_a
        assert code.render_query(replace(spec, surface=ops)) == c.query_b, c.rationale
        for drop in ops:  # every listed op matters: without it, query_b would differ
            fewer = tuple(o for o in ops if o != drop)
            assert code.render_query(replace(spec, surface=fewer)) != c.query_b, (c.rationale, drop)


def test_surface_ops_compose_in_either_case_and_spacing():
    spec = code.Spec("capitalize_words", UNITS[[u[0] for u in UNITS].index("capitalize_words")][1], "python",
                     "code_me", 0)
    assert code.surface_steps_effective(spec, ("lower", "newline"))
    assert "?\nit " in code.render_query(replace(spec, surface=("lower", "newline")))
    need = code.Spec(spec.task, spec.variant, "python", "need", 0)
    assert code.surface_steps_effective(need, ("spaces", "colon"))
    assert not code.surface_steps_effective(need, ("no_period", "no_period"))


def test_flipped_stored_sandbox_verdicts_are_rerun_and_code_rows_keep_their_true_outcome(tmp_path, monkeypatch,
                                                                                        capsys):
    # The attack: flip 40 stored verdicts (passed <-> failed, with a matching exit code, so
    # only the checksum can tell) and verify the code rows again from the same cache folder.
    import json
    import sqlite3

    from domains.verify import sandbox

    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(tmp_path))
    rows = [c for label in LABELS for c in _by(label)[:8]]
    sandbox.clear_cache()
    truth = [(out.passed, out.reason) for out in map(verify, rows)]
    sandbox.clear_cache()  # a new process: only the stored verdicts remain
    db = sqlite3.connect(tmp_path / "sandbox.sqlite")
    stored = db.execute("SELECT key, value FROM results ORDER BY key").fetchall()
    assert len(stored) >= 40
    for key, value in stored[:40]:
        d = json.loads(value)
        d["status"], d["returncode"] = ("failed", 1) if d["status"] == "passed" else ("passed", 0)
        db.execute("UPDATE results SET value = ? WHERE key = ?", (json.dumps(d, sort_keys=True), key))
    db.commit()
    db.close()
    real, runs = sandbox._run_uncached, []
    monkeypatch.setattr(sandbox, "_run_uncached", lambda *a: runs.append(a) or real(*a))
    capsys.readouterr()
    again = [(out.passed, out.reason) for out in map(verify, rows)]
    warnings = capsys.readouterr().err.strip().splitlines()
    assert again == truth
    assert len(runs) == 40  # exactly the flipped verdicts ran again
    assert len(warnings) == 40 and all(w.startswith("warning: ") and "fails its checksum" in w for w in warnings)
    sandbox.clear_cache()
    assert [(out.passed, out.reason) for out in map(verify, rows)] == truth
    assert len(runs) == 40 and capsys.readouterr().err == ""  # the re-run verdicts overwrote the flipped ones
    sandbox.clear_cache()
