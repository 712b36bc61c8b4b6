"""A cache's declared error bound, tested: exact binomial (Clopper–Pearson) bounds in the standard library.

A cache may declare `error_bound` (δ): the largest share of its served hits that may be wrong. The
stream protocol (pipeline.harness.stream) counts wrong served hits k among n served hits and
tests the declaration with the one-sided 95% Clopper–Pearson upper bound U of the error rate:

- `holds`: U <= δ. Even the largest error rate these counts leave plausible (at 95%) is within δ.
- `not shown`: the observed rate k/n <= δ < U. Nothing contradicts δ, but there are too few
  served hits to show it (a cache that never hits cannot show any bound).
- `exceeded`: k/n > δ. The cache served more wrong hits than it promised.

`--check-bound` fails unless the bound holds (U <= δ).

U is the (1 - α) quantile of Beta(k + 1, n - k) (and 1 when k = n). The quantile is found by
bisection on the regularized incomplete beta function I_x(a, b), evaluated with its continued
fraction (modified Lentz's method) on the side where it converges fast, and the symmetry
I_x(a, b) = 1 - I_{1-x}(b, a) on the other. Tested against scipy.stats.beta (tests only).
"""
from __future__ import annotations

import math
from typing import Any

CONFIDENCE = 0.95
HOLDS, NOT_SHOWN, EXCEEDED, NO_HITS = "holds", "not shown", "exceeded", "no served hits"
_TINY = 1e-300
_EPS = 1e-15


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz's method), for x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        # the even step
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        # the odd step
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"the incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"betainc needs a > 0 and b > 0, got a={a}, b={b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, got {x}")
    if x == 0.0 or x == 1.0:
        return x
    # x^a (1-x)^b / B(a, b), in logs
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


def beta_ppf(q: float, a: float, b: float) -> float:
    """The q quantile of Beta(a, b): the x in [0, 1] with I_x(a, b) = q, by bisection (to 1e-15)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile needs 0 <= q <= 1, got {q}")
    if q == 0.0:
        return 0.0
    if q == 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(200):  # I_x is increasing in x; 200 halvings reach the last bit of a double
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi) or hi - lo < 1e-16:
            break
        if betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def clopper_pearson_upper(k: int, n: int, confidence: float = CONFIDENCE) -> float | None:
    """The one-sided Clopper–Pearson upper bound of a proportion from k successes in n trials: the
    p whose Binomial(n, p) gives k or fewer with probability 1 - confidence. None when n == 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if k == n:
        return 1.0
    return beta_ppf(confidence, k + 1, n - k)


def clopper_pearson_lower(k: int, n: int, confidence: float = CONFIDENCE) -> float | None:
    """The one-sided Clopper–Pearson lower bound (0 when k == 0). None when n == 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if k == 0:
        return 0.0
    return beta_ppf(1.0 - confidence, k, n - k + 1)


def bound_test(wrong: int, served: int, delta: float | None, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The observed error rate wrong/served, its one-sided upper bound and, when a bound δ is
    declared, the verdict (see the module docstring)."""
    upper = clopper_pearson_upper(wrong, served, confidence)
    rate = wrong / served if served else None
    out: dict[str, Any] = {"wrong": wrong, "served": served, "error_rate": rate, "upper": upper,
                           "confidence": confidence, "delta": delta, "verdict": None}
    if delta is not None:
        if not served:
            out["verdict"] = NO_HITS
        elif upper is not None and upper <= delta:
            out["verdict"] = HOLDS
        elif rate is not None and rate > delta:
            out["verdict"] = EXCEEDED
        else:
            out["verdict"] = NOT_SHOWN
    return out


def declared_bound(cache: Any) -> float | None:
    """The `error_bound` a cache declares (on the instance or its class), or None. A value outside
    [0, 1] or not a number is refused (ValueError): a bound that cannot be tested is no bound."""
    value = getattr(cache, "error_bound", None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"error_bound must be a number from 0 to 1, got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ValueError(f"error_bound must be a number from 0 to 1, got {value!r}")
    return value
