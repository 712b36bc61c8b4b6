"""Sources, the left of the graph: what the datasets dir holds, and the pairs mined from real traffic.

`source_manifest` records which corpora the datasets dir holds and the sha256 of every input file.

`mined_pairs` fans real-traffic mining out over input shards ("<corpus>/<file>", a big file as
fixed record ranges "<corpus>/<file>@<start>-<end>": domains.corpora.mining.shards) in a static
graph: `real_traffic_shards` lists them (sorted); SHARD_SLOTS (16) slot ops `mine_shard_slot_<k>`
each prepare the shards of slot k (the k-th, (k+16)-th, ... of the sorted list: every user turn
scrubbed and sorted, single-turn prompts MinHash-signed and MiniLM-embedded); `merge_mined_shards`
takes every slot's prepared shards (domains.corpora.mining.PreparedShard) in slot order, refuses a
run that lost or repeated a shard, and pairs, labels, routes and guards over all shards in shard
order (a pair across shards is found; the value does not depend on the executor or on which step
finished first): domains.corpora.mining's two steps (prepare_shard, pair), the ones `mine` runs in
process. The value is mining's own `MinedPairs`; its candidates are verified once, by verified_rows. The fan-out is static, not
dynamic, because Dagster's Dask executor plans every step before the run and never runs dynamically
mapped steps (dagster-io/dagster#9785): the same steps run under the in-process, multiprocess (the
UI's default: slots in parallel) and Dask executors (pipeline/app/dask_job.py). Without a datasets dir
(or with no real-traffic corpus in it) every slot is empty and the generators mine nothing.
candidate_rows hands it to the generators (GenContext.mined): each domain's real_traffic_mined
generator takes the rows routed to it (the mining rules its spec names), and never mines itself.
"""

from collections import Counter

from dagster import AssetExecutionContext, In, MetadataValue, OpExecutionContext, Output, asset, graph_asset, op

from assets.groups import SOURCES
from domains.corpora.extract import Extract
from domains.corpora.mining import SHARD_SLOTS, MinedPairs, PreparedShard
from pipeline.core.paths import EXTRACT, PROJECT_ROOT
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages.assembly import input_manifest


@asset(group_name=SOURCES)
def source_manifest(build: BuildSettings) -> Output[dict]:
    """Which upstream corpora the datasets dir holds, and the sha256 and size of every input file."""
    manifest = input_manifest(build.datasets())
    return Output(manifest, metadata={"datasets_dir": str(build.datasets_path or "(none: embedded default)"),
                                      "corpora_used": MetadataValue.json(manifest["corpora"]),
                                      "files": len(manifest["files"])})


@op
def real_traffic_shards(build: BuildSettings) -> list[str]:
    """Every real-traffic shard of the datasets dir, sorted (none without one)."""
    from domains.corpora.mining import shards

    return shards(build.datasets())


def _slot_op(slot: int):
    """The op that prepares slot `slot`'s shards (domains.corpora.mining.slot_shards)."""

    @op(name=f"mine_shard_slot_{slot:02d}",
        description=f"Prepare the shards of slot {slot} (the sorted shard list's indices {slot} mod {SHARD_SLOTS}): "
                    "turns scrubbed and sorted, single-turn prompts signed and embedded.")
    def mine_shard_slot(context: OpExecutionContext, build: BuildSettings, names: list[str]) -> list[PreparedShard]:
        from domains.corpora.mining import slot_shards
        from pipeline.orchestration.cached_steps import prepared_shard

        out, datasets = [], build.datasets()  # one DatasetsDir: its corpora are loaded once per slot
        for shard in slot_shards(names, slot):
            part = prepared_shard(build.caches, datasets, shard)
            context.log.info(f"slot {slot}: {shard}: {part.human_turns} human turns, {len(part.turns)} usable, "
                             f"{len(part.texts)} distinct single-turn prompts")
            out.append(part)
        context.add_output_metadata({"shards": MetadataValue.json([p.shard for p in out]),
                                     "human_turns": sum(p.human_turns for p in out)})
        return out

    return mine_shard_slot


SLOT_OPS = tuple(_slot_op(k) for k in range(SHARD_SLOTS))


def slot_input(slot: int) -> str:
    return f"slot_{slot:02d}"


