"""Difficulty: cosine similarities from six embedders (content-addressed cache), per-embedder
thresholds calibrated on train, ensemble votes and held-out kappa."""

from dagster import AssetExecutionContext, MetadataValue, Output, asset

from assets.groups import DIFFICULTY
from pipeline.resources import BuildSettings
from pipeline.stages.difficulty import DifficultyResult, assign
from pipeline.stages.values import SelectedRows, Similarities


@asset(group_name=DIFFICULTY)
def row_similarities(context: AssetExecutionContext, build: BuildSettings,
                     selected_rows: SelectedRows) -> Output[Similarities]:
    """Cosine(query_a, query_b) of every selected row under each configured embedder."""
    import numpy as np

    from pipeline.stages.embed_cache import EmbeddingCache, embed_texts
    from pipeline.stages.embedders import load_embedders_config

    cfg = load_embedders_config()
    rows = selected_rows.rows
    texts_a = [r.candidate.query_a for r in rows]
    texts_b = [r.candidate.query_b for r in rows]
    cache = EmbeddingCache(build.caches / "embeddings.sqlite")
    sims, snapshots = {}, {}
    try:
        for name in [*cfg.members, cfg.held_out]:
            spec = cfg.specs[name]
            vecs, weights = embed_texts(spec, texts_a + texts_b, cache, build.caches)
            a, b = vecs[: len(rows)], vecs[len(rows):]
            sims[name] = [round(float(x), 6) for x in np.sum(a * b, axis=1)] if rows else []
            snapshots[name] = {"upstream": spec.upstream, "sha256": weights}
            context.log.info(f"{name}: {len(rows)} pairs")
    finally:
        cache.close()
    return Output(Similarities(sims, snapshots, tuple(cfg.members), cfg.held_out),
                  metadata={"embedders": MetadataValue.json(snapshots), "cache_hits": cache.hits,
                            "cache_misses": cache.misses})


@asset(group_name=DIFFICULTY)
def row_difficulty(selected_rows: SelectedRows, row_similarities: Similarities) -> Output[DifficultyResult]:
    """Difficulty per row: how many of the five members decide it right at their train-calibrated thresholds."""
    rows = selected_rows.rows
    is_hit = [r.candidate.binary_label == "HIT" for r in rows]
    res = assign(row_similarities.sims, row_similarities.members, row_similarities.held_out, is_hit,
                 [r.split for r in rows])
    dist = {d: res.difficulty.count(d) for d in ("easy", "medium", "hard")}
    return Output(res, metadata={"kappa": round(res.kappa, 4), "distribution": MetadataValue.json(dist),
                                 "thresholds": MetadataValue.json({m: round(t["threshold"], 6)
                                                                   for m, t in res.thresholds.items()})})
