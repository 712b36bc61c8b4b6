"""The blocking checks of a quarterly adversarial slice (assets/evolving.py): exactly `rows` rows; no
domain above `max_domain_share`, no operator above `max_operator_share`, at least `min_domains`
domains; every row fooling the named target, every label verifying again, no request shared with the
main benchmark, an earlier quarter or another row, and the row contract. Each takes the evolving_slice
value and returns (problems, metadata); a short slice's problem is the numbers (pipeline.evolving.slicing.shortfall)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from pipeline.evolving.slicing import LABEL, EvolvingConfig, earlier_slices, read_rows, used_requests


def _rows_exact(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    n = len(s["rows"])
    problems = [] if n == cfg.rows else [s["short"] or f"{n} rows, expected exactly {cfg.rows}"]
    return problems, {"rows": n, "expected": cfg.rows, "fooled": s["choice"].fooled,
                      "candidates": s["choice"].candidates}


def _share(s: Mapping[str, Any], what: str, of, cap: int, key: str, share: float) -> tuple[list[str], dict]:
    counts = Counter(of(r) for r in s["rows"])
    problems = [f"{what} {k} holds {n} rows, above its cap of {cap} ({key} {share:g})"
                for k, n in sorted(counts.items()) if n > cap]
    return problems, {f"{what}s": len(counts), "max_rows": max(counts.values(), default=0), "cap": cap,
                      "per_" + what: dict(sorted(counts.items()))}


def _domain_share(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    return _share(s, "domain", lambda r: r["domain"], cfg.domain_cap, "max_domain_share", cfg.max_domain_share)


def _operator_share(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    return _share(s, "operator", lambda r: r["provenance"]["evolving"]["operator"], cfg.operator_cap,
                  "max_operator_share", cfg.max_operator_share)


def _min_domains(s: Mapping[str, Any], cfg: EvolvingConfig, bench: Path, folder: Path) -> tuple[list[str], dict]:
    domains = sorted({r["domain"] for r in s["rows"]})
    problems = [] if len(domains) >= cfg.min_domains else [
        f"{len(domains)} domains ({', '.join(domains) or 'none'}), fewer than min_domains {cfg.min_domains}; the "
        f"target was fooled in {s['choice'].domains} domains"]
    return problems, {"domains": len(domains), "min_domains": cfg.min_domains, "fooled_in": s["choice"].domains}


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


SLICE_CHECKS = {"slice_rows_exact": _rows_exact, "slice_domain_share": _domain_share,
                "slice_operator_share": _operator_share, "slice_min_domains": _min_domains, "slice_fools_target": _fools_target,
                "slice_labels_verified": _labels_verified, "slice_no_duplicates": _no_duplicates,
                "slice_schema_valid": _schema_valid}
SLICE_CHECK_DESCRIPTIONS = {
    "slice_rows_exact": "The slice holds exactly `rows` rows (configs/evolving.yaml); a short slice names the numbers.",
    "slice_domain_share": "No domain holds more than `max_domain_share` of the slice.",
    "slice_operator_share": "No operator (a perturbation operator, a mining rule or a construction method: "
                            "slicing.operator_of) holds more than `max_operator_share` of the slice.",
    "slice_min_domains": "The slice covers at least `min_domains` domains.",
    "slice_fools_target": "Every row fools the named target: it served a HIT on a MISS row.",
    "slice_labels_verified": "Every row's label verifies again under its domain's deterministic verifier and policy.",
    "slice_no_duplicates": "No request of the slice is in the main benchmark, an earlier quarter or another row.",
    "slice_schema_valid": "Every row holds to the row contract (configs/row.schema.json, key order, ids).",
}
