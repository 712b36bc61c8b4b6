"""candidate_rows: every generator of one domain (a partition per registered domain)."""

from collections import Counter

from dagster import AssetExecutionContext, MetadataValue, Output, StaticPartitionsDefinition, asset

from assets.groups import GENERATION
from domains import domain_names
from domains.corpora.licences import commercial_ok
from domains.base import GenContext
from domains.check import generate
from pipeline.core.config import load_profile
from pipeline.resources import BuildSettings
from pipeline.stages.values import DomainCandidates, MinedPairs

DOMAIN_PARTITIONS = StaticPartitionsDefinition(domain_names())


@asset(partitions_def=DOMAIN_PARTITIONS, group_name=GENERATION)
def candidate_rows(context: AssetExecutionContext, build: BuildSettings,
                   mined_pairs: MinedPairs) -> Output[DomainCandidates]:
    """Candidate pairs of one domain from each of its generators (curated, operators, templates, corpora)."""
    domain = context.partition_key
    profile = load_profile(build.profile)
    ctx = GenContext(domain=domain, profile=profile.name, need=dict(profile.matrix.get(domain, {})),
                     datasets=build.datasets(), llm=build.llm(), mined=mined_pairs.for_generators())
    generated, drops = generate(domain, ctx)
    cands, per = [], Counter()
    for c in generated:
        if build.commercial_only and not commercial_ok(c):  # --commercial-only: licence forbids it
            drops[f"non_commercial_licence:{c.source}"] += 1
            continue
        cands.append(c)
        per[f"{c.label}/{c.construction_method}"] += 1
    return Output(
        DomainCandidates(domain, tuple(cands), dict(drops)),
        metadata={"candidates": len(cands), "per_label_method": MetadataValue.json(dict(sorted(per.items()))),
                  "drops": MetadataValue.json(dict(sorted(drops.items())))},
    )
