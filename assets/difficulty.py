"""Difficulty: cosine similarities from six embedders (content-addressed cache), per-embedder
thresholds calibrated on train, ensemble votes and held-out kappa."""

from dataclasses import replace

from dagster import AssetExecutionContext, MetadataValue, Output, asset

from assets.groups import DIFFICULTY
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages.difficulty import DifficultyResult, assign
from pipeline.stages.hard_paraphrases import hard_share, made_from_real_request
from pipeline.stages.values import SelectedRows, Similarities


@asset(group_name=DIFFICULTY)
def row_similarities(context: AssetExecutionContext, build: BuildSettings,
                     selected_rows: SelectedRows) -> Output[Similarities]:
    """Cosine(query_a, query_b) of every selected row under each configured embedder."""
    import numpy as np

    from pipeline.services.embed_cache import EmbeddingCache, embed_many
    from pipeline.services.embedders import load_embedders_config, runtime_key

    from pipeline.orchestration.cached_steps import embedded
    from pipeline.orchestration.step_cache import fingerprint

    cfg = load_embedders_config()
    rows = selected_rows.rows
    texts = [r.candidate.query_a for r in rows] + [r.candidate.query_b for r in rows]
    names = [*cfg.members, cfg.held_out]

    def compute() -> tuple[Similarities, int, int]:
        cache = EmbeddingCache(build.caches / "embeddings.sqlite")
        try:  # every embedder's misses at once, over every core (pipeline/services/embed_pool.py)
            vecs, weights = embed_many({n: texts for n in names}, cfg.specs, cache, build.caches,
                                       progress=context.log.info, workers=build.settings.workers)
        finally:
            cache.close()
        sims, snapshots = {}, {}
        for name in names:
            a, b = vecs[name][: len(rows)], vecs[name][len(rows):]
            sims[name] = [round(float(x), 6) for x in np.sum(a * b, axis=1)] if rows else []
            snapshots[name] = {"upstream": cfg.specs[name].upstream, "sha256": weights[name],
                               "runtime": runtime_key(cfg.specs[name])}
        return Similarities(sims, snapshots, tuple(cfg.members), cfg.held_out), cache.hits, cache.misses

    value, hits, misses = embedded(build.caches, "row_similarities", lambda: {"texts": fingerprint(texts)}, compute)
    return Output(value, metadata={"embedders": MetadataValue.json(value.snapshots), "cache_hits": hits,
                                   "cache_misses": misses})


@asset(group_name=DIFFICULTY)
def row_difficulty(selected_rows: SelectedRows, row_similarities: Similarities) -> Output[DifficultyResult]:
    """Difficulty per row: how many of the five members decide it right at their train-calibrated thresholds."""
    rows = selected_rows.rows
    is_hit = [r.candidate.binary_label == "HIT" for r in rows]
    res = assign(row_similarities.sims, row_similarities.members, row_similarities.held_out, is_hit,
                 [r.split for r in rows])
    dist = {d: res.difficulty.count(d) for d in ("easy", "medium", "hard")}
    hard = hard_share([r.candidate.domain for r in rows], is_hit, row_similarities.sims,
                      [made_from_real_request(r.candidate.source) for r in rows])
    res = replace(res, hard_paraphrases=hard)
    return Output(res, metadata={"kappa": round(res.kappa, 4), "distribution": MetadataValue.json(dist),
                                 "hard_paraphrases": MetadataValue.json(hard),
                                 "thresholds": MetadataValue.json({m: round(t["threshold"], 6)
                                                                   for m, t in res.thresholds.items()})})
