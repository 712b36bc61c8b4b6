"""Sources, the left of the graph: what the datasets dir holds, and the pairs mined from real traffic.

`source_manifest` records which corpora the datasets dir holds and the sha256 of every input file.

`mined_pairs` fans real-traffic mining out over input shards: `real_traffic_shards` emits one
dynamic output per shard of the datasets dir ("<corpus>/<file>", a big file as fixed record ranges
"<corpus>/<file>@<start>-<end>": domains.corpora.mining.shards); `mine_real_traffic_shard`
prepares one shard (every user turn scrubbed and sorted, single-turn prompts MinHash-signed and
MiniLM-embedded); `merge_mined_shards` pairs, labels, guards and verifies over all of them in shard
order (a pair across shards is found; the value does not depend on which step finished first).
Under a multiprocess executor (the Dagster UI's default) the shards are prepared in parallel; a
larger corpus only adds shards. Without a datasets dir
(or with no real-traffic corpus in it) the asset is empty and the generators mine nothing.
candidate_rows reads it: the conversational and creative real_traffic_mined generators take their
domain's rows from it (GenContext.mined) instead of mining again.
"""

import hashlib
import re

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
    """Prepare one shard: its turns scrubbed and sorted, its single-turn prompts signed and embedded."""
    from domains.corpora.mining import prepare_shard

    part = prepare_shard(build.datasets(), shard, cache_dir=build.caches)
    context.log.info(f"{shard}: {part.human_turns} human turns, {len(part.turns)} usable, "
                     f"{len(part.texts)} distinct single-turn prompts")
    return MinedShard(shard, part)


@op
def merge_mined_shards(context: OpExecutionContext, results: list[MinedShard]) -> MinedPairs:
    """Every prepared shard paired in shard order: verified candidates (content-key order), drops summed."""
    from domains.corpora.mining import pair, shard_order, summarise

    ordered = sorted(results, key=lambda r: shard_order(r.shard))
    res = pair([r.prepared for r in ordered])
    cands = res.candidates
    per_shard = {r.shard: {"human_turns": r.prepared.human_turns, "usable_turns": len(r.prepared.turns)}
                 for r in ordered}
    summary = summarise([res])
    context.add_output_metadata({
        "shards": len(ordered), "human_turns": res.n_prompts, "pairs_considered": res.n_pairs, "kept": len(cands),
        "pairs_by_finder": MetadataValue.json(dict(sorted(res.sources.items()))),
        "per_shard": MetadataValue.json(per_shard),
        "per_domain_label": MetadataValue.json(summary["kept"]),
        "per_rule": MetadataValue.json(summary["rules"]),
        "drops": MetadataValue.json(summary["drops"]),
    })
    return MinedPairs(tuple(r.shard for r in ordered), tuple(cands), summary["drops"])


@graph_asset(group_name=SOURCES)
def mined_pairs() -> MinedPairs:
    """Candidate pairs mined from real user traffic (ShareGPT, Chatbot Arena, WildChat), one step per shard."""
    return merge_mined_shards(real_traffic_shards().map(mine_real_traffic_shard).collect())
