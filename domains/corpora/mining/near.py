"""Candidate pairs without an all-pairs loop: MinHash/LSH for lexical near-duplicates, a usearch
HNSW index over MiniLM vectors for paraphrases.

Lexical (datasketch, a maintained MinHash/LSH library): each text's set of word 1- and 2-shingles
(rules.tokens) gets a MinHash of NUM_PERM permutations (datasketch's fixed seed 1 and SHA-1 of the
shingle, so signatures are the same on every machine and run); an MinHashLSH index at Jaccard
LSH_THRESHOLD returns, per text, the texts sharing a band; the LSH_NEIGHBOURS with the highest
estimated Jaccard (ties by index) are kept. One substituted token in a 10-token prompt keeps
Jaccard 16/22 = 0.73 over these shingles. Near-linear: every text is hashed and queried once;
a bucket's size bounds a query.

Semantic: MiniLM vectors through the content-addressed embedding cache (pipeline.services.embed_cache:
batches of a fixed shape, so a vector never depends on which other texts were embedded with it or
on whether it came from the cache), one usearch index with fixed parameters and single-threaded
insertion, neighbours post-sorted, cosines rounded to 4 decimals before the threshold: the same
texts give the same pairs, cold or warm.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from domains.corpora.mining.rules import tokens

EMBEDDER = "minilm_l6"
# Parameters are part of the output: changing any of them changes which pairs are found.
NEIGHBOURS = 8
MIN_COSINE = 0.80
HNSW = {"connectivity": 16, "expansion_add": 128, "expansion_search": 64}
NUM_PERM = 128
LSH_THRESHOLD = 0.6
LSH_NEIGHBOURS = 8
SCHEME = "affine32"  # datasketch 2's MinHash scheme (32-bit hash values)


def shingles(text: str) -> list[bytes]:
    """The text's word 1- and 2-shingles, UTF-8 encoded, sorted."""
    toks = tokens(text)
    return sorted({t.encode("utf-8") for t in toks} | {f"{a} {b}".encode("utf-8") for a, b in zip(toks, toks[1:])})


def signatures(texts: Sequence[str]) -> np.ndarray:
    """MinHash signatures (len(texts) x NUM_PERM, datasketch's SCHEME hash values) of the texts' shingle sets."""
    from datasketch import MinHash

    out = np.empty((len(texts), NUM_PERM), dtype=np.uint32)
    for i, mh in enumerate(MinHash.bulk([shingles(t) for t in texts], num_perm=NUM_PERM)):
        out[i] = mh.hashvalues
    return out


def lsh_pairs(sigs: np.ndarray, k: int = LSH_NEIGHBOURS, threshold: float = LSH_THRESHOLD) -> list[tuple[int, int]]:
    """Index pairs (i < j), sorted: for each signature, up to k others sharing an LSH band with the
    highest estimated Jaccard (at least `threshold`)."""
    from datasketch import LeanMinHash, MinHashLSH

    n = len(sigs)
    if n < 2:
        return []
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    hashes = [LeanMinHash(seed=1, hashvalues=sigs[i], scheme=SCHEME) for i in range(n)]
    with lsh.insertion_session() as session:
        for i, h in enumerate(hashes):
            session.insert(i, h, check_duplication=False)
    pairs = set()
    for i, h in enumerate(hashes):
        found = [j for j in lsh.query(h) if j != i]
        if not found:
            continue
        est = (sigs[found] == sigs[i]).mean(axis=1)
        ranked = sorted(zip((-np.round(est, 4)).tolist(), found))
        for neg, j in ranked[:k]:
            if -neg >= threshold:
                pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)


def default_cache_dir() -> Path:
    """The cache root (pipeline.core.settings): $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."""
    from pipeline.core import settings

    return settings.cache_root()


def embed(texts: list[str], cache_dir: Path | None = None) -> Any:
    """MiniLM vectors (L2-normalised float32) for `texts`, through the content-addressed cache."""
    from pipeline.core import settings
    from pipeline.services.embed_cache import EmbeddingCache, embed_texts
    from pipeline.services.embedders import load_embedders_config

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    spec = load_embedders_config().specs[EMBEDDER]
    cache = EmbeddingCache(settings.embeddings_db(cache_dir))
    try:
        vecs, _ = embed_texts(spec, texts, cache, cache_dir)
    finally:
        cache.close()
    return np.asarray(vecs, dtype=np.float32)


def neighbour_pairs(vecs: Any, k: int = NEIGHBOURS, min_cosine: float = MIN_COSINE) -> list[tuple[int, int]]:
    """Index pairs (i < j) among each vector's k approximate nearest neighbours with cosine >=
    min_cosine, sorted. usearch HNSW, fixed parameters, one thread, so the graph is reproducible."""
    from usearch.index import Index

    n = len(vecs)
    if n < 2:
        return []
    index = Index(ndim=int(vecs.shape[1]), metric="cos", dtype="f32", **HNSW)
    index.add(np.arange(n, dtype=np.uint64), np.ascontiguousarray(vecs, dtype=np.float32), threads=1)
    found = index.search(np.ascontiguousarray(vecs, dtype=np.float32), min(k + 1, n), threads=1)
    pairs = set()
    for i in range(n):
        for key, dist in zip(found.keys[i][:found.counts[i]], found.distances[i][:found.counts[i]]):
            j = int(key)
            # Rounded, so a last-bit difference between machines cannot move a pair across the threshold.
            if j != i and round(1.0 - float(dist), 4) >= min_cosine:
                pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)
