"""outputs/evolving/<quarter>.md and the folder's manifest.json: what each stage kept and dropped
(by reason), what the slice is made of (rows per domain, operator and construction method, against
the caps), and how often every reference cache is fooled, on the verified candidates and on the
slice, overall, by domain and by operator. Every candidate is a MISS, so a fool (a false hit) is a
HIT decision and the fool rate is the false-hit rate. No timings: a rebuild gives the same bytes."""
from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

MANIFEST = "manifest.json"


def _rate(hits: int, n: int) -> str:
    return "–" if n == 0 else f"{hits / n:.3f} ({hits}/{n})"


def _table(title: str, keys: Sequence[str], groups: Mapping[str, Sequence[str]], refs: Sequence[str],
           decisions: Mapping[str, Mapping[str, tuple]]) -> list[str]:
    lines = [f"| {title} | rows | " + " | ".join(refs) + " |", "|---|---:|" + "---|" * len(refs)]
    for key in keys:
        ids = groups.get(key, ())
        cells = [_rate(sum(1 for i in ids if decisions[r][i][0]), len(ids)) for r in refs]
        lines.append(f"| {key} | {len(ids)} | " + " | ".join(cells) + " |")
    return lines + [""]


def fool_tables(rows: Sequence[Mapping[str, Any]], decisions: Mapping[str, Mapping[str, tuple]],
                domain_order: Sequence[str], key_of=lambda r: r["id"]) -> list[str]:
    """Fool rates of every reference on `rows`: overall, by domain, by domain/operator."""
    refs = list(decisions)
    by_domain, by_op = defaultdict(list), defaultdict(list)
    for r in rows:
        by_domain[r["domain"]].append(key_of(r))
        by_op[f"{r['domain']} / {r['provenance']['evolving']['operator']}"].append(key_of(r))
    domains = [d for d in domain_order if d in by_domain]
    ops = sorted(by_op, key=lambda k: (domain_order.index(k.split(" / ")[0]), k))
    return (_table("all", ["all"], {"all": [key_of(r) for r in rows]}, refs, decisions)
            + _table("domain", domains, by_domain, refs, decisions)
            + _table("domain / operator", ops, by_op, refs, decisions))


def composition(rows: Sequence[Mapping[str, Any]], domain_order: Sequence[str], limits: Mapping[str, Any]) -> list[str]:
    """The slice's rows per domain, per operator and per construction method, with the caps
    (`limits`: domain_cap, max_domain_share, operator_cap, max_operator_share, min_domains) and the
    fool pool (`limits`: fooled, fooled_domains)."""
    domains = Counter(r["domain"] for r in rows)
    ops = Counter(r["provenance"]["evolving"]["operator"] for r in rows)
    methods = Counter(r["construction_method"] for r in rows)
    lines = ["## What the slice is made of", "",
             f"The target was fooled by {limits['fooled']:,} verified candidates in {limits['fooled_domains']} domains. "
             f"The slice: {len(domains)} domains (at least {limits['min_domains']}, min_domains), at most {limits['domain_cap']} rows "
             f"each (max_domain_share {limits['max_domain_share']:g}); {len(ops)} operators, at most "
             f"{limits['operator_cap']} rows each (max_operator_share {limits['max_operator_share']:g}; an operator is "
             f"a perturbation operator, a mining rule or a construction method); {len(methods)} construction methods.", ""]
    for title, counts, keys in (("domain", domains, [d for d in domain_order if d in domains]),
                                ("operator", ops, sorted(ops, key=lambda k: (-ops[k], k))),
                                ("construction method", methods, sorted(methods, key=lambda k: (-methods[k], k)))):
        lines += [f"| {title} | rows |", "|---|---:|"] + [f"| {k} | {counts[k]} |" for k in keys] + [""]
    return lines


def fool_summary(rows: Sequence[Mapping[str, Any]], decisions: Mapping[str, Mapping[str, tuple]],
                 key_of=lambda r: r["id"]) -> dict[str, dict]:
    """{reference: {fooled, rows, rate}} on `rows` (for asset metadata and the manifest)."""
    out = {}
    for ref, dec in decisions.items():
        hits = sum(1 for r in rows if dec[key_of(r)][0])
        out[ref] = {"fooled": hits, "rows": len(rows), "rate": round(hits / len(rows), 4) if rows else None}
    return out


