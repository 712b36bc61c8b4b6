"""selected_rows: the profile's exact quota per (domain, label) cell, ids and splits; plus one
blocking quota check per domain, made from the sampling configuration."""

from collections import Counter

from dagster import AssetCheckResult, AssetChecksDefinition, MetadataValue, Output, asset, asset_check

from assets.groups import SELECTION
from pipeline.orchestration import asset_metadata as show
from domains import domain_names
from pipeline.core.config import load_profile
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages.selection import select
from pipeline.stages.values import SelectedRows, VerifiedRows


@asset(group_name=SELECTION)
def selected_rows(build: BuildSettings, verified_rows: dict[str, VerifiedRows]) -> Output[SelectedRows]:
    """Rows selected per cell from the verified candidates (method mix, seeded order), numbered and split."""
    profile = load_profile(build.profile)
    domains = sorted(verified_rows)  # one entry per domain partition
    sel = select(profile, {d: verified_rows[d].rows for d in domains})
    value = SelectedRows.of(profile.name, sel, {d: verified_rows[d].drops for d in domains})
    methods = Counter()
    for (d, lab, m), n in sel.methods.items():
        methods[m] += n
    return Output(
        value,
        metadata={"profile": profile.name, "rows": len(sel.rows), "expected_rows": profile.total,
                  "rows_per_cell": show.cells_table(((r.candidate.domain, r.candidate.label) for r in sel.rows),
                                                    profile.labels, profile.matrix),
                  "short_cells": MetadataValue.json({f"{d}/{lab}": n for (d, lab), n in sorted(sel.shortfalls.items())}),
                  "construction_methods": MetadataValue.json(dict(sorted(methods.items())))},
    )


def explain_shortfall(selected: SelectedRows, domain: str, label: str) -> str:
    """Why a cell is short: the verified-candidate drops of that label, most frequent first."""
    drops = selected.drops.get(domain, {})
    mine = sorted(((n, k) for k, n in drops.items() if k.startswith(f"{label}:")), reverse=True)
    reasons = ", ".join(f"{k.split(':', 1)[1]} x{n}" for n, k in mine[:4]) or "no candidates dropped (too few generated)"
    return f"{domain}/{label} short by {selected.shortfalls[(domain, label)]} ({reasons})"


def _quota_check(domain: str) -> AssetChecksDefinition:
    @asset_check(asset=selected_rows, name=f"quota_{domain}", blocking=True,
                 description=f"Every {domain} cell holds exactly its quota of rows.")
    def check(build: BuildSettings, selected_rows: SelectedRows) -> AssetCheckResult:
        profile = load_profile(build.profile)
        expected = profile.matrix.get(domain, {})
        short = [(lab, n) for (d, lab), n in sorted(selected_rows.shortfalls.items()) if d == domain]
        actual = {lab: q - dict(short).get(lab, 0) for lab, q in expected.items()}
        why = "; ".join(explain_shortfall(selected_rows, domain, lab) for lab, _ in short)
        return AssetCheckResult(passed=not short, metadata={
            "expected": MetadataValue.json(dict(expected)), "actual": MetadataValue.json(actual),
            "why": why or "all cells full"})

    return check


QUOTA_CHECKS = [_quota_check(d) for d in domain_names()]
