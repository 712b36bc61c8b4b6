"""Content-addressed embedding cache.

Key = sha256 of canonical JSON of (schema integer, sha256 of the model's files, text, prefix,
pooling, normalisation). A changed model has a different file hash, so it can never reuse old
vectors. An entry whose blob does not decode to a vector of the stored dimension is a miss
(fail closed): the text is embedded again and the entry replaced. Batch size and threads stay out
of the key.

The file fails safe like every cache (pipeline/core/sqlite.py): a damaged embeddings.sqlite is
moved aside with a warning and the vectors are computed again; an error on a later read is a miss
for the whole request, never a partial answer.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from domains.base import stable_hash
from pipeline.core import settings
from pipeline.core.sqlite import CacheDB
from pipeline.stages.embedders import EmbedderSpec, load_encoder, weights_sha256

# 2: vectors are computed one text per call (batch-invariant); schema-1 vectors came from padded
# batches and are never reused.
SCHEMA = 2
DDL = ("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL)",)
PROBES = ("SELECT key, dim, vec FROM embeddings LIMIT 0",)  # schema check: the columns read here exist


def embedding_key(weights: str, text: str, spec: EmbedderSpec) -> str:
    return stable_hash(SCHEMA, weights, text, spec.prefix, spec.pooling, spec.normalize)


class EmbeddingCache:
    """Vectors by key in one SQLite file (default: embeddings.sqlite under the cache root)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else settings.embeddings_db()
        self.store = CacheDB(self.path, DDL, what="embedding cache", probes=PROBES)
        self.hits = 0
        self.misses = 0

    @property
    def db(self):
        """The current connection (it changes if a damaged file is replaced)."""
        return self.store.conn

    def get_many(self, keys: list[str]) -> dict:
        """{key: vector} for the keys found intact; {} when the file cannot be read."""
        import numpy as np

        def read(db) -> dict:
            found = {}
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                q = f"SELECT key, dim, vec FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})"
                for key, dim, blob in db.execute(q, chunk):
                    if isinstance(dim, int) and dim > 0 and isinstance(blob, bytes) and len(blob) == 4 * dim:
                        vec = np.frombuffer(blob, dtype=np.float32)
                        if np.isfinite(vec).all():
                            found[key] = vec
            return found
        return self.store.run(read, {})

    def put_many(self, items: list[tuple[str, object]]) -> None:
        """Store vectors; a write that fails is skipped (the vectors are simply computed next time)."""
        import numpy as np

        rows = []
        for key, vec in items:
            v = np.ascontiguousarray(vec, dtype=np.float32)
            rows.append((key, int(v.shape[0]), v.tobytes()))

        def write(db) -> None:
            db.executemany("INSERT OR REPLACE INTO embeddings (key, dim, vec) VALUES (?, ?, ?)", rows)
            db.commit()
        self.store.run(write, None)

    def close(self) -> None:
        self.store.close()


def embed_texts(spec: EmbedderSpec, texts: list[str], cache: EmbeddingCache, cache_dir: Path,
                loader: Callable[[EmbedderSpec, Path], Callable] = load_encoder):
    """Vectors for `texts` (row-aligned), from the cache where possible. The model is loaded only
    when at least one text misses."""
    import numpy as np

    weights = weights_sha256(spec)
    keys = [embedding_key(weights, t, spec) for t in texts]
    found = cache.get_many(sorted(set(keys)))
    missing = sorted({t for t, k in zip(texts, keys) if k not in found})
    cache.hits += len(texts) - sum(1 for k in keys if k not in found)
    if missing:
        cache.misses += len(missing)
        encode = loader(spec, cache_dir)
        vecs = encode(missing)
        new = [(embedding_key(weights, t, spec), vecs[i]) for i, t in enumerate(missing)]
        cache.put_many(new)
        found.update({k: np.asarray(v, dtype=np.float32) for k, v in new})
    return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 1), dtype=np.float32), weights
