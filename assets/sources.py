"""Sources, the left of the graph: what the datasets dir holds, and the pairs mined from real traffic.

`source_manifest` records which corpora the datasets dir holds and the sha256 of every input file.

`mined_pairs` fans real-traffic mining out over input shards: `real_traffic_shards` emits one
dynamic output per shard of the datasets dir ("<corpus>/<file>", domains.corpora.mining.shards);
`mine_real_traffic_shard` mines one shard (scrub, duplicate hash, usearch ANN over MiniLM, rules,
family guard, verifiers); `merge_mined_shards` joins the results in shard order, so the asset's
value does not depend on which step finished first. Under a multiprocess executor (the Dagster UI's
default) the shards are mined in parallel; a larger corpus only adds shards. Without a datasets dir
(or with no real-traffic corpus in it) the asset is empty and the generators mine nothing.
candidate_rows reads it: the conversational and creative real_traffic_mined generators take their
domain's rows from it (GenContext.mined) instead of mining again.
"""

import hashlib
import re
from collections import Counter

from dagster import DynamicOut, DynamicOutput, MetadataValue, OpExecutionContext, Output, asset, graph_asset, op

from assets.groups import SOURCES
from pipeline.resources import BuildSettings
from pipeline.stages.assembly import input_manifest
from pipeline.stages.values import MinedPairs, MinedShard


@asset(group_name=SOURCES)
def source_manifest(build: BuildSettings) -> Output[dict]:
    """Which upstream corpora the datasets dir holds, and the sha256 and size of every input file."""
    manifest = input_manifest(build.datasets())
    return Output(manifest, metadata={"datasets_dir": str(build.datasets_path or "(none: embedded default)"),
                                      "corpora_used": MetadataValue.json(manifest["corpora"]),
                                      "files": len(manifest["files"])})


def mapping_key(shard: str) -> str:
    """A Dagster mapping key for a shard: its name with other characters as '_', plus a short hash so
    two names that differ only in punctuation cannot collide."""
    digest = hashlib.sha256(shard.encode("utf-8")).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_]', '_', shard)[:80]}_{digest}"


@op(out=DynamicOut(str))
def real_traffic_shards(build: BuildSettings):
    """One output per real-traffic shard of the datasets dir (none without one)."""
    from domains.corpora.mining import shards

    for shard in shards(build.datasets()):
        yield DynamicOutput(shard, mapping_key=mapping_key(shard))


@op
def mine_real_traffic_shard(context: OpExecutionContext, build: BuildSettings, shard: str) -> MinedShard:
    """Mine one shard; its verified candidates, drops by reason and counts."""
    from domains.corpora.mining import mine

    res = mine(build.datasets(), shard, cache_dir=build.caches)
    context.log.info(f"{shard}: {res.n_prompts} prompts, {res.n_pairs} pairs considered, "
                     f"{len(res.candidates)} kept")
    return MinedShard(shard, tuple(res.candidates), dict(res.drops), res.n_prompts, res.n_pairs)


@op
def merge_mined_shards(context: OpExecutionContext, results: list[MinedShard]) -> MinedPairs:
    """All shards' results in shard order: candidates (content-key order) and drops summed."""
    ordered = sorted(results, key=lambda r: r.shard)
    cands = sorted((c for r in ordered for c in r.candidates), key=lambda c: c.key)
    drops: Counter = Counter()
    for r in ordered:
        drops.update(r.drops)
    per_shard = {r.shard: {"prompts": r.prompts, "pairs": r.pairs, "kept": len(r.candidates)} for r in ordered}
    context.add_output_metadata({
        "shards": len(ordered), "prompts": sum(r.prompts for r in ordered), "kept": len(cands),
        "per_shard": MetadataValue.json(per_shard),
        "per_domain_label": MetadataValue.json(dict(sorted(Counter(f"{c.domain}:{c.label}" for c in cands).items()))),
        "drops": MetadataValue.json(dict(sorted(drops.items()))),
    })
    return MinedPairs(tuple(r.shard for r in ordered), tuple(cands), dict(sorted(drops.items())))


@graph_asset(group_name=SOURCES)
def mined_pairs() -> MinedPairs:
    """Candidate pairs mined from real user traffic (ShareGPT, Chatbot Arena, WildChat), one step per shard."""
    return merge_mined_shards(real_traffic_shards().map(mine_real_traffic_shard).collect())