def render(quarter: str, stages: Sequence[tuple[str, int, Mapping[str, int]]], target: Mapping[str, Any],
           candidates: Sequence[Mapping[str, Any]], slice_rows: Sequence[Mapping[str, Any]],
           decisions: Mapping[str, Mapping[str, tuple]], domain_order: Sequence[str], sources: Mapping[str, str],
           limits: Mapping[str, Any]) -> str:
    """The quarter's report. `stages`: (stage, kept, {drop reason: count}) in order; `decisions`:
    {reference: {candidate id: (HIT?, confidence)}}; slice rows name their candidate id; `limits`: the
    caps (`composition`)."""
    lines = [f"# Adversarial slice {quarter}", "",
             f"{len(slice_rows)} ADVERSARIAL rows from seeds the main benchmark does not use, each kept because the "
             f"target cache served a wrong answer (a false hit) on it and its label verified. Target: "
             f"`{target['name']}` (code sha256 `{target['code_sha256'][:16]}`, threshold {target['threshold']}).",
             "", "Inputs: " + ", ".join(f"`{k}` sha256 `{v[:16]}`" for k, v in sorted(sources.items())), "",
             "## Stages", "", "| stage | kept | dropped (by reason) |", "|---|---:|---|"]
    for stage, kept, drops in stages:
        why = "; ".join(f"{k} {v:,}" for k, v in sorted(drops.items(), key=lambda kv: (-kv[1], kv[0])) if v) or "–"
        lines.append(f"| {stage} | {kept:,} | {why} |")
    methods = Counter(r["construction_method"] for r in candidates)
    lines += ["", "Verified candidates by construction method: " + ", ".join(
        f"{m} {n:,}" for m, n in sorted(methods.items())) + " (mined pairs need a datasets dir of real traffic, "
        "LM-generated near misses a language model)."]
    lines += [""] + composition(slice_rows, domain_order, limits)
    lines += ["## Fool rate of every reference cache on the slice", "",
              "A fool is a HIT on a MISS row (every row is ADVERSARIAL): the false-hit rate.", ""]
    lines += fool_tables(slice_rows, decisions, domain_order, key_of=lambda r: r["provenance"]["evolving"]["candidate_id"])
    lines += ["## Fool rate of every reference cache on the verified candidates", ""]
    lines += fool_tables(candidates, decisions, domain_order)
    return "\n".join(lines).rstrip() + "\n"


def manifest_bytes(folder: Path, quarter: str, entry: Mapping[str, Any]) -> bytes:
    """The folder's manifest.json with this quarter's entry (target identity, inputs, files) set."""
    path = Path(folder) / MANIFEST
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"quarters": {}}
    data.setdefault("quarters", {})[quarter] = dict(entry)
    data["quarters"] = dict(sorted(data["quarters"].items()))
    return (json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


def slice_files(folder: Path, scored: Mapping[str, Any], chosen: Mapping[str, Any], domain_order: Sequence[str],
                bench: Path, cfg: Any) -> dict[str, bytes]:
    """<quarter>.jsonl, <quarter>.md and manifest.json (this quarter's entry set), as bytes. `cfg`: the
    EvolvingConfig (its caps)."""
    from pipeline.core.hashing import file_sha256
    from pipeline.core.writer import jsonl_bytes
    from pipeline.stages.assembly import config_hash
    from pipeline.evolving.slicing import earlier_slices

    quarter, choice = chosen["quarter"], chosen["choice"]
    data = jsonl_bytes(chosen["rows"])
    sources = {"cachebench.jsonl": file_sha256(bench)}
    sources.update({f"evolving/{p.name}": file_sha256(p) for p in earlier_slices(folder, quarter)})
    stages = [("near misses generated (ADVERSARIAL, every domain)", scored["generated"], {}),
              ("held out (seeds unused by the main benchmark and earlier quarters)", len(scored["candidates"]), scored["drops"]),
              ("verified (deterministic verifiers and policies)", len(scored["verified"]), scored["verify_drops"]),
              (f"fooled the target {chosen['target']['name']}", chosen["choice"].fooled, {}),
              ("in the slice (domains taking turns; in each, methods, then operators)", len(chosen["rows"]),
               {"shares_a_request_with_a_row_taken_before": choice.shared, "beyond_domain_cap": choice.domain_capped,
                "beyond_operator_cap": choice.operator_capped, "beyond_rows": choice.usable - len(chosen["rows"])})]
    limits = {"domain_cap": cfg.domain_cap, "max_domain_share": cfg.max_domain_share, "operator_cap": cfg.operator_cap,
              "max_operator_share": cfg.max_operator_share, "min_domains": cfg.min_domains,
              "fooled": choice.fooled, "fooled_domains": choice.domains}
    report = render(quarter, stages, chosen["target"], scored["rows"], chosen["rows"], scored["references"],
                    domain_order, sources, limits).encode("utf-8")
    entry = {"target": chosen["target"], "rows": len(chosen["rows"]), "config_sha256": config_hash(),
             "inputs": sources, "files": {f"{quarter}.jsonl": hashlib.sha256(data).hexdigest(),
                                          f"{quarter}.md": hashlib.sha256(report).hexdigest()}}
    return {f"{quarter}.jsonl": data, f"{quarter}.md": report,
            MANIFEST: manifest_bytes(folder, quarter, entry)}
