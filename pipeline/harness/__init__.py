"""The scoring harness: load a benchmark file, ask a cache for a verdict on every row, report.

Standard library only, so that anyone can score a cache without installing the pipeline (a test
imports every module of this package in a fresh interpreter and checks that no heavy library came
with it). One module per job, read in this order:

- `interface`: the published Pair and Request (what a cache receives: the two requests and an
  opaque key, never a label), Verdict (what it returns), the benchmark Row (what the scorer holds),
  ROW_FIELDS, HARNESS_VERSION;
- `jsonl` (the one strict reader of JSONL files: regular files, UTF-8 by line, unique keys, finite
  numbers, a depth limit), `schema` (configs/row.schema.json applied with the standard library) and
  `contract` (the row contract the build and `cacheeval validate` check, built on both);
- `load`: a benchmark JSONL file (and a withheld-labels file) read as a stream and checked row by
  row, every problem on its own file:line line: into Rows, or into a Bench that keeps only what
  scoring needs and reads the requests again as a cache decides;
- `evaluation`: `decide` (asks the cache on every Pair, times it and checks each verdict) and
  `score` (joins the labels to the decisions), apart;
- `metrics`: confusion matrix, Wilson intervals, breakdowns, latency, cost, the confidence sweep;
- `report`: the Report object and its Markdown rendering;
- `baselines` (reference caches) and `cache` (the evaluation-result cache, keyed on the scored
  cache's import closure from `closure`) build on these;
- `isolated` and `worker` (a user's cache decides in a worker process, in the bubblewrap jail of
  `jail` where available, with a timeout per decision),
- `scoring` (one cache scored through the result cache: `cacheeval eval` and the build's reference
  reports), `stateful` (store/lookup caches under the isolated and shared protocols), `stream` and
  `stream_scores` (such caches serving a seeded workload of every row's requests: eviction, feedback,
  answer instability), `bound` (a declared error bound tested by Clopper–Pearson), `sweep` (a threshold
  grid from per-row confidences), `compare` (McNemar's exact test on two reports) and
  `references/` (real caches by name: GPTCache, the verified cache; their libraries load lazily).
"""
from __future__ import annotations

from pipeline.harness.evaluation import evaluate
from pipeline.harness.interface import (HARNESS_VERSION, REQUEST_FIELDS, ROW_FIELDS, Pair, Request, Row, Verdict,
                                        VerdictError)
from pipeline.harness.load import load_bench
from pipeline.harness.metrics import wilson
from pipeline.harness.report import Report

__all__ = ["HARNESS_VERSION", "REQUEST_FIELDS", "ROW_FIELDS", "Pair", "Request", "Row", "Verdict", "VerdictError",
           "Report", "load_bench", "evaluate", "wilson"]
