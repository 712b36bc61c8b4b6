"""math domain: sympy-computed answers, typed operators that really change them, the
sympy_equivalence verifier, family limits and quota in v1.1 and lifted40."""
from __future__ import annotations

import math as pymath
import os
import subprocess
import sys
import time
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from domains import math as M
from domains.base import LABELS, Candidate, GenContext, Provenance, normalize_text, stable_rng
from domains.check import generate_verified
from domains.families import FamilyGuard
from domains.math.catalog import parse_template
from domains.math.planning import admit, answer_payload
from domains.verify import get, verify
from domains.verify.sympy_equiv import ParseError, answers_equivalent, parse_math
from pipeline.core.config import load_profile
from pipeline.core.errors import InputError
from pipeline.core.paths import PROJECT_ROOT

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _need(profile: str) -> dict[str, int]:
    return dict(load_profile(profile).matrix["math"])


def _cands(profile: str = "lifted40") -> list[Candidate]:
    return M.build(GenContext("math", profile, _need(profile)))[0]


def _row(label: str, payload: dict, a: str = "a", b: str = "b") -> Candidate:
    return Candidate(
        domain="math", subcategory="test", label=label, query_a="q a", query_b="q b", expected_answer_a=a,
        expected_answer_b=b, rationale="r", verification_method="sympy_equivalence", verification_payload=payload,
        construction_method="curated", source="curated", real_world_grounding="g",
        provenance=Provenance(generator="math.curated", generator_version="1"),
    )


def _check(label: str, kind: str, a: str, b: str, **extra):
    return get("sympy_equivalence")(_row(label, {"kind": kind, "answer_a": a, "answer_b": b, **extra}))


# ---------------------------------------------------------------- verifier


def test_verifier_accepts_true_hits_including_implicit_product():
    assert _check("EQUIV", "expression", "2x + 3", "2*x + 3").passed
    assert _check("EQUIV", "equation", "x = 6", "x=6").passed
    assert _check("PARA_SAFE", "expression", "(x + 2)(x + 3)", "(x+3)*(x+2)").passed
    assert _check("EQUIV", "set", "x = 2; x = 3", "x = 3; x = 2").passed
    assert _check("EQUIV", "equation", "Derivative(f(x), x) = 2*x + 3", "Derivative(f(x), x) = 3 + 2x").passed
    assert _check("EQUIV", "quantity", "225/2", "112.5", unit_a="km", unit_b="km").passed


def test_verifier_rejects_renamed_variable_labelled_hit():
    out = _check("EQUIV", "equation", "x = 6", "a = 6")
    assert not out.passed and out.reason == "answers_differ_for_hit"
    assert not _check("EQUIV", "expression", "2*x + 3", "2*t + 3").passed
    assert not _check("EQUIV", "equation", "Derivative(f(x), x) = 2*x", "Derivative(f(t), t) = 2*t").passed
    assert _check("ADVERSARIAL", "equation", "x = 6", "a = 6").passed


def test_verifier_rejects_equal_answers_labelled_miss():
    for label in ("ADVERSARIAL", "RELATED_UNSAFE", "UNRELATED"):
        out = _check(label, "expression", "x**2 + 5*x + 6", "(x + 2)(x + 3)")
        assert not out.passed and out.reason == "answers_equal_for_miss"


def test_verifier_miss_kinds():
    # unit change, operand change, kind change (solve vs factor), derivative vs integral
    assert not _check("EQUIV", "quantity", "150", "150", unit_a="km", unit_b="miles").passed
    assert _check("ADVERSARIAL", "quantity", "150", "150", unit_a="km", unit_b="miles").passed
    assert _check("ADVERSARIAL", "quantity", "6", "8", unit_a="kg", unit_b="kg").passed
    assert _check("RELATED_UNSAFE", "set", "x = 2; x = 3", "(x - 2)*(x - 3)", kind_b="expression").passed
    assert _check("RELATED_UNSAFE", "equation", "Derivative(f(x), x) = 2*x",
                  "Integral(f(x), x) = 2*x").passed
    assert _check("ADVERSARIAL", "set", "x = 2; x = 3", "x = 2; x = 4").passed


