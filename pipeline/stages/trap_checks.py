"""The system traps' blocking checks (assets/evaluation.py makes one asset check of each): every row
MISS, every trap present, ids stable and traceable to their source row, each trap's difference
present, the scoring contract held, and the file byte-stable. Each returns (problems, metadata)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from pipeline.stages import traps as tr

Rows = Sequence[Mapping[str, Any]]


def every_row_miss(rows: Rows, bench: Rows) -> tuple[list[str], dict]:
    from pipeline.core.taxonomy import binary_label

    bad = [f"{r['id']}: binary_label {r['binary_label']}" for r in rows if r["binary_label"] != "MISS"]
    bad += [f"{r['id']}: label {r['label']} with {r['verification_method']} derives "
            f"{binary_label(r['label'], r['verification_method'])}" for r in rows
            if binary_label(r["label"], r["verification_method"]) != "MISS"]
    return bad, {"rows": len(rows), "miss": sum(1 for r in rows if r["binary_label"] == "MISS")}


def every_trap_present(rows: Rows, bench: Rows) -> tuple[list[str], dict]:
    n = tr.counts(rows)
    bad = [f"trap {t}: no row (the benchmark has no HIT row it can wrap)" for t, k in n.items() if not k]
    bad += [f"trap {t}: {k} rows, more than {tr.PER_TRAP}" for t, k in n.items() if k > tr.PER_TRAP]
    bad += [f"{r['id']}: domain {r['domain']} is not its trap {tr.trap_of(r)}" for r in rows if r["domain"] != tr.trap_of(r)]
    return bad, {"per_trap": n}


def ids_stable(rows: Rows, bench: Rows) -> tuple[list[str], dict]:
    hits = {r["id"]: r for r in tr.eligible(bench)}
    bad, seen, sources = [], set(), set()
    for r in rows:
        p = r["provenance"]
        if r["id"] != f"trap-{p['trap']}-{p['source_row']}":
            bad.append(f"{r['id']}: not trap-<trap>-<source row id>")
        if r["id"] in seen:
            bad.append(f"{r['id']}: duplicate id")
        if p["source_row"] not in hits:
            bad.append(f"{r['id']}: source row {p['source_row']} is not an EQUIV/PARA_SAFE HIT row of the benchmark")
        if p["source_row"] in sources:
            bad.append(f"{r['id']}: source row {p['source_row']} wrapped twice")
        seen.add(r["id"])
        sources.add(p["source_row"])
    if [r["id"] for r in rows] != sorted(seen):
        bad.append("rows not sorted by id")
    return bad, {"ids": len(seen)}


def _differs(r: Mapping[str, Any], src: Mapping[str, Any]) -> bool:
    t = tr.trap_of(r)
    if t in ("other_user", "other_tenant"):
        key = "user" if t == "other_user" else "tenant"
        other = "tenant" if key == "user" else "user"
        return r.get(f"{key}_a") != r.get(f"{key}_b") and r.get(f"{other}_a") == r.get(f"{other}_b") is not None
    if t == "other_system_prompt":
        return r["system_prompt_a"] != r["system_prompt_b"]
    if t == "other_tools":
        return not (tr.tool_names(r["tools_a"]) & tr.tool_names(r["tools_b"]))
    if t == "other_tool_choice":
        return r.get("tool_choice_a") != r.get("tool_choice_b") and r["tools_a"] == src["tools_a"]
    if t in ("stored_error", "stored_refusal"):
        return r.get("status_a") == t.split("_")[1]
    if t == "regenerate":
        return r["query_a"] == src["query_a"] and r["query_b"] != src["query_b"]
    return r["query_a"] != src["query_a"] and r["query_b"] != src["query_b"]


def difference_present(rows: Rows, bench: Rows) -> tuple[list[str], dict]:
    by_id = {r["id"]: r for r in bench}
    bad = [f"{r['id']}: the {tr.trap_of(r)} difference is missing" for r in rows
           if r["provenance"]["source_row"] in by_id and not _differs(r, by_id[r["provenance"]["source_row"]])]
    return bad, {"checked": len(rows)}


def scoring_contract(rows: Rows, bench: Rows) -> tuple[list[str], dict]:
    from pipeline.harness.contract import scoring_problems

    problems = scoring_problems(enumerate(rows, 1))
    return [p.render(tr.FILE)[len("error: "):] for p in problems], {"problems": len(problems)}


def byte_stable(rows: Rows, bench: Rows) -> tuple[list[str], dict]:
    """The suite rebuilt from the benchmark in reverse order gives the same bytes."""
    from pipeline.core.hashing import sha256_text
    from pipeline.core.writer import jsonl_bytes

    first, again = jsonl_bytes(list(rows)), jsonl_bytes(tr.build_traps(list(reversed(list(bench)))))
    sha = sha256_text(first.decode("utf-8"))
    return ([] if first == again else ["a rebuild from the benchmark in another order gives other bytes"]), {"sha256": sha}


CHECKS: dict[str, tuple[str, Callable[[Rows, Rows], tuple[list[str], dict]]]] = {
    "trap_every_row_miss": ("Every trap row is MISS, as its label and verification method derive.", every_row_miss),
    "trap_every_trap_present": ("Every one of the nine traps has rows (at most PER_TRAP), its domain its trap.",
                                every_trap_present),
    "trap_ids_stable": ("Ids are trap-<trap>-<source row id>, unique, sorted; each source a HIT row, used once.",
                        ids_stable),
    "trap_difference_present": ("Each row differs from its source row in what its trap says.", difference_present),
    "trap_scoring_contract": ("Every row follows the scoring contract (cacheeval eval reads the file).",
                              scoring_contract),
    "trap_byte_stable": ("Rebuilt from the benchmark in reverse order, the suite has the same bytes.", byte_stable),
}