# One input per slot, not one fan-in input: dagster-dask hands a step the run's known state as it was
# before the run, and a fan-in input then loads none of its sources (an empty list, silently).
@op(ins={"names": In(list[str]), **{slot_input(k): In(list[PreparedShard]) for k in range(SHARD_SLOTS)}})
def merge_mined_shards(context: OpExecutionContext, build: BuildSettings, names: list[str],
                       **slots: list[PreparedShard]) -> MinedPairs:
    """Every slot's prepared shards paired in shard order (through the step cache): candidates
    (content-key order), drops summed."""
    from domains.corpora.mining import shard_order, summarise
    from pipeline.orchestration.cached_steps import paired_shards

    parts = [p for k in range(SHARD_SLOTS) for p in slots.get(slot_input(k), ())]
    if len(slots) != SHARD_SLOTS or sorted(p.shard for p in parts) != sorted(names):
        from pipeline.core.errors import BuildError
        raise BuildError(f"mined_pairs: {len(slots)} of {SHARD_SLOTS} slots returned {len(parts)} shards for "
                         f"{len(names)} listed (missing: {sorted(set(names) - {p.shard for p in parts})}). "
                         "Materialize the whole mined_pairs asset again, every slot step included")
    ordered = sorted(parts, key=lambda p: shard_order(p.shard))
    mined = paired_shards(build.caches, ordered)
    per_shard = {p.shard: {"human_turns": p.human_turns, "usable_turns": len(p.turns)} for p in ordered}
    summary = summarise([mined])
    context.add_output_metadata({
        "shards": len(ordered), "human_turns": mined.n_prompts, "pairs_considered": mined.n_pairs,
        "kept": len(mined.candidates),
        "pairs_by_finder": MetadataValue.json(dict(mined.sources)),
        "per_shard": MetadataValue.json(per_shard),
        "per_domain_label": MetadataValue.json(summary["kept"]),
        "per_rule": MetadataValue.json(summary["rules"]),
        "drops": MetadataValue.json(summary["drops"]),
    })
    return mined


@graph_asset(group_name=SOURCES)
def mined_pairs() -> MinedPairs:
    """Candidate pairs mined from real user traffic (ShareGPT, Chatbot Arena, WildChat), in 16 fixed slot steps."""
    names = real_traffic_shards()
    return merge_mined_shards(names, **{slot_input(k): slot_op(names) for k, slot_op in enumerate(SLOT_OPS)})


@asset(group_name=SOURCES)
def corpus_extract(context: AssetExecutionContext, build: BuildSettings, mined_pairs: MinedPairs) -> Extract:
    """The corpora's verified pairs: made from the datasets dir, else sources/extract/pairs.jsonl."""
    from domains.corpora import extract as ex

    datasets = build.datasets()
    if datasets is None:
        value, origin = ex.read(EXTRACT), f"committed extract {EXTRACT.relative_to(PROJECT_ROOT)}"
    else:
        from pipeline.orchestration.cached_steps import corpus_extract as cached

        data, drops = cached(build.caches, datasets, mined_pairs, lambda: extract_from(datasets, mined_pairs))
        value, origin = ex.parse(data, "extract made from the datasets dir"), f"made from {build.datasets_path}"
        value = ex.Extract(value.candidates, value.sha256, value.data, dict(drops))
    per = Counter(f"{c.domain}/{c.label}/{c.construction_method}" for c in value.candidates)
    context.add_output_metadata({
        "origin": origin, "sha256": value.sha256, "pairs": len(value.candidates),
        "construction_methods": MetadataValue.json(value.methods()),
        "per_domain_label_method": MetadataValue.json(dict(sorted(per.items()))),
        "drops": MetadataValue.json(dict(sorted(value.drops.items())))})
    return value


def extract_from(datasets, mined: MinedPairs):
    """(the extract's bytes, drops by reason) from a datasets dir and its mined pairs."""
    from domains import domain_names
    from domains.corpora import extract as ex, realtraps, rewordings

    traps, trap_drops = realtraps.candidates(datasets)
    reworded, rewording_drops = rewordings.candidates(datasets)
    data, drops = ex.build(datasets, mined, domain_names(), corpus_file_hashes(datasets), traps + reworded)
    drops.update({f"traps:{k}": n for k, n in trap_drops.items()})
    drops.update({f"rewordings:{k}": n for k, n in rewording_drops.items()})
    return data, drops


def corpus_file_hashes(datasets) -> dict[str, str]:
    """sha256 of every input file of the corpora present, by path relative to the datasets dir."""
    return {e["path"]: e["sha256"] for e in datasets.inventory()}