def test_verifier_numeric_tolerance_from_payload():
    assert _check("EQUIV", "quantity", "sqrt(2)", "1.41421356237", tolerance=1e-9).passed
    assert not _check("EQUIV", "quantity", "sqrt(2)", "1.41421356237", tolerance=1e-15).passed
    assert _check("EQUIV", "expression", "sin(x)**2 + cos(x)**2", "1").passed


@pytest.mark.parametrize("bad", ["__import__('os').system('true')", "x.__class__", "9^9^9", "x**99999", "",
                                 "open(x)", "lambda: 1", "x = = 2", "[1, 2]"])
def test_verifier_parse_errors_are_failed_verifications(bad):
    out = _check("EQUIV", "expression", bad, "x")
    assert not out.passed and out.reason == "parse_error"
    with pytest.raises(ParseError):
        parse_math(bad) if "=" not in bad else answers_equivalent("expression", bad, "expression", "x")


def test_verifier_bad_payloads_never_raise():
    assert get("sympy_equivalence")(_row("EQUIV", {"kind": "expression"})).reason == "payload_missing_key"
    assert _check("EQUIV", "bogus", "x", "x").reason == "parse_error"
    assert _check("EQUIV", "expression", "x", "x", tolerance="lots").reason == "bad_tolerance"
    assert _check("EQUIV", "equation", "x", "x").reason == "parse_error"


# ---------------------------------------------------------------- operators

# (template, operator) pairs where the answer must change for every parameter choice
ALWAYS_CHANGES = [
    (t.id, "variable_rename") for t in M.load_curated().templates if "variable_rename" in t.operators
] + [
    ("derivative_polynomial", "exponent_change"), ("integral_polynomial", "exponent_change"),
    ("percent_of", "unit_change"), ("speed_distance", "unit_change"), ("rectangle_area", "unit_change"),
    ("convert_length", "unit_change"), ("convert_time", "unit_change"), ("percent_change", "operator_swap"),
    ("derivative_polynomial", "operator_swap"), ("integral_polynomial", "sign_flip"),
    ("linear_one_side", "operator_swap"), ("percent_of", "operand_change"),
]


def _problem(tid: str, seed: int):
    tpl = M.load_curated().template(tid)
    prob = M.sample_problem(tpl, stable_rng("test", tid, seed))
    assume(prob is not None)
    return tpl, prob


@pytest.mark.parametrize("tid,op", ALWAYS_CHANGES)
@SETTINGS
@given(seed=st.integers(0, 10**6))
def test_operator_always_changes_answer(tid, op, seed):
    tpl, prob = _problem(tid, seed)
    res = M.perturb(prob, op, stable_rng("op", seed))
    assert not isinstance(res, str), res
    variant, params, ans = res
    base = M.compute(tpl, prob, tpl.task)
    same, _ = answers_equivalent(base.kind, base.form, ans.kind, ans.form, 1e-9, base.unit, ans.unit)
    assert not same and base.display != ans.display
    form = M.forms(tpl, "surface")[0]
    assert M.render(tpl, prob, form.text, "explicit") != M.render(tpl, variant, form.text, "explicit")
    assert params


ALL_PAIRS = [(t.id, op) for t in M.load_curated().templates for op in t.operators]


@pytest.mark.parametrize("tid,op", ALL_PAIRS)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_operator_result_is_a_verified_adversarial_or_a_counted_drop(tid, op, seed):
    tpl, prob = _problem(tid, seed)
    res = M.perturb(prob, op, stable_rng("op", seed))
    if isinstance(res, str):  # a counted drop
        assert res.startswith(f"{op}:")
    assume(not isinstance(res, str))
    variant, params, ans = res
    base = M.compute(tpl, prob, tpl.task)
    form = M.forms(tpl, "surface")[0]
    row = _row("ADVERSARIAL", answer_payload(base, ans), base.display, ans.display)
    assert verify(row).passed
    assert M.render(tpl, prob, form.text, "explicit") != M.render(tpl, variant, form.text, "explicit")


