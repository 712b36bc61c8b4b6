"""candidate_rows: every generator of one domain (a partition per registered domain).

A run may cover several domains (BackfillPolicy.single_run); the Dagster UI holds its unpartitioned
form, one step over every domain (pipeline.orchestration.partitions.unpartitioned)."""

from collections import Counter

from dagster import AssetExecutionContext, MetadataValue, StaticPartitionsDefinition

from assets.groups import GENERATION
from domains import domain_names
from domains.corpora.licences import commercial_ok
from domains.base import GenContext
from domains.lm import yields as lm_yields
from pipeline.core.config import load_profile
from pipeline.orchestration import cached_steps
from pipeline.orchestration.partitions import for_each_domain, per_domain, per_domain_asset
from pipeline.orchestration.resources import BuildSettings
from domains.corpora.extract import Extract
from pipeline.stages.values import DomainCandidates

DOMAIN_PARTITIONS = StaticPartitionsDefinition(domain_names())
CANDIDATES = per_domain(DomainCandidates, "candidate_rows")


@per_domain_asset(DOMAIN_PARTITIONS, group_name=GENERATION, dagster_type=CANDIDATES)
def candidate_rows(context: AssetExecutionContext, build: BuildSettings, corpus_extract: Extract):
    """Candidate pairs of one domain: its generators' and the corpora's verified pairs (corpus_extract)."""
    profile = load_profile(build.profile)

    def one(domain: str) -> tuple[DomainCandidates, dict]:
        ctx = GenContext(domain=domain, profile=profile.name, need=dict(profile.matrix.get(domain, {})),
                         llm=build.llm(), extract=corpus_extract)
        lm_yields.clear(domain)
        generated, drops = cached_steps.generate(build.caches, domain, ctx)
        cands, per = [], Counter()
        for c in generated:
            if build.commercial_only and not commercial_ok(c):  # --commercial-only: licence forbids it
                drops[f"non_commercial_licence:{c.source}"] += 1
                continue
            cands.append(c)
            per[f"{c.label}/{c.construction_method}"] += 1
        methods = Counter(c.construction_method for c in cands)
        return DomainCandidates(domain, tuple(cands), dict(drops)), {
            "candidates": len(cands), "profile": profile.name,
            "construction_methods": MetadataValue.json(dict(sorted(methods.items()))),
            "per_label_method": MetadataValue.json(dict(sorted(per.items()))),
            "drops": MetadataValue.json(dict(sorted(drops.items()))),
            # per LM task that ran (paraphrase, edit): model, seeds, prompts sent, outputs, kept, drops by reason
            "lm_yield": MetadataValue.json(lm_yields.of(domain))}

    return for_each_domain(context, one)
