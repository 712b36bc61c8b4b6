"""The real GPTCache 0.1.44 as a store/lookup cache (pipeline.harness.stateful), built from its own
parts: not a re-implementation of its rule.

- data manager: `get_data_manager(CacheBase("sqlite", sql_url="sqlite:///:memory:"),
  VectorBase("faiss", dimension=d))`, a fresh one on every `reset()`;
- similarity: `SearchDistanceEvaluation()` with its defaults (max_distance 4, distance = faiss's
  squared L2 between the L2-normalised vectors GPTCache stores), decided by GPTCache's adapter as
  `rank >= (max - min) x Config(similarity_threshold=t).similarity_threshold`;
- pre-processing: `Cache.init`'s default, `last_content`: the request goes in as chat messages
  (system prompt, earlier turns, the query) and GPTCache keeps only the last message's content,
  which is why such a cache leaks answers across users and conversations;
- embedding_func: an embedder of configs/embedders.yaml, loaded offline by
  pipeline.services.embedders (a vector independent of its batch-mates, L2-normalised float32). With `embeddings="cache"`
  (the default) vectors come through the project's content-addressed embedding cache
  (pipeline.services.embed_cache: the same bytes the model gives, keyed on the weights' sha256), so
  the lookup latency is GPTCache's own work plus a cache read; `embeddings="model"` runs the model
  on every request, as in production (benchmarks/references.py measures both).

The adapter only observes: `last_confidence` is the score GPTCache's own evaluation gave the
nearest entry, divided by its range (so GPTCache hits at threshold t exactly when the confidence
is >= t, which makes one run a whole threshold sweep).

gptcache, faiss, numpy and the embedder load inside functions: importing this module is standard
library only, like the rest of the harness.
"""
from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from pipeline.core.errors import InputError
from pipeline.harness.stateful import Request
from pipeline.references.model_vectors import ModelVectors, embedder_identity

# GPTCache's memory eviction defaults to 1,000 entries: the shared protocol stores one entry per
# row (2,000), and it measures decisions, not eviction, so nothing may be evicted.
MAX_ENTRIES = 100_000
VERSIONS = ("gptcache", "faiss-cpu", "SQLAlchemy", "cachetools")
EMBEDDINGS = ("cache", "model")


def _observed_evaluation() -> Any:
    """GPTCache's SearchDistanceEvaluation with its defaults, remembering the last score it gave."""
    from gptcache.similarity_evaluation.distance import SearchDistanceEvaluation

    class ObservedSearchDistance(SearchDistanceEvaluation):
        """Scores exactly as its parent (the hit decision stays GPTCache's); the score is kept
        so that the harness can report GPTCache's own confidence."""

        last_score: float | None = None

        def evaluation(self, src_dict, cache_dict, **kwargs):  # noqa: ANN001 - GPTCache's signature
            score = super().evaluation(src_dict, cache_dict, **kwargs)
            self.last_score = float(score)
            return score

    return ObservedSearchDistance()