def test_symmetric_coefficient_swap_is_dropped_with_a_reason():
    cur = M.load_curated()
    rect = cur.template("rectangle_area")
    prob = next(p for i in range(50) if (p := M.sample_problem(rect, stable_rng("sym", i))) is not None)
    # rectangle_area declares no coefficient_swap (length and width enter the area symmetrically)
    assert M.perturb(prob, "coefficient_swap", stable_rng("x")) == "coefficient_swap:not_applicable"
    expand = cur.template("expand_product")
    prob = M.Problem("expand_product", (("a", Fraction(2)), ("b", Fraction(5)), ("k", Fraction(1)),
                                        ("v", "x")))
    assert M.compute(expand, prob, expand.task).display == "x**2 + 7*x + 10"
    assert M.perturb(prob, "coefficient_swap", stable_rng("x")) == "coefficient_swap:answer_unchanged"


def test_every_operator_is_used_and_recorded():
    adv = [c for c in _cands() if c.label == "ADVERSARIAL"]
    assert {c.provenance.operator for c in adv} == set(M.OPERATORS)
    for c in adv:
        assert c.construction_method == "adversarial_perturbation" and c.source == "curated"
        assert c.provenance.operator in M.OPERATORS and c.provenance.operator_params
        assert c.provenance.generator == "math.adversarial_perturbation"
    assert set(M.SPEC.operators) == set(M.OPERATORS)


# ---------------------------------------------------------------- rendering and answers


@pytest.mark.parametrize("tid", [t.id for t in M.load_curated().templates if t.math])
def test_every_math_style_parses_to_the_same_expression(tid):
    tpl = M.load_curated().template(tid)
    for i in range(3):
        prob = M.sample_problem(tpl, stable_rng("styles", tid, i))
        if prob is None:
            continue
        for name in tpl.math:
            canonical = M.math_text(tpl, prob, name)
            want = [parse_math(side) for side in canonical.split("=")]
            for style in M.STYLES:
                got = [parse_math(side) for side in M.style_math(canonical, style).split("=")]
                assert got == want, (tid, name, style)


def test_answers_are_computed_and_name_the_variable():
    cur = M.load_curated()
    lin = cur.template("linear_one_side")
    prob = M.Problem("linear_one_side", (("a", Fraction(3)), ("b", Fraction(4)), ("c", Fraction(19)),
                                         ("sol", Fraction(5)), ("v", "x")))
    assert M.render(lin, prob, lin.surfaces[0], "implicit") == "Solve for x: 3x + 4 = 19"
    assert M.compute(lin, prob, lin.task).display == "x = 5"
    assert M.compute(lin, prob.with_(v="a"), lin.task).display == "a = 5"
    der = cur.template("derivative_polynomial")
    prob = M.Problem("derivative_polynomial", (("a", Fraction(1)), ("b", Fraction(3)), ("c", Fraction(1)),
                                               ("fn", 0), ("n", Fraction(2)), ("v", "x")))
    assert M.compute(der, prob, der.task).display == "f'(x) = 2*x + 3"
    speed = cur.template("speed_distance")
    prob = M.Problem("speed_distance", (("dist", Fraction(150)), ("hours", Fraction(5, 2)),
                                        ("speed", Fraction(60)), ("unit", 0), ("veh", 0)))
    assert M.compute(speed, prob, speed.task).display == "150 km"


def test_bad_template_is_a_one_line_input_error():
    with pytest.raises(InputError, match=r"math\.yaml:template t1: unknown operator teleport"):
        parse_template({"id": "t1", "subcategory": "s", "topic": "t", "params": {"a": {"int": [1, 2]}},
                     "task": {"type": "quantity", "formula": "{a}"}, "surfaces": ["{a}", "a {a}"],
                     "paraphrases": ["p {a}"], "operators": {"teleport": ["a"]}}, 0)


