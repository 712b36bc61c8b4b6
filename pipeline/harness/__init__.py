"""The scoring harness: load a benchmark file, ask a cache for a verdict on every row, report.

Standard library only, so that anyone can score a cache without installing the pipeline (a test
imports every module of this package in a fresh interpreter and checks that no heavy library came
with it). One module per job, read in this order:

- `interface`: the published Row and Verdict (what a cache receives and returns), ROW_FIELDS,
  HARNESS_VERSION;
- `jsonl` (the one strict reader of JSONL files: regular files, UTF-8 by line, unique keys, finite
  numbers, a depth limit), `schema` (configs/row.schema.json applied with the standard library) and
  `contract` (the row contract the build and `cacheeval validate` check, built on both);
- `load`: a benchmark JSONL file (and a withheld-labels file) into Rows, after the contract check,
  every problem on its own file:line line;
- `evaluation`: the loop that asks the cache, times it and checks each verdict;
- `metrics`: confusion matrix, Wilson intervals, breakdowns, latency, cost, the confidence sweep;
- `report`: the Report object and its Markdown rendering;
- `baselines` (reference caches) and `cache` (the evaluation-result cache, keyed on the scored
  cache's import closure from `closure`) build on these;
- `scoring` (one cache scored through the result cache: `cacheeval eval` and the build's reference
  reports), `stateful` (store/lookup caches under the isolated and shared protocols), `stream` and
  `stream_scores` (such caches serving a seeded workload of every row's requests: eviction, feedback,
  answer instability), `bound` (a declared error bound tested by Clopper–Pearson), `sweep` (a threshold
  grid from per-row confidences), `compare` (McNemar's exact test on two reports) and
  `references/` (real caches by name: GPTCache, the verified cache; their libraries load lazily).
"""
from __future__ import annotations

from pipeline.harness.evaluation import evaluate
from pipeline.harness.interface import HARNESS_VERSION, ROW_FIELDS, Row, Verdict, VerdictError
from pipeline.harness.load import load_bench
from pipeline.harness.metrics import wilson
from pipeline.harness.report import Report

__all__ = ["HARNESS_VERSION", "ROW_FIELDS", "Row", "Verdict", "VerdictError", "Report", "load_bench",
           "evaluate", "wilson"]
