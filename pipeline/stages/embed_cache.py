"""Content-addressed embedding cache.

Key = sha256 of canonical JSON of (schema integer, sha256 of the model's files, text, prefix,
pooling, normalisation). A changed model has a different file hash, so it can never reuse old
vectors. An entry whose blob does not decode to a vector of the stored dimension is a miss
(fail closed): the text is embedded again and the entry replaced. Batch size and threads stay out
of the key.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from domains.base import stable_hash
from pipeline.stages.embedders import EmbedderSpec, load_encoder, weights_sha256
from pipeline.core.sqlite import open_wal

# 2: vectors are computed one text per call (batch-invariant); schema-1 vectors came from padded
# batches and are never reused.
SCHEMA = 2


def embedding_key(weights: str, text: str, spec: EmbedderSpec) -> str:
    return stable_hash(SCHEMA, weights, text, spec.prefix, spec.pooling, spec.normalize)


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = open_wal(path, ["CREATE TABLE IF NOT EXISTS embeddings "
                                  "(key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL)"])
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: list[str]) -> dict:
        import numpy as np

        found = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            q = f"SELECT key, dim, vec FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})"
            for key, dim, blob in self.db.execute(q, chunk):
                if dim > 0 and isinstance(blob, bytes) and len(blob) == 4 * dim:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if np.isfinite(vec).all():
                        found[key] = vec
        return found

    def put_many(self, items: list[tuple[str, object]]) -> None:
        import numpy as np

        rows = []
        for key, vec in items:
            v = np.ascontiguousarray(vec, dtype=np.float32)
            rows.append((key, int(v.shape[0]), v.tobytes()))
        self.db.executemany("INSERT OR REPLACE INTO embeddings (key, dim, vec) VALUES (?, ?, ?)", rows)
        self.db.commit()

    def close(self) -> None:
        self.db.close()


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
