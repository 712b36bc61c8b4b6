"""One quarter of the adversarial slice, materialised for real on the embedded default (once per
session, in process): the committed 2026-Q4 files, byte for byte (`cacheeval check`, run under another
hash seed and time zone by tests/e2e/test_committed_outputs.py, rebuilds them too); the slice shares
nothing with the main benchmark, is a benchmark file like any other, and real user caches as targets (one that hits everything, one that
never false-hits) behave as the blocking checks say."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from domains import domain_names
from pipeline.core.paths import OUTPUTS, PROJECT_ROOT
from pipeline.evolving import slicing as ev
from pipeline.evolving import checks

pytestmark = pytest.mark.slow
QUARTER = "2026-Q4"
FILES = (f"{QUARTER}.jsonl", f"{QUARTER}.md", "manifest.json")


@pytest.fixture(scope="session")
def quarter(tmp_path_factory) -> dict:
    """2026-Q4 against the default target, written into a folder of its own; the scored candidates kept.
    As `cacheeval check` does, the rebuild records the code the committed slice was made with."""
    from pipeline.app.cli.evolve import run_evolve

    out = tmp_path_factory.mktemp("evolving")
    made = json.loads((OUTPUTS / "evolving" / "manifest.json").read_text(encoding="utf-8"))["quarters"][QUARTER]
    result = run_evolve(QUARTER, out_dir=out, values=("evolving_scored",),
                        made_with_code=made["target"]["code_sha256"])
    return {"out": out, "scored": result["values"]["evolving_scored"]}


def test_the_committed_slice_is_this_rebuild(quarter):
    # What `cacheeval check` compares too; tests/e2e/test_committed_outputs.py runs that check under
    # another hash seed and time zone, so the slice is the same bytes under both environments.
    for name in FILES:
        assert (OUTPUTS / "evolving" / name).read_bytes() == (quarter["out"] / name).read_bytes(), name


def test_the_slice_holds_exactly_50_rows_that_fool_the_named_target_and_none_of_the_main_benchmark(quarter):
    rows = ev.read_rows(quarter["out"] / f"{QUARTER}.jsonl")
    main = ev.read_rows(OUTPUTS / "cachebench.jsonl")
    assert len(rows) == 50
    assert not {r["id"] for r in rows} & {r["id"] for r in main}
    assert not ev.used_requests(rows) & ev.used_requests(main)
    per_domain = {d: sum(r["domain"] == d for r in rows) for d in domain_names()}
    assert max(per_domain.values()) <= ev.load_config().domain_cap
    for r in rows:
        target = r["provenance"]["evolving"]["target"]
        assert (r["label"], r["binary_label"], target["name"], target["verdict"]["decision"]) == (
            "ADVERSARIAL", "MISS", "verified", "HIT")
        assert r["provenance"]["evolving"]["quarter"] == QUARTER and r["id"].split("-")[2] == "2026q4"
    report = (quarter["out"] / f"{QUARTER}.md").read_text(encoding="utf-8")
    assert "## Fool rate of every reference cache on the slice" in report
    assert "| all | 50 | " in report and "1.000 (50/50) |\n" in report  # the target: fooled by every row


def test_only_the_candidates_that_fool_the_target_are_graded(quarter):
    # A grade reads the row's own two requests only, and only a row that fools the target can enter
    # the slice, so the other candidates are never embedded by e5, L3 and WordLlama.
    scored = quarter["scored"]
    fooled = {rid for rid, (hit, _) in scored["target_decisions"].items() if hit}
    assert fooled and len(fooled) < len(scored["rows"])
    for r in scored["rows"]:
        graded = r["difficulty"] is not None
        assert graded == (r["id"] in fooled), r["id"]
        assert bool(r["provenance"]["difficulty_votes"]) == graded
        if graded:
            assert r["difficulty"] in ("easy", "medium", "hard") and len(r["provenance"]["difficulty_votes"]) == 5


def test_the_slice_is_a_benchmark_file_like_any_other(quarter, tmp_path, capsys):
    from pipeline.app.cli import main

    bench = quarter["out"] / f"{QUARTER}.jsonl"
    assert main(["validate", str(bench)]) == 0
    report = tmp_path / "always_hit.json"
    assert main(["eval", "--bench", str(bench), "--baseline", "always_hit", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["metrics"]["fhr"]["value"] == 1.0


def test_a_target_that_hits_everything_fills_the_slice_and_one_that_never_false_hits_fails_with_the_numbers(
        quarter, tmp_path):
    from pipeline.core import settings
    from pipeline.core.writer import write_jsonl
    from pipeline.evolving import scoring as sc

    scored = quarter["scored"]
    bench_file = tmp_path / "candidates.jsonl"
    write_jsonl(bench_file, scored["rows"])
    cfg = ev.load_config()
    for name, body, fooled in (("always", "True", len(scored["rows"])), ("never", "False", 0)):
        module = tmp_path / f"{name}.py"
        module.write_text("from pipeline.harness import Verdict\n\n\ndef cache(row):\n"
                          f"    return Verdict(is_hit={body}, confidence=None)\n")
        target = sc.resolve(f"module:{module}", OUTPUTS / "cachebench.jsonl")
        hits = sc.decisions(target, bench_file, strict=False)   # candidates the default target did not fall for are ungraded
        rows = [ev.with_verdict(r, target.identity, hits[r["id"]]) for r in scored["rows"]]
        choice = ev.choose_slice(rows, {k: h for k, (h, _) in hits.items()}, cfg, QUARTER,
                                 target.identity["behaviour_sha256"], domain_names())
        chosen = ev.slice_rows(rows, choice, QUARTER, domain_names())
        chosen = sc.grade(chosen, OUTPUTS, settings.cache_root())   # as the asset grades what fools its target
        value = {"quarter": QUARTER, "rows": chosen, "choice": choice, "target": target.identity,
                 "short": ev.shortfall(choice, cfg, target.identity["name"]),
                 "candidates": {r["provenance"]["evolving"]["candidate_id"]: scored["by_id"][
                     r["provenance"]["evolving"]["candidate_id"]] for r in chosen}}
        results = {n: check(value, cfg, OUTPUTS / "cachebench.jsonl", OUTPUTS / "evolving")[0]
                   for n, check in checks.SLICE_CHECKS.items()}
        assert choice.fooled == fooled
        if name == "always":
            assert len(chosen) == 50 and not any(results.values()), results
        else:
            n = len(scored["rows"])
            assert results["slice_rows_exact"] == [
                f"the target module:{module} was fooled by 0 of {n:,} verified candidates; the slice is 50 short"]
            assert chosen == []