class GPTCacheStore(ModelVectors):
    """A GPTCache `Cache` behind `store`, `lookup` and `reset`, with `model_snapshot` (sha256 of
    the embedder's weights) and `settings` for the evaluation-result cache key."""

    tier = "embedding"

    def __init__(self, embedder: str = "minilm_l6", threshold: float = 0.80, *, embeddings: str = "cache",
                 cache_dir: str | Path | None = None,
                 encoder: Callable[[list[str]], Any] | None = None) -> None:
        from pipeline.services.embedders import load_embedders_config

        specs = load_embedders_config().specs
        if embedder not in specs:
            raise InputError(f"unknown embedder '{embedder}'. Available: {', '.join(sorted(specs))}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise InputError(f"similarity threshold {threshold} is outside [0, 1]. Pass a value in that range")
        if embeddings not in EMBEDDINGS:
            raise InputError(f"embeddings '{embeddings}' is unknown. Use one of: {', '.join(EMBEDDINGS)}")
        if encoder is not None and embeddings != "model":
            # a stand-in encoder must never write its vectors under the real model's cache key
            raise InputError("an encoder stand-in needs embeddings='model'. Pass embeddings='model'")
        self.embeddings = embeddings
        self.embedder = embedder
        self.threshold = float(threshold)
        self.spec = specs[embedder]
        self.cache_dir = cache_dir
        self.last_confidence: float | None = None
        self._encode = encoder
        self._cache: Any = None
        self._evaluation: Any = None
        self._dim = 0
        self._snapshot: dict | None = None
        self._vector_cache: Any = None
        self._vectors: dict[str, Any] = {}   # text -> vector, read from the embedding cache once

    # ---- identity (read by the evaluation-result cache before anything loads)

    @property
    def model_snapshot(self) -> dict:
        """The embedder's upstream name and the sha256 of its weight files (hashed, not loaded)."""
        if self._snapshot is None:
            from pipeline.services.embedders import weights_sha256

            self._snapshot = {"embedder": self.embedder, "upstream": self.spec.upstream,
                              "sha256": weights_sha256(self.spec)}
        return self._snapshot

    @property
    def settings(self) -> dict:
        """Everything else that can change a decision: the threshold and GPTCache's parts and versions."""
        return {
            "similarity_threshold": self.threshold,
            "similarity_evaluation": "SearchDistanceEvaluation(max_distance=4.0, positive=False)",
            "data_manager": "sqlite:///:memory: + faiss IDMap,Flat L2, top_k 1",
            "max_entries": MAX_ENTRIES,
            "pre_embedding_func": "last_content (Cache.init default)",
            "embeddings": self.embeddings,
            "versions": {name: importlib.metadata.version(name) for name in VERSIONS},
            # how the vectors are computed (batch-invariant, normalised) is code outside the harness
            **embedder_identity(self.spec),
        }

    # ---- GPTCache, built on first use

    def _embed(self, data: Any, **_: Any) -> Any:
        if self._vector_cache is None:
            return self._encode([data])[0]
        if data not in self._vectors:
            self._fetch([data])
        return self._vectors[data]

    def prefetch(self, texts: Sequence[str]) -> None:
        """Embed `texts` now, in one call to the embedding cache (the same vectors as one at a time:
        each text is embedded on its own), so that GPTCache's embedding_func only reads them. A call
        per text re-checked the model's files every time: 40% of a stream's time."""
        self._ensure()
        if self._vector_cache is not None:
            self._fetch(texts)

    def _fetch(self, texts: Sequence[str]) -> None:
        from pipeline.services.embed_cache import embed_texts

        todo = sorted({t for t in texts if t not in self._vectors})
        if todo:
            vecs, _ = embed_texts(self.spec, todo, self._vector_cache, self._root(), loader=self._loader)
            self._vectors.update(zip(todo, vecs))

    def _new_data_manager(self) -> Any:
        import faiss
        from gptcache.manager import CacheBase, VectorBase, get_data_manager

        # A search over a handful of vectors gains nothing from OpenMP, and on a busy machine its
        # threads' hand-off cost ~25 ms per lookup (measured); one thread gives the same distances.
        faiss.omp_set_num_threads(1)

        # GPTCache's faiss store loads index_path at start when it is a file and writes it at exit
        # and every few saves: os.devnull is never a file, so each index starts empty and no stale
        # index from a working directory can leak in.
        return get_data_manager(CacheBase("sqlite", sql_url="sqlite:///:memory:"),
                                VectorBase("faiss", dimension=self._dim, index_path=os.devnull),
                                max_size=MAX_ENTRIES)

    def _ensure(self) -> Any:
        if self._cache is not None:
            return self._cache
        from gptcache import Cache, Config

        if self.embeddings == "cache":
            from pipeline.core import settings
            from pipeline.services.embed_cache import EmbeddingCache

            self._vector_cache = EmbeddingCache(settings.embeddings_db(self._root()))
        else:
            self._loader(self.spec, self._root())
        self._dim = int(len(self._embed("dimension")))
        self._evaluation = _observed_evaluation()
        cache = Cache()
        # pre_embedding_func is left to Cache.init's default (last_content) on purpose.
        cache.init(embedding_func=self._embed, data_manager=self._new_data_manager(),
                   similarity_evaluation=self._evaluation,
                   config=Config(similarity_threshold=self.threshold))
        self._cache = cache
        return cache

    def embed(self, text: str) -> Any:
        """The vector GPTCache's embedding_func returns for `text`."""
        self._ensure()
        return self._embed(text)

    @property
    def cache(self) -> Any:
        """The gptcache.Cache object (built on first access)."""
        return self._ensure()

    @property
    def data_manager(self) -> Any:
        """GPTCache's data manager holding the current entries."""
        return self._ensure().data_manager

    # ---- the store/lookup interface

    def reset(self) -> None:
        """Forget every entry, through GPTCache's own eviction path: the live ids are marked deleted
        in the SQLite cache base (`EvictionManager.soft_evict`), then cleared there and removed from
        the faiss index (`EvictionManager.delete`, which rebuilds the index every few deletions as
        GPTCache does). A fresh data manager per reset gives the same decisions (tested) but costs
        about 60 ms (GPTCache declares new SQLAlchemy models each time, so no statement is ever
        compiled twice), which made the isolated protocol 8x slower. The memory eviction base keeps
        the evicted ids; it never evicts below MAX_ENTRIES, so they cannot act."""
        cache = self._ensure()
        manager = cache.data_manager
        ids = manager.s.get_ids(deleted=False)
        if ids:
            manager.eviction_manager.soft_evict(ids)
            manager.eviction_manager.delete()
        self.last_confidence = None

    def renew(self) -> None:
        """Forget every entry by replacing the data manager with a fresh one (the slow reset)."""
        cache = self._ensure()
        old = cache.data_manager
        # Swapped rather than re-initialised: each Cache.init registers another exit hook.
        cache.data_manager = self._new_data_manager()
        old.close()
        self.last_confidence = None

    def _kwargs(self, request: Request) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": request.messages(), "cache_obj": self._ensure()}
        if request.tools is not None:
            out["tools"] = request.tools  # as a chat adapter passes them; GPTCache's key ignores them
        return out

    def store(self, request: Request, response: str) -> None:
        """GPTCache's `put`: embed the request's last message and save the response under it."""
        from gptcache.adapter.api import put

        put(request.query, response, **self._kwargs(request))

    def lookup(self, request: Request) -> str | None:
        """GPTCache's `get`: the stored response GPTCache serves for this request, or None."""
        from gptcache.adapter.api import get

        kwargs = self._kwargs(request)
        self._evaluation.last_score = None
        response = get(request.query, **kwargs)
        score = self._evaluation.last_score
        low, high = self._evaluation.range()
        self.last_confidence = None if score is None else score / (high - low)
        return response


def build(bench_path: Path, embedder: str = "minilm_l6", threshold: float = 0.80,
          embeddings: str = "cache") -> GPTCacheStore:
    """The reference builder (pipeline.references): GPTCache needs no training data, so the
    benchmark path is not read."""
    return GPTCacheStore(embedder, threshold, embeddings=embeddings)
