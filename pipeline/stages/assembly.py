"""What a build writes, as plain functions the assets call: row assembly, invariants, the
benchmark and split files, the calibration report, baseline reports and the build manifest.
Every file goes through pipeline.core.writer (byte-stable, atomic)."""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from domains.base import LABELS, binary_label, canonical_json, pair_signature, request_key
from pipeline.core.config import Profile
from pipeline.core.paths import CONFIGS, CURATED, EXTRACT
from pipeline.core.writer import atomic_write, jsonl_bytes, write_json
from pipeline.stages import hard_paraphrases
from pipeline.stages.groups import size_tolerance
from pipeline.harness import ROW_FIELDS

BENCH = "cachebench.jsonl"
# Fields a published test row keeps; everything else goes to the labels file.
TEST_PUBLIC_FIELDS = ("id", "domain", "query_a", "query_b", "context_a", "context_b", "system_prompt_a",
                      "system_prompt_b", "tools_a", "tools_b")


def ordered_row(row: dict) -> dict:
    """The row with the 22 schema fields first, in schema order, then provenance fields."""
    missing = [k for k in ROW_FIELDS if k not in row]
    if missing:
        raise KeyError(f"row {row.get('id')}: missing {missing}")
    out = {k: row[k] for k in ROW_FIELDS}
    out.update({k: row[k] for k in row if k not in out})
    return out


def _plain(obj: Any) -> Any:
    """Mappings and tuples from frozen candidates → plain dicts and lists, keys sorted."""
    import json

    return None if obj is None else json.loads(canonical_json(obj))


def assemble_rows(selected: list, difficulty: dict) -> list[dict]:
    rows = []
    for i, sr in enumerate(selected):
        c = sr.candidate
        prov = c.provenance.to_dict()
        prov["split"] = sr.split
        prov["verification"] = sr.outcome.to_dict()
        prov["difficulty_votes"] = dict(sorted(difficulty["votes"][i].items()))
        row = {
            "id": sr.id, "domain": c.domain, "subcategory": c.subcategory, "label": c.label,
            "binary_label": binary_label(c.label, c.verification_method), "difficulty": difficulty["difficulty"][i],
            "query_a": c.query_a, "query_b": c.query_b,
            "context_a": _plain(list(c.context_a)) if c.context_a is not None else None,
            "context_b": _plain(list(c.context_b)) if c.context_b is not None else None,
            "system_prompt_a": c.system_prompt_a, "system_prompt_b": c.system_prompt_b,
            "tools_a": _plain(list(c.tools_a)) if c.tools_a is not None else None,
            "tools_b": _plain(list(c.tools_b)) if c.tools_b is not None else None,
            "expected_answer_a": c.expected_answer_a, "expected_answer_b": c.expected_answer_b,
            "rationale": c.rationale, "verification_method": c.verification_method,
            "verification_payload": _plain(dict(c.verification_payload)),
            "construction_method": c.construction_method, "source": c.source,
            "real_world_grounding": c.real_world_grounding, "licence": c.licence,
            "provenance": _plain(prov),
        }
        rows.append(ordered_row(row))
    rows.sort(key=lambda r: r["id"])
    return rows


# ---------------------------------------------------------------- invariants (blocking checks)

