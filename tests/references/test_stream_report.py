"""outputs/reports/stream.{md,json,png} (pipeline/references/stream_report.py): the table, GPTCache at
equal error, the findings and byte-stable files, from stream runs of hand-written caches (no model)."""
from __future__ import annotations

import json

from harness_doubles import pair
from pipeline.harness.stream import StreamConfig, run_stream
from pipeline.references import stream_report as sr
from stream_doubles import CarefulBounded, CarelessBounded, QueryStore, repeated_rows


def _result() -> dict:
    rows = repeated_rows(30) + [pair(31 + i, "MISS", f"What is {i} times 9?", f"What is {i} times 8?")
                                for i in range(10)]
    config = StreamConfig(gap=3, orders=2)
    runs = {"bounded@0.2": run_stream(CarefulBounded(), rows, config, cache_name="bounded@0.2"),
            "careless@0.01": run_stream(CarelessBounded(), rows, config, cache_name="careless@0.01"),
            "gptcache-like@1": run_stream(QueryStore(), rows, config, cache_name="gptcache-like@1"),
            "gptcache-like@2": run_stream(CarelessBounded(), rows, config, error_bound=None, cache_name="g2")}
    runs["gptcache-like@2"]["bound"]["delta"] = None       # as an undeclared cache
    table = [sr._line(n, r) for n, r in runs.items()]
    first = runs["bounded@0.2"]["protocol"]
    return {"workload": {k: first[k] for k in ("gap", "capacity", "eviction", "orders", "seed", "seeds",
                                               "requests_per_order", "rows", "realised_gap")},
            "table": table, "equal_error": sr.equal_error(table), "findings": sr.findings(table),
            "runs": {n: sr._committed(r) for n, r in runs.items()}, "domains": ["math"],
            "curves": {n: [o["curve"] for o in r["orders"]] for n, r in runs.items()}}


def test_equal_error_and_findings_read_the_table():
    table = [{"cache": "v@0.05", "delta": 0.05, "served": 0, "lookups": 100, "explorations": 99, "hit_rate": 0.0,
              "error_rate": None, "upper": None, "verdict": "no served hits"},
             {"cache": "w@0.05", "delta": 0.05, "served": 40, "lookups": 100, "explorations": 10, "hit_rate": 0.4,
              "error_rate": 0.1, "upper": 0.2, "verdict": "exceeded"},
             {"cache": "gptcache-a", "delta": None, "served": 50, "lookups": 100, "hit_rate": 0.5, "error_rate": 0.3,
              "upper": 0.35, "verdict": None},
             {"cache": "gptcache-b", "delta": None, "served": 20, "lookups": 100, "hit_rate": 0.2, "error_rate": 0.04,
              "upper": 0.1, "verdict": None},
             {"cache": "gptcache-c", "delta": None, "served": 30, "lookups": 100, "hit_rate": 0.3, "error_rate": 0.08,
              "upper": 0.15, "verdict": None}]
    eq = {e["cache"]: e for e in sr.equal_error(table)}
    assert eq["v@0.05"]["at_error"] is None and eq["v@0.05"]["at_delta"]["cache"] == "gptcache-b"
    assert eq["w@0.05"]["at_error"]["cache"] == "gptcache-c"          # the best hit rate at <= 0.1 error
    text = sr.findings(table)
    assert "served no hit in 100 lookups (99 explorations" in text[0] and "vacuously" in text[0]
    assert "served 40 of 100 lookups" in text[1] and "exceeded" in text[1]
    assert "lowest error rate of GPTCache here is 0.0400 (gptcache-b" in text[2]


def test_stream_files_are_byte_stable_and_hold_no_timings():
    files = sr.stream_files(_result())
    again = sr.stream_files(_result())
    assert set(files) == {"reports/stream.md", "reports/stream.json", "reports/stream.png"}
    assert files == again
    data = json.loads(files["reports/stream.json"])
    assert "curves" not in data
    for run in data["runs"].values():
        assert "timing" not in run and all("curve" not in o for o in run["orders"])
    md = files["reports/stream.md"].decode("utf-8")
    assert "| careless@0.01 | 0.01 |" in md and "exceeded" in md and "## GPTCache at equal error" in md
    assert files["reports/stream.png"][:8] == b"\x89PNG\r\n\x1a\n"
