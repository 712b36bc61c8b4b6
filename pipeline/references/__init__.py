"""Reference caches: real caches people run, scored by name (`cacheeval eval --reference NAME`).

Each entry names a builder `module:function` that is imported only when the reference is built,
so this package stays standard library at import (the harness test imports every module of
pipeline/harness in a fresh interpreter and checks that no heavy library came). A builder is called
as `build(bench_path, **params)` and returns either a pair cache (`Pair -> Verdict`: it sees the
two requests only, pipeline.harness.interface) or a
store/lookup cache (pipeline.harness.stateful), which the harness runs under a protocol.

- gptcache-*: the real GPTCache 0.1.44 (its SQLite cache base, faiss vector base,
  SearchDistanceEvaluation, Config(similarity_threshold) and default pre-processing), with an
  embedder of configs/embedders.yaml; a store/lookup cache (gptcache_store.py).
- verified: the reference verified cache (verified.py), a pair cache trained on the train split.
- vcache-*: an online cache with a declared error bound δ after vCache (vcache.py), written from the
  paper's description; a store/lookup cache that learns from the stream protocol's feedback.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pipeline.core.errors import CacheEvalError
from pipeline.core.registry import Registry
from pipeline.harness.sweep import SWEEP_THRESHOLDS

PAIR_KIND = "pair"
STORE_KIND = "store/lookup"
# The threshold grid of the MiniLM sweep: GPTCache's rule at Config(similarity_threshold=t) is
# confidence >= t, so one run at any threshold gives every point.


class ReferenceUnavailable(CacheEvalError):
    """A registered reference cannot be built here (its module or a library it needs is missing)."""


@dataclass(frozen=True)
class ReferenceSpec:
    """A registered reference cache: what it is, and how to build it (lazily)."""

    name: str
    summary: str
    target: str                            # "module:function", imported by build()
    kind: str                              # PAIR_KIND or STORE_KIND
    params: Mapping[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] = ()         # top-level modules it needs, checked without importing
    sweep: tuple[float, ...] = ()          # thresholds of a confidence sweep to add to its report

    def missing(self) -> str | None:
        """Why it cannot be built here (one phrase), or None when everything it needs is installed."""
        module = self.target.partition(":")[0]
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"its module {module} is not in this checkout"
        absent = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if absent:
            return f"{', '.join(absent)} not installed"
        return None

    def build(self, bench_path: Path, **extra: Any) -> Any:
        """Import the builder and call it with the benchmark path, the entry's parameters and `extra`
        (e.g. the verified cache's `train` file)."""
        fix = "Install the pinned requirements (bash .ci/install), or choose another (cacheeval references)"
        why = self.missing()
        if why:
            raise ReferenceUnavailable(f"--reference {self.name}: cannot be built here ({why}). {fix}")
        module, _, func = self.target.partition(":")
        try:
            builder = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise ReferenceUnavailable(f"--reference {self.name}: loading {self.target} failed "
                                       f"({type(exc).__name__}: {first}). {fix}") from None
        return builder(Path(bench_path), **dict(self.params), **extra)


REFERENCES: Registry[ReferenceSpec] = Registry("reference")

_GPTCACHE = "pipeline.references.gptcache_store:build"
_NEEDS = ("gptcache", "faiss", "sqlalchemy", "sentence_transformers")
_RULE = "hit when its similarity rank 4 - L2² >= 4 x threshold (cosine >= 2 x threshold - 1)"

for _name, _summary, _params, _sweep in (
    ("gptcache-minilm@0.80", f"GPTCache 0.1.44, all-MiniLM-L6-v2, similarity_threshold 0.80 (its realistic "
                             f"default); {_RULE}", {"embedder": "minilm_l6", "threshold": 0.80}, ()),
    ("gptcache-minilm@0.85", "GPTCache 0.1.44, all-MiniLM-L6-v2, similarity_threshold 0.85",
     {"embedder": "minilm_l6", "threshold": 0.85}, ()),
    ("gptcache-mpnet@0.80", "GPTCache 0.1.44, all-mpnet-base-v2, similarity_threshold 0.80 (a better embedder, "
                            "the same rule)", {"embedder": "mpnet_base", "threshold": 0.80}, ()),
    ("gptcache-minilm-sweep", "GPTCache 0.1.44, all-MiniLM-L6-v2: decisions at 0.80 plus a sweep of "
                              "similarity_threshold 0.50-0.99 from the confidence GPTCache computes",
     {"embedder": "minilm_l6", "threshold": 0.80}, SWEEP_THRESHOLDS),
):
    REFERENCES.register(_name, ReferenceSpec(_name, _summary, _GPTCACHE, STORE_KIND, _params, _NEEDS, _sweep))

REFERENCES.register("verified", ReferenceSpec(
    "verified", "the reference verified cache: MiniLM recall gate, structured and lexical features, "
                "gradient-boosted verifier trained on the train split, threshold for FHR <= 5% on dev",
    "pipeline.references.verified:build", PAIR_KIND, {}, ("sklearn", "sentence_transformers")))

_VCACHE = "pipeline.references.vcache:build"
DELTAS = (0.01, 0.02, 0.05)  # the error bounds δ registered for the vCache-style reference
for _delta in DELTAS:
    for _scope, _prefix, _what in (("entry", "vcache-minilm", "per-entry sigmoids, as the paper"),
                                   ("global", "vcache-global-minilm", "one pooled sigmoid (our variant)")):
        _name = f"{_prefix}@delta={_delta:g}"
        REFERENCES.register(_name, ReferenceSpec(
            _name, f"online cache after vCache, all-MiniLM-L6-v2, error bound {_delta:g} on served hits, {_what}; "
                   "learns from feedback, so run it --protocol stream",
            _VCACHE, STORE_KIND, {"embedder": "minilm_l6", "delta": _delta, "scope": _scope}, ("numpy",)))


def get_reference(name: str) -> ReferenceSpec:
    """The reference registered under `name`; an unknown name suggests close ones and lists all."""
    return REFERENCES[name]
