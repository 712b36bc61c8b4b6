"""Content-addressed embedding cache.

Key = sha256 of canonical JSON of (schema integer, the model's identity (`embedders.model_identity`:
the sha256 of its files and, for a member used through an ONNX export or an unpacked zip, the
fingerprint of that checked export or folder), the runtime that runs them (`embedders.runtime_key`: ONNX Runtime or torch and their versions, one thread), text,
prefix, pooling, normalisation). A changed model or runtime has a different key, so it can never
reuse old vectors. Every entry is signed: an HMAC-SHA256 of its key and vector bytes under the
installation's secret key (pipeline.core.secret, `<cache root>/secret.key`, 0600), so a vector
written or re-signed by anyone without the key (a scored cache included) is refused. An entry whose
signature fails or whose blob does not decode to a vector of the stored dimension is a miss (fail
closed): the text is embedded again and the entry replaced. Batch size and threads stay out of the
key.

The file fails safe like every cache (pipeline/core/sqlite.py): a damaged embeddings.sqlite is
moved aside with a warning and the vectors are computed again; an error on a later read is a miss
for the whole request, never a partial answer.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from pipeline.core.hashing import stable_hash
from pipeline.core import settings
from pipeline.core.sqlite import CacheDB
from pipeline.services.embedders import EmbedderSpec, load_encoder, model_identity, runtime_key, weights_sha256

# 2: vectors are computed one text per call (batch-invariant); schema-1 vectors came from padded
# batches and are never reused. 3: the runtime is part of the key.
SCHEMA = 3
DDL = ("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL, "
       "checksum TEXT NOT NULL)",)
PROBES = ("SELECT key, dim, vec, checksum FROM embeddings LIMIT 0",)  # schema check: the columns read here exist
NORM_TOLERANCE = 1e-3  # a stored normalised vector whose length is further from 1 is not one we wrote


def _signature(secret_key: bytes, key: str, blob: bytes) -> str:
    """HMAC-SHA256 over the entry's key and its vector's bytes under the installation key: a vector
    overwritten in place (zeros, a random unit vector, another entry's vector), or re-signed with a
    plain hash, no longer matches."""
    from pipeline.core.secret import sign

    return sign(secret_key, key.encode("ascii") + b"\0" + blob)


def embedding_key(identity: str, text: str, spec: EmbedderSpec, runtime: str) -> str:
    """`identity`: embedders.model_identity (for a model used as installed, the sha256 of its files)."""
    return stable_hash(SCHEMA, identity, runtime, text, spec.prefix, spec.pooling, spec.normalize)


class EmbeddingCache:
    """Vectors by key in one SQLite file (default: embeddings.sqlite under the cache root)."""

    def __init__(self, path: str | Path | None = None, secret_key: bytes | None = None) -> None:
        from pipeline.core.secret import installation_key

        self.path = Path(path) if path is not None else settings.embeddings_db()
        self.store = CacheDB(self.path, DDL, what="embedding cache", probes=PROBES)
        # the key of the cache root this file lives in (<cache root>/embeddings.sqlite)
        self.secret_key = secret_key if secret_key is not None else installation_key(self.path.parent)
        self.hits = 0
        self.misses = 0

    @property
    def db(self):
        """The current connection (it changes if a damaged file is replaced)."""
        return self.store.conn

    def get_many(self, keys: list[str], unit: bool = False) -> dict:
        """{key: vector} for the keys found intact; {} when the file cannot be read. An entry is
        intact when its signature (the checksum column) matches its key and bytes, its length is 4 * dim, every value is
        finite and (`unit`: the embedder normalises) its norm is 1. Anything else is a miss (it is
        computed again and overwritten), with one warning line per read."""
        import hmac
        import sys

        import numpy as np

        def read(db) -> dict:
            found, bad = {}, 0
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                q = f"SELECT key, dim, vec, checksum FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})"
                for key, dim, blob, check in db.execute(q, chunk):
                    ok = (isinstance(dim, int) and dim > 0 and isinstance(blob, bytes) and len(blob) == 4 * dim
                          and isinstance(check, str) and hmac.compare_digest(check, _signature(self.secret_key, key, blob)))
                    if ok:
                        vec = np.frombuffer(blob, dtype=np.float32)
                        ok = bool(np.isfinite(vec).all()) and (
                            not unit or abs(float(np.linalg.norm(vec)) - 1.0) <= NORM_TOLERANCE)
                    if ok:
                        found[key] = vec
                    else:
                        bad += 1
            if bad:
                print(f"warning: {self.path}: {bad} embedding entr{'y' if bad == 1 else 'ies'} failed "
                      "verification (signature, size, finiteness or norm); computing them again", file=sys.stderr)
            return found
        return self.store.run(read, {})

    def put_many(self, items: list[tuple[str, object]]) -> None:
        """Store vectors; a write that fails is skipped (the vectors are simply computed next time)."""
        import numpy as np

        rows = []
        for key, vec in items:
            v = np.ascontiguousarray(vec, dtype=np.float32)
            rows.append((key, int(v.shape[0]), v.tobytes(), _signature(self.secret_key, key, v.tobytes())))

        def write(db) -> None:
            db.executemany("INSERT OR REPLACE INTO embeddings (key, dim, vec, checksum) VALUES (?, ?, ?, ?)", rows)
            db.commit()
        self.store.run(write, None)

    def close(self) -> None:
        self.store.close()


def embed_texts(spec: EmbedderSpec, texts: list[str], cache: EmbeddingCache, cache_dir: Path,
                loader: Callable[[EmbedderSpec, Path], Callable] | None = None):
    """Vectors for `texts` (row-aligned), from the cache where possible, and the model's sha256.
    Misses are computed by `loader`'s encoder in this process when one is given (a model the
    caller keeps loaded), else on every core (embed_pool)."""
    vecs, weights = embed_many({spec.name: texts}, {spec.name: spec}, cache, cache_dir, loader=loader)
    return vecs[spec.name], weights[spec.name]


def embed_many(texts: Mapping[str, Sequence[str]], specs: Mapping[str, EmbedderSpec], cache: EmbeddingCache,
               cache_dir: Path, loader: Callable[[EmbedderSpec, Path], Callable] | None = None,
               progress: Callable[[str], None] | None = None, workers: int | None = None):
    """For each embedder name, the vectors of its texts (row-aligned) and its weights sha256. What
    the cache lacks is computed for all embedders at once over every core; each text once."""
    import numpy as np

    from pipeline.services import embed_pool

    keyed, found, jobs, weights, runtimes, identity = {}, {}, [], {}, {}, {}
    for name, items in texts.items():
        spec = specs[name]
        weights[name] = weights_sha256(spec)
        identity[name] = model_identity(spec, cache_dir)  # an export or unpacked zip checked (and made) first
        runtime = runtimes[name] = runtime_key(spec)
        keyed[name] = [embedding_key(identity[name], t, spec, runtime) for t in items]
        found[name] = cache.get_many(sorted(set(keyed[name])), unit=spec.normalize)
        missing = sorted({t for t, k in zip(items, keyed[name]) if k not in found[name]})
        cache.hits += len(items) - sum(1 for k in keyed[name] if k not in found[name])
        cache.misses += len(missing)
        if missing:
            jobs.append((spec, missing, runtime))

    def store(spec: EmbedderSpec, chunk: list[str], vecs) -> None:
        new = [(embedding_key(identity[spec.name], t, spec, runtimes[spec.name]), np.asarray(vecs[i], dtype=np.float32))
               for i, t in enumerate(chunk)]
        cache.put_many(new)
        found[spec.name].update(new)

    if jobs and loader is not None:
        for spec, missing, _ in jobs:
            store(spec, missing, loader(spec, cache_dir)(missing))
    elif jobs:
        bar = embed_pool.Progress({spec.name: len(m) for spec, m, _ in jobs}, log=progress)
        try:
            embed_pool.encode_all([(spec, m) for spec, m, _ in jobs], cache_dir, store, n_workers=workers, progress=bar)
        finally:
            bar.close()
    out = {name: np.stack([found[name][k] for k in keys]) if keys else np.zeros((0, 1), dtype=np.float32)
           for name, keys in keyed.items()}
    return out, weights