def _schema(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    from domains import domain_names
    from pipeline.harness.contract import validate_rows

    problems = validate_rows([(i + 1, r) for i, r in enumerate(rows)], BENCH, domains=domain_names())
    return problems, {"rows": len(rows)}


def _binary(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    bad = [r["id"] for r in rows if r["binary_label"] != binary_label(r["label"], r["verification_method"])]
    return [f"{rid}: binary_label does not follow from label and policy" for rid in bad], {"violations": len(bad)}


def _unique_ids(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    dup = sorted(k for k, n in Counter(r["id"] for r in rows).items() if n > 1)
    return [f"{k}: duplicate id" for k in dup], {"duplicates": len(dup)}


def _pair_sig(r: dict) -> tuple[str, str, str]:
    return pair_signature(r["domain"], (r["query_a"], r["context_a"], r["system_prompt_a"], r["tools_a"]),
                          (r["query_b"], r["context_b"], r["system_prompt_b"], r["tools_b"]))


def _no_duplicate_pairs(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    first: dict[tuple[str, str, str], str] = {}
    problems = []
    for r in rows:
        sig = _pair_sig(r)
        if sig in first:
            problems.append(f"{r['id']}: same pair as {first[sig]} after normalisation")
        else:
            first[sig] = r["id"]
    return problems, {"duplicates": len(problems)}


def _quotas(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    actual = Counter((r["domain"], r["label"]) for r in rows)
    problems = [f"{d}/{lab}: {actual[(d, lab)]} rows, expected {n}" for d, lab, n in profile.cells() if actual[(d, lab)] != n]
    extra = sorted(f"{d}/{lab}" for (d, lab) in actual if lab not in profile.matrix.get(d, {}))
    return problems + [f"{c}: not in the profile" for c in extra], {"cells": len(profile.cells())}


def split_band(profile: Profile) -> dict[str, int]:
    """Rows each split may differ from the profile's size: test takes whole generating groups
    (pipeline/stages/groups.py) within its tolerance, dev is exact and train takes the rest."""
    tol = size_tolerance(profile.splits.get("test", 0))
    return {s: (0 if s == "dev" else tol) for s in profile.splits}


def _split_sizes(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    actual = Counter(r["provenance"]["split"] for r in rows)
    band = split_band(profile)
    problems = [f"{s}: {actual[s]} rows, expected {n}" + (f" ± {band[s]}" if band[s] else "")
                for s, n in sorted(profile.splits.items()) if abs(actual[s] - n) > band[s]]
    return problems, {"expected": dict(profile.splits), "tolerance": band, "actual": dict(sorted(actual.items()))}


def _no_test_leakage(rows: list[dict], profile: Profile) -> tuple[list[str], dict]:
    seen: dict[str, str] = {}
    for r in rows:
        if r["provenance"]["split"] != "test":
            for side in ("a", "b"):
                seen.setdefault(request_key(r[f"query_{side}"], r[f"context_{side}"], r[f"system_prompt_{side}"]), r["id"])
    problems = []
    for r in rows:
        if r["provenance"]["split"] == "test":
            for side in ("a", "b"):
                k = request_key(r[f"query_{side}"], r[f"context_{side}"], r[f"system_prompt_{side}"])
                if k in seen:
                    problems.append(f"{r['id']}: query_{side} also appears in {seen[k]} (train/dev)")
    return problems, {"leaks": len(problems)}


INVARIANTS: dict[str, Callable[[list[dict], Profile], tuple[list[str], dict]]] = {
    "row_schema": _schema,
    "quota_cells": _quotas,
    "binary_rule": _binary,
    "unique_ids": _unique_ids,
    "no_duplicate_pairs": _no_duplicate_pairs,
    "split_sizes": _split_sizes,
    "no_test_leakage": _no_test_leakage,
}
INVARIANT_DESCRIPTIONS = {
    "row_schema": "Every row satisfies configs/row.schema.json and the row contract.",
    "quota_cells": "Every (domain, label) cell holds exactly the profile's quota.",
    "binary_rule": "binary_label is HIT exactly for EQUIV/PARA_SAFE unless policy_no_cache.",
    "unique_ids": "Row ids are unique.",
    "no_duplicate_pairs": "No two rows are the same pair after text normalisation.",
    "split_sizes": "dev holds exactly the profile's size; test and train within the whole-group tolerance.",
    "no_test_leakage": "No test request (normalised) also appears in train or dev.",
}


def check_all(rows: list[dict], profile: Profile) -> dict[str, list[str]]:
    return {name: fn(rows, profile)[0] for name, fn in INVARIANTS.items()}


# ---------------------------------------------------------------- files

def write_benchmark(out_dir: Path, rows: list[dict]) -> dict[str, str]:
    files: dict[str, bytes] = {BENCH: jsonl_bytes(rows)}
    for split in ("train", "dev"):
        files[f"splits/{split}.jsonl"] = jsonl_bytes([r for r in rows if r["provenance"]["split"] == split])
    test = [r for r in rows if r["provenance"]["split"] == "test"]
    files["splits/test.jsonl"] = jsonl_bytes([{k: r[k] for k in TEST_PUBLIC_FIELDS} for r in test])
    files["splits/test_labels.jsonl"] = jsonl_bytes([{k: v for k, v in r.items() if k not in TEST_PUBLIC_FIELDS or k == "id"} for r in test])
    return write_files(out_dir, files)


def write_files(out_dir: Path, files: dict[str, bytes]) -> dict[str, str]:
    """Write each file (path relative to out_dir) atomically; path -> sha256."""
    written = {}
    for rel, data in sorted(files.items()):
        atomic_write(out_dir / rel, data)
        written[rel] = hashlib.sha256(data).hexdigest()
    return written


def write_calibration(out_dir: Path, selected: list, sims: dict, diff: dict) -> dict[str, str]:
    import io

    members, held = sims["members"], sims["held_out"]
    rows = [sr.candidate for sr in selected]
    labels = [c.label for c in rows]
    dist = Counter(diff["difficulty"])
    lines = ["# Difficulty calibration", "",
             "Each embedder decides HIT when cosine(query_a, query_b) >= its threshold, chosen F1-optimal on the "
             "train split. Difficulty = how many of the five members decide a row right (easy >= 4, medium 2-3, "
             "hard <= 1). The held-out embedder's difficulty comes from its margin to its own threshold (a band of "
             f"half-width {diff['delta']:.4f} is medium), and Cohen's kappa compares it with the ensemble's.", "",
             f"**Cohen's kappa (ensemble vs held-out `{held}`): {diff['kappa']:.3f}**", "",
             "| embedder | role | sha256 (files) | threshold | train F1 | train accuracy | accuracy (all rows) |",
             "|---|---|---|---|---|---|---|"]
    binary = [c.binary_label == "HIT" for c in rows]
    for m in [*members, held]:
        t = diff["thresholds"][m]
        acc_all = sum((s >= t["threshold"]) == h for s, h in zip(sims["sims"][m], binary)) / len(rows) if rows else 0.0
        role = "held out" if m == held else "member"
        lines.append(f"| {m} | {role} | `{sims['snapshots'][m]['sha256'][:16]}` | {t['threshold']:.6f} | {t['f1']:.3f} | "
                     f"{t['accuracy']:.3f} | {acc_all:.3f} |")
    lines += ["", "## Pairwise agreement of members (share of rows decided the same way)", "",
              "| | " + " | ".join(members) + " |", "|---|" + "---|" * len(members)]
    for a in members:
        cells = []
        for b in members:
            same = sum(v[a] == v[b] for v in diff["votes"]) / len(rows) if rows else 0.0
            cells.append(f"{same:.3f}")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    lines += ["", "## Difficulty by label", "", "| label | easy | medium | hard |", "|---|---|---|---|"]
    for lab in LABELS:
        c = Counter(d for d, l in zip(diff["difficulty"], labels) if l == lab)
        lines.append(f"| {lab} | {c['easy']} | {c['medium']} | {c['hard']} |")
    lines += [f"| all | {dist['easy']} | {dist['medium']} | {dist['hard']} |", "", "## Hard paraphrases", "",
              *hard_paraphrases.report_lines(diff["hard_paraphrases"]),
              "", "![similarity distributions per label](calibration.png)", ""]
    files = {"reports/calibration.md": "\n".join(lines).encode("utf-8")}

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [*members, held]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7), dpi=80)
    for ax, m in zip(axes.flat, names):
        for lab in LABELS:
            vals = [s for s, l in zip(sims["sims"][m], labels) if l == lab]
            ax.hist(vals, bins=30, range=(min(sims["sims"][m] or [0]), 1.0), histtype="step", label=lab)
        ax.axvline(diff["thresholds"][m]["threshold"], color="black", linestyle="--", linewidth=1)
        ax.set_title(m + (" (held out)" if m == held else ""), fontsize=9)
        ax.tick_params(labelsize=7)
    axes.flat[0].legend(fontsize=6)
    fig.suptitle("cosine(query_a, query_b) per label; dashed = calibrated threshold", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    files["reports/calibration.png"] = buf.getvalue()
    return write_files(out_dir, files)


def write_baselines(out_dir: Path, rows: list[dict]) -> tuple[dict[str, str], dict]:
    """Baseline reports. Latency is left out of committed reports: it is the machine's, not the
    benchmark's, and would break byte-identical rebuilds."""
    from pipeline.harness.baselines import BASELINES
    from domains import domain_names
    from pipeline.harness import Report, Row, evaluate
    from pipeline.harness.portable import untimed

    bench = [Row.from_dict(r) for r in rows]
    order = domain_names()  # reports list domains in the sampling matrix order
    files, headline = {}, {}
    for name in ("always_miss", "always_hit", "exact_match"):
        d = untimed(evaluate(BASELINES[name], bench, cache_name=name, domain_order=order).to_dict())
        files[f"reports/baseline_{name}.json"] = (canonical_json(d) + "\n").encode("utf-8")
        files[f"reports/baseline_{name}.md"] = Report(d).to_markdown().encode("utf-8")
        m = d["metrics"]
        headline[name] = {k: (None if m[k]["value"] is None else round(m[k]["value"], 4)) for k in ("precision", "recall", "f1", "fhr", "accuracy")}
    return write_files(out_dir, files), headline


def _sha_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_manifest(datasets) -> dict:
    """Curated sources always; datasets-dir files when a datasets dir is used."""
    files = [{"path": f"sources/curated/{p.name}", "sha256": _sha_file(p), "size": p.stat().st_size}
             for p in sorted(CURATED.glob("*")) if p.is_file()]
    if datasets is None and EXTRACT.is_file():   # the build read the committed extract (domains.corpora.extract)
        files.append({"path": "sources/extract/pairs.jsonl", "sha256": _sha_file(EXTRACT), "size": EXTRACT.stat().st_size})
    corpora: list[str] = []
    if datasets is not None:   # every file of every corpus present, whether this process read it or not
        corpora = sorted(datasets.found())
        quirks = {e["path"]: e["quirks"] for e in datasets.manifest() if e.get("quirks")}
        for entry in datasets.inventory():
            files.append({"path": f"datasets/{entry['path']}", "sha256": entry["sha256"], "size": entry["size"],
                          **({"quirks": quirks[entry["path"]]} if entry["path"] in quirks else {})})
    return {"corpora": corpora, "files": files}


def config_hash() -> str:
    """The sha256 of every file of configs/ as read: a YAML or JSON file by its parsed value (a
    comment or a re-indentation changes no build, so it changes no manifest), any other by its bytes."""
    import json

    from pipeline.core.config import read_yaml

    h = hashlib.sha256()
    for p in sorted(CONFIGS.glob("*")):
        if not p.is_file():
            continue
        raw = p.read_bytes()
        if p.suffix in (".yaml", ".yml"):
            raw = canonical_json(read_yaml(p)).encode("utf-8")
        elif p.suffix == ".json":
            raw = canonical_json(json.loads(raw.decode("utf-8"))).encode("utf-8")
        h.update(p.name.encode() + b"\0" + raw + b"\0")
    return h.hexdigest()


def write_manifest(out_dir: Path, profile: Profile, sources: dict, snapshots: dict, selected: dict,
                   outputs: dict[str, str]) -> dict:
    from domains import all_domains
    from pipeline.harness import HARNESS_VERSION

    methods = Counter()
    for (_, _, m), n in selected["methods"].items():
        methods[m] += n
    manifest = {
        "benchmark": "CacheEval",
        "profile": profile.name,
        "rows": profile.total,
        "splits": dict(profile.splits),
        "config_sha256": config_hash(),
        "generators": {d.name: d.version for d in all_domains()},
        "harness_version": HARNESS_VERSION,
        "models": snapshots,
        "inputs": sources,
        "construction_methods": dict(sorted(methods.items())),
        "outputs": dict(sorted(outputs.items())),
    }
    write_json(out_dir / "manifest.json", manifest)
    return manifest
