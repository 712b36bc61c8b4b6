"""outputs/reports/references.*: the table is read from the harness's own reports, committed files
hold no timings, and the same result renders the same bytes. (The real scoring of every reference
on v1.1 runs in `cacheeval check`: tests/e2e/test_committed_outputs.py.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core.config import load_profiles
from pipeline.harness import evaluate, load_bench
from pipeline.harness.baselines import get_baseline
from pipeline.harness.sweep import grid_sweep
from pipeline.references import reports as R

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "data" / "bench.jsonl"


def _result() -> dict:
    rows = load_bench(BENCH)
    domains = sorted({r.domain for r in rows})
    hit = evaluate(get_baseline("always_hit"), rows, cache_name="a", decisions=True).to_dict()
    hit["protocol"] = {"name": "shared", "summary": "s", "store_seconds": 1.234,
                       "wrong_entry_hits": {"total": 2, "on_hit_rows": 1, "on_miss_rows": 1, "ids": []}}
    exact = evaluate(get_baseline("exact_match"), rows, cache_name="b", decisions=True).to_dict()
    table = [R._row_of("always_hit (shared)", "all", hit, domains), R._row_of("exact (isolated)", "all", exact, domains)]
    table[0]["wrong_entry_hits"] = 2
    oof = {k: exact[k] for k in ("bench", "metrics", "by_domain", "by_miss_label")}
    verified = {"settings": {"threshold": 0.5}, "features": ["f1", "f2"], "dev": oof, "test": oof,
                "out_of_fold": {"nested": oof, "pooled": oof, "nested_thresholds": [0.4, 0.5]}}
    return {"table": table, "sweep": grid_sweep(hit["decisions"], (0.5, 0.9)),
            "runs": {"always_hit (shared)": R.untimed(hit)}, "verified": verified,
            "specification": R.SPECIFICATION, "domains": domains}


def test_rows_come_from_the_harness_report():
    res = _result()
    rows = load_bench(BENCH)
    misses = [r for r in rows if r.binary_label == "MISS"]
    adversarial = [r for r in misses if r.label == "ADVERSARIAL"]
    top = res["table"][0]
    assert top["fhr"] == 1.0 and top["recall"] == 1.0 and top["n"] == len(rows)
    assert top["adversarial_fhr"] == (1.0 if adversarial else None)
    assert set(top["fhr_by_domain"]) == set(res["domains"])
    exact_fp = sum(get_baseline("exact_match")(r).is_hit for r in misses)
    assert res["table"][1]["fhr"] == exact_fp / len(misses)


def test_committed_files_hold_no_timings_and_are_byte_stable():
    res = _result()
    run = res["runs"]["always_hit (shared)"]
    assert "decisions" not in run and "store_seconds" not in run["protocol"]
    assert all(run["latency_ms"][k] is None for k in R.TIMING_KEYS)
    first, again = R.reference_files(res), R.reference_files(_result())
    assert first == again
    assert sorted(first) == ["reports/references.json", "reports/references.md", "reports/references.png"]
    assert first["reports/references.png"][:8] == b"\x89PNG\r\n\x1a\n"
    md = first["reports/references.md"].decode()
    assert "| always_hit (shared) |" in md and "Wrong-entry hits" in md and "0.682" in md   # the spec's point
    assert json.loads(first["reports/references.json"])["table"][0]["configuration"] == "always_hit (shared)"


def test_a_confidence_moved_in_its_last_bit_leaves_the_committed_report_unchanged():
    # Two machines (AVX-512 and AVX2 kernels) give GPTCache confidences one unit in the last place
    # apart; the committed form must not see it, while the raw harness report does.
    import hashlib
    import math

    from pipeline.harness import Verdict

    def conf(row) -> float:
        return int(hashlib.sha256(f"{row.query_a}\0{row.query_b}".encode()).hexdigest()[:8], 16) / 16 ** 8 * 0.6 + 0.4

    rows = load_bench(BENCH)
    here = evaluate(lambda r: Verdict(conf(r) >= 0.8, conf(r)), rows, cache_name="c", decisions=True).to_dict()
    there = evaluate(lambda r: Verdict(conf(r) >= 0.8, math.nextafter(conf(r), 1.0)), rows, cache_name="c",
                     decisions=True).to_dict()
    assert here["confidence"] != there["confidence"]  # raw thresholds read off the confidences moved
    assert R.untimed(here) == R.untimed(there)
    portable = R.untimed(here)["confidence"]
    assert "distinct_confidences" not in portable and len(portable["sweep"]) == 50
    assert all("threshold" not in (portable[k] or {}) for k in ("recall_at_fhr_le_5pct", "fhr_at_recall_ge_80pct"))
    at_080 = next(p for p in portable["sweep"] if p["threshold"] == 0.8)
    assert at_080["tp"] == here["confusion"]["tp"] and at_080["fp"] == here["confusion"]["fp"]


def test_the_smoke_profile_skips_the_reference_caches():
    profiles = load_profiles()
    assert profiles["smoke"].reference_caches is False
    assert profiles["v1.1"].reference_caches is True and profiles["lifted40"].reference_caches is True


@pytest.mark.slow
@pytest.mark.models
def test_runs_in_worker_processes_give_the_in_process_results(tmp_path, monkeypatch, smoke_cache):
    # The build spreads the reference runs over spawned processes; each run is its own store, so the
    # reports must be those of the same runs made one after another in this process.
    lines = (ROOT / "outputs" / "cachebench.jsonl").read_text(encoding="utf-8").splitlines()[:40]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(smoke_cache))
    monkeypatch.setenv("CACHEEVAL_EVAL_CACHE_DIR", str(tmp_path / "eval"))
    tasks = [("isolated", "gptcache-minilm@0.80"), ("shared", "gptcache-minilm@0.80")]
    monkeypatch.setenv("CACHEEVAL_WORKERS", "1")
    alone = R._run_all(tasks, bench, use_cache=False)
    monkeypatch.setenv("CACHEEVAL_WORKERS", "2")
    pooled = R._run_all(tasks, bench, use_cache=False)
    assert list(pooled) == tasks
    for t in tasks:
        assert R.untimed(pooled[t]) == R.untimed(alone[t])
        assert pooled[t]["decisions"] == alone[t]["decisions"]  # every decision and GPTCache score
    assert pooled[tasks[1]]["protocol"]["name"] == "shared" and pooled[tasks[0]]["bench"]["n"] == 40
