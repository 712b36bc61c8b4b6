"""The vCache-style reference (pipeline/references/vcache.py): the sigmoid fit, the confidence bound,
the store/lookup/feedback/evict behaviour, and that it keeps its declared δ on a synthetic stream
where similarity predicts correctness (vectors from an encoder stand-in: no model is loaded)."""
from __future__ import annotations

import math

import pytest

from pipeline.harness.stateful import Request, marker
from pipeline.harness.stream import StreamConfig, run_stream
from pipeline.references import REFERENCES
from pipeline.references.vcache import VCacheStore, correct_lower_bound, eps_grid, fit_sigmoid
from stream_doubles import encoder_of, similarity_rows

np = pytest.importorskip("numpy")


def test_fit_recovers_a_sigmoid_and_its_uncertainty_shrinks():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.5, 1.0, 20_000)
    y = rng.random(20_000) < 1.0 / (1.0 + np.exp(-40.0 * (s - 0.8)))
    fit = fit_sigmoid(s, y)
    assert fit.t == pytest.approx(0.8, abs=0.005) and fit.gamma == pytest.approx(40.0, rel=0.1)
    small = fit_sigmoid(s[:200], y[:200])
    assert small.se_t > fit.se_t > 0
    assert fit_sigmoid([], []) is None
    assert fit_sigmoid([0.9, 0.95, 0.99], [True, False, False]) is None      # correctness falls with similarity


def test_the_bound_needs_confidence_as_well_as_a_high_estimate():
    grid = eps_grid(0.05)
    assert all(eps < 0.05 for eps, _ in grid) and len(grid) == 19
    assert correct_lower_bound(0.99, None, grid) == 0.0
    sure = fit_sigmoid(*_separated(2000))
    unsure = fit_sigmoid(*_separated(12))
    assert correct_lower_bound(0.99, sure, grid) >= 0.95 > correct_lower_bound(0.99, unsure, grid)
    # monotone in the similarity
    values = [correct_lower_bound(x, sure, grid) for x in (0.7, 0.8, 0.9, 0.95, 0.99)]
    assert values == sorted(values)


def _separated(n: int):
    rng = np.random.default_rng(n)
    s = rng.uniform(0.5, 1.0, n)
    return s, s > 0.8 + rng.normal(0, 0.01, n)


def test_store_lookup_feedback_evict_and_the_paper_s_no_store_after_a_right_exploration():
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([0.96, 0.28]), "c": np.array([0.0, 1.0])}
    cache = VCacheStore(delta=0.05, embeddings="model", encoder=encoder_of(vectors))
    ra, rb, rc = Request("a"), Request("b"), Request("c")
    assert cache.error_bound == 0.05
    assert cache.lookup(ra) is None and cache.last_candidate is None       # empty: nothing to explore
    cache.store(ra, marker(ra))
    assert cache.lookup(rb) is None and cache.last_candidate == marker(ra)  # no observations yet: explores
    assert 0.0 <= cache.last_confidence < 0.95
    cache.feedback(rb, marker(ra), True)
    cache.store(rb, marker(rb))                                             # explored and right: not stored
    assert cache._n == 1 and cache._entries[0].sims == [pytest.approx(0.96)]
    cache.feedback(rc, marker(ra), False)                                   # not the last lookup: ignored
    assert cache._entries[0].correct == [True]
    cache.lookup(rc)
    cache.feedback(rc, marker(ra), False)
    cache.store(rc, marker(rc))                                             # explored and wrong: a new entry
    assert cache._n == 2 and cache._entries[0].correct == [True, False]
    cache.evict(ra)
    assert cache.lookup(rb) is None and cache.last_candidate == marker(rc)  # only c is left
    cache.reset()
    assert cache.lookup(ra) is None and cache.last_candidate is None


@pytest.mark.parametrize("scope", ["entry", "global"])
@pytest.mark.parametrize("delta", [0.02, 0.05])
def test_it_keeps_delta_where_similarity_predicts_correctness(scope, delta):
    rows, vectors = similarity_rows()
    cache = VCacheStore(delta=delta, scope=scope, embeddings="model", encoder=encoder_of(vectors))
    report = run_stream(cache, rows, StreamConfig(gap=20, orders=2))
    o, b = report["overall"], report["bound"]
    assert report["protocol"]["feedback"] and b["delta"] == delta
    assert o["served"] > 0.05 * o["lookups"]                # it learns to serve ...
    for order in b["per_order"]:
        assert order["error_rate"] <= delta                  # ... and keeps its promise in every order
    assert b["verdict"] in ("holds", "not shown")


def test_a_static_threshold_does_not_keep_the_same_promise_there():
    # the same stream through a fixed cosine threshold below the rows' 0.85 boundary: wrong hits
    rows, vectors = similarity_rows()

    class Threshold:
        def __init__(self):
            self.reset()

        def reset(self):
            self.entries = []

        def store(self, request, response):
            self.entries.append((vectors[request.query], response))

        def lookup(self, request):
            if not self.entries:
                return None
            v = vectors[request.query]
            s, response = max((float(v @ e), r) for e, r in self.entries)
            return response if s >= 0.8 else None

    report = run_stream(Threshold(), rows, StreamConfig(gap=20, orders=1))
    assert report["overall"]["error_rate"] > 0.05


def test_registered_names_build_the_right_cache(tmp_path):
    for delta in (0.01, 0.02, 0.05):
        spec = REFERENCES[f"vcache-minilm@delta={delta:g}"]
        assert spec.kind == "store/lookup" and spec.params == {"embedder": "minilm_l6", "delta": delta,
                                                                 "scope": "entry"}
        assert REFERENCES[f"vcache-global-minilm@delta={delta:g}"].params["scope"] == "global"
    cache = REFERENCES["vcache-minilm@delta=0.02"].build(tmp_path / "unused.jsonl")
    assert isinstance(cache, VCacheStore) and cache.error_bound == 0.02 and cache.scope == "entry"
    assert math.isclose(cache.settings["delta"], 0.02)
