"""The declared error bound's test: the regularized incomplete beta, its quantile and the exact
(Clopper–Pearson) bounds, in the standard library, against scipy (installed for the tests only) and
closed forms; the verdicts and the declaration's checks."""
from __future__ import annotations

import math

import pytest

from pipeline.harness.bound import (EXCEEDED, HOLDS, NO_HITS, NOT_SHOWN, beta_ppf, betainc, bound_test,
                                    clopper_pearson_lower, clopper_pearson_upper, declared_bound)

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("a,b,x", [(1, 1, 0.3), (0.5, 0.5, 0.2), (2, 3000, 0.001), (50, 2, 0.99), (101, 3900, 0.02),
                                   (1, 10, 1e-5), (7, 7, 0.5), (3, 0.7, 0.95), (400, 400, 0.49)])
def test_betainc_matches_scipy(a, b, x):
    assert betainc(a, b, x) == pytest.approx(scipy_stats.beta.cdf(x, a, b), rel=1e-10, abs=1e-14)


def test_betainc_closed_forms_and_ends():
    assert betainc(1, 1, 0.37) == pytest.approx(0.37, abs=1e-15)               # uniform
    assert betainc(2, 1, 0.6) == pytest.approx(0.36, abs=1e-15)                # x^a for b = 1
    assert betainc(1, 3, 0.2) == pytest.approx(1 - 0.8 ** 3, abs=1e-15)        # 1 - (1-x)^b for a = 1
    assert betainc(5, 2, 0.0) == 0.0 and betainc(5, 2, 1.0) == 1.0
    with pytest.raises(ValueError):
        betainc(0, 1, 0.5)
    with pytest.raises(ValueError):
        betainc(1, 1, 1.5)


@pytest.mark.parametrize("q,a,b", [(0.95, 1, 10), (0.95, 21, 3980), (0.05, 40, 1961), (0.5, 3, 3), (0.999, 2, 50)])
def test_beta_quantile_matches_scipy(q, a, b):
    assert beta_ppf(q, a, b) == pytest.approx(scipy_stats.beta.ppf(q, a, b), rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("k,n", [(0, 1), (0, 10), (1, 10), (5, 100), (20, 4000), (99, 100), (0, 5000), (40, 2000),
                                 (3, 3), (250, 1000)])
def test_clopper_pearson_matches_scipy(k, n):
    upper = 1.0 if k == n else scipy_stats.beta.ppf(0.95, k + 1, n - k)
    lower = 0.0 if k == 0 else scipy_stats.beta.ppf(0.05, k, n - k + 1)
    assert clopper_pearson_upper(k, n) == pytest.approx(upper, rel=1e-10, abs=1e-15)
    assert clopper_pearson_lower(k, n) == pytest.approx(lower, rel=1e-10, abs=1e-15)


def test_clopper_pearson_known_values():
    # no error in n: the upper bound solves (1 - p)^n = 0.05 (the "rule of three" is its approximation 3/n)
    for n in (10, 100, 3000):
        assert clopper_pearson_upper(0, n) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-12)
    # every trial an error: the lower bound solves p^n = 0.05
    assert clopper_pearson_lower(10, 10) == pytest.approx(0.05 ** (1 / 10), rel=1e-12)
    # a textbook value: 1 of 10, upper 0.3942
    assert round(clopper_pearson_upper(1, 10), 4) == 0.3942
    assert clopper_pearson_upper(3, 3) == 1.0 and clopper_pearson_upper(0, 0) is None
    with pytest.raises(ValueError):
        clopper_pearson_upper(5, 4)


def test_the_upper_bound_is_exact_binomial_tail():
    # P(X <= k | n, U) = 5% exactly at the upper bound
    k, n = 7, 300
    u = clopper_pearson_upper(k, n)
    tail = sum(math.comb(n, i) * u ** i * (1 - u) ** (n - i) for i in range(k + 1))
    assert tail == pytest.approx(0.05, rel=1e-9)


def test_bound_test_verdicts():
    assert bound_test(0, 600, 0.01)["verdict"] == HOLDS            # upper 0.0050 <= 0.01
    assert bound_test(0, 100, 0.01)["verdict"] == NOT_SHOWN        # upper 0.0295: too few hits to show it
    assert bound_test(5, 100, 0.01)["verdict"] == EXCEEDED         # 5% observed
    assert bound_test(0, 0, 0.01)["verdict"] == NO_HITS
    t = bound_test(3, 1000, None)
    assert t["verdict"] is None and t["error_rate"] == 0.003 and t["upper"] == pytest.approx(0.007735, abs=1e-6)


def test_declared_bound_is_checked():
    class C:
        error_bound = 0.05

    assert declared_bound(C()) == 0.05 and declared_bound(object()) is None
    for bad in (1.5, -0.1, "0.05", True, float("nan")):
        C.error_bound = bad
        with pytest.raises(ValueError):
            declared_bound(C())
