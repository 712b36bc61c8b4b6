"""The blocking checks of a quarterly adversarial slice (assets/evolving.py): exactly `rows` rows,
every row fooling the named target, every label verifying again, no request shared with the main
benchmark, an earlier quarter or another row, and the row contract. Each takes the evolving_slice
value and returns (problems, metadata); a short slice's problem is the numbers (pipeline.evolving.slicing.shortfall)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pipeline.evolving.slicing import LABEL, EvolvingConfig, earlier_slices, read_rows, used_requests


def _rows_exact(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    n = len(s["rows"])
    problems = [] if n == cfg.rows else [s["short"] or f"{n} rows, expected exactly {cfg.rows}"]
    return problems, {"rows": n, "expected": cfg.rows, "fooled": s["choice"].fooled,
                      "candidates": s["choice"].candidates}


def _fools_target(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    bad = [r["id"] for r in s["rows"] if r["binary_label"] != "MISS"
           or r["provenance"]["evolving"]["target"]["verdict"]["decision"] != "HIT"
           or r["provenance"]["evolving"]["target"]["code_sha256"] != s["target"]["code_sha256"]]
    return [f"{rid}: the target {s['target']['name']} did not serve a false hit on it" for rid in bad], \
        {"target": s["target"]["name"], "not_fooling": len(bad)}


def _labels_verified(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    from domains import get_domain
    from domains.verify import verify
    from pipeline.core.taxonomy import binary_label

    problems = []
    for r in s["rows"]:
        c = s["candidates"][r["provenance"]["evolving"]["candidate_id"]]
        out = verify(c, get_domain(c.domain).policy)
        if not out.passed or c.label != LABEL or (r["label"], r["query_a"], r["query_b"]) != (c.label, c.query_a, c.query_b):
            problems.append(f"{r['id']}: label {r['label']} does not verify ({out.reason})")
        elif binary_label(c.label, c.verification_method) != "MISS":
            problems.append(f"{r['id']}: not a MISS row")
    return problems, {"reverified": len(s["rows"])}


def _no_duplicates(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    used = used_requests(read_rows(bench))
    earlier = earlier_slices(folder, s["quarter"])
    before = set().union(*(used_requests(read_rows(p)) for p in earlier)) if earlier else set()
    problems, seen = [], {}
    for r in s["rows"]:
        for key in used_requests([r]):
            if key in used:
                problems.append(f"{r['id']}: a request of it is in the main benchmark")
            elif key in before:
                problems.append(f"{r['id']}: a request of it is in an earlier quarter's slice")
            elif key in seen and seen[key] != r["id"]:
                problems.append(f"{r['id']}: shares a request with {seen[key]}")
            seen.setdefault(key, r["id"])
    return problems, {"earlier_quarters": len(earlier)}


def _schema_valid(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    from domains import domain_names
    from pipeline.harness.contract import validate_rows

    name = f"{s['quarter']}.jsonl"
    return validate_rows([(i + 1, r) for i, r in enumerate(s["rows"])], name, domains=domain_names()), {}


SLICE_CHECKS = {"slice_rows_exact": _rows_exact, "slice_fools_target": _fools_target,
                "slice_labels_verified": _labels_verified, "slice_no_duplicates": _no_duplicates,
                "slice_schema_valid": _schema_valid}
SLICE_CHECK_DESCRIPTIONS = {
    "slice_rows_exact": "The slice holds exactly `rows` rows (configs/evolving.yaml); a short slice names the numbers.",
    "slice_fools_target": "Every row fools the named target: it served a HIT on a MISS row.",
    "slice_labels_verified": "Every row's label verifies again under its domain's deterministic verifier and policy.",
    "slice_no_duplicates": "No request of the slice is in the main benchmark, an earlier quarter or another row.",
    "slice_schema_valid": "Every row holds to the row contract (configs/row.schema.json, key order, ids).",
}