# ---------------------------------------------------------------- candidates, families, quota


def test_policy_never_forces_a_miss_and_binary_labels_follow_labels():
    for c in _cands():
        assert M.SPEC.policy(c) is None
        assert c.verification_method == "sympy_equivalence"
        assert c.binary_label == ("HIT" if c.label in ("EQUIV", "PARA_SAFE") else "MISS")


def test_family_limits_and_fresh_unrelated_texts():
    cands = _cands()
    uses = Counter(normalize_text(q) for c in cands for q in (c.query_a, c.query_b))
    assert max(uses.values()) <= 3
    parent: dict[str, str] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for c in cands:
        parent[find(normalize_text(c.query_a))] = find(normalize_text(c.query_b))
    groups = Counter(find(normalize_text(c.query_a)) for c in cands)
    assert max(groups.values()) <= 6
    for c in cands:
        assert c.query_a != c.query_b
        if c.label == "UNRELATED":
            assert uses[normalize_text(c.query_a)] == 1 and uses[normalize_text(c.query_b)] == 1
    assert len({c.pair_signature() for c in cands}) == len(cands)


def test_admit_keeps_family_limits_and_counts_each_refusal_by_reason():
    def pair(label: str, a: str, b: str) -> Candidate:
        return _row(label, {}).with_(query_a=a, query_b=b)

    kept_pairs = [("t1", "t2"), ("t1", "t3"), ("t1", "t4"), ("t2", "t6"), ("t3", "t7"), ("t4", "t8")]
    cands = [pair("EQUIV", "Solve x", "solve x?"),          # one text after normalisation
             *[pair("EQUIV", a, b) for a, b in kept_pairs[:3]],
             pair("PARA_SAFE", "T2", "t1"),                 # the pair (t1, t2) again
             pair("ADVERSARIAL", "t1", "t5"),               # t1 a fourth time
             *[pair("EQUIV", a, b) for a, b in kept_pairs[3:]],
             pair("RELATED_UNSAFE", "t6", "t9")]            # a seventh candidate in the group
    drops: Counter = Counter()
    kept = admit(FamilyGuard(), cands, drops)
    assert [(c.query_a, c.query_b) for c in kept] == kept_pairs
    assert drops == Counter({"EQUIV:identical_queries": 1, "PARA_SAFE:duplicate_pair": 1,
                             "ADVERSARIAL:family_limit": 1, "RELATED_UNSAFE:family_limit": 1})


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_quota_met_with_margin(profile):
    need = _need(profile)
    start = time.perf_counter()
    rep = generate_verified("math", need, profile=profile)
    elapsed = time.perf_counter() - start
    for lab in LABELS:
        want = pymath.ceil(1.1 * max(_need("v1.1")[lab], 40))
        assert len(rep.kept[lab]) >= max(need[lab], want), (lab, len(rep.kept[lab]))
        assert len({c.subcategory for c in rep.kept[lab]}) >= 8
    assert not any(r.endswith("parse_error") or "verifier_error" in r for r in rep.drops)
    assert elapsed < 60  # seconds, not minutes (about 5 s on the dev box)


def test_generation_is_deterministic_across_hash_seeds():
    code = ("import hashlib; from domains.base import GenContext, canonical_json; from domains import math as M; "
            "from pipeline.core.config import load_profile; need = dict(load_profile('v1.1').matrix['math']); "
            "c, _ = M.build(GenContext('math', 'v1.1', need)); "
            "print(hashlib.sha256(canonical_json([[x.key, x.expected_answer_a, x.expected_answer_b, "
            "dict(x.verification_payload), x.provenance.to_dict()] for x in c]).encode()).hexdigest())")
    digests = set()
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True,
                             text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1
