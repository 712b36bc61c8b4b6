"""The system traps (#29 item 4): built from the benchmark's HIT rows, every row MISS, each trap
present with its difference, ids stable, the file byte-stable and the committed one reproduced; the
checks fail on a broken suite; per-trap scoring of a real cache."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.writer import jsonl_bytes
from pipeline.harness import evaluate, load_bench
from pipeline.harness.stream import StreamConfig, run_stream
from pipeline.references.trap_report import _per_trap_isolated, _per_trap_stream
from pipeline.stages import trap_checks as tc
from pipeline.stages import traps as tr

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "outputs" / "cachebench.jsonl"
COMMITTED = ROOT / "outputs" / tr.FILE


@pytest.fixture(scope="module")
def bench() -> list[dict]:
    return [json.loads(line) for line in BENCH.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def suite(bench) -> list[dict]:
    return tr.build_traps(bench)


def test_every_check_passes_and_every_trap_is_there(suite, bench):
    for name, (_, fn) in tc.CHECKS.items():
        problems, _ = fn(suite, bench)
        assert problems == [], name
    assert tr.counts(suite) == {t: tr.PER_TRAP for t in tr.TRAPS}
    assert {tr.TRAPS[t][0] for t in tr.counts(suite)} == set(tr.GROUPS)
    r = next(r for r in suite if r["domain"] == "stored_refusal")
    assert r["status_a"] == "refusal" and r["provenance"]["source_row"] in r["id"]
    assert list(r)[:22] == list(bench[0])[:22] and list(r)[-2:] == ["licence", "provenance"]


def test_each_trap_differs_from_its_source_in_its_own_field_only(suite, bench):
    by_id = {r["id"]: r for r in bench}
    requests = ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a", "tools_b")
    changed = {"other_user": set(), "other_tenant": set(), "stored_error": set(), "stored_refusal": set(),
               "other_tool_choice": set(), "other_system_prompt": {"system_prompt_a", "system_prompt_b"},
               "other_tools": {"tools_b"}, "regenerate": {"query_b"}, "fresh_value": {"query_a", "query_b"}}
    for r in suite:
        src = by_id[r["provenance"]["source_row"]]
        assert src["binary_label"] == "HIT" and r["binary_label"] == "MISS"
        assert {k for k in requests if r[k] != src[k]} == changed[r["domain"]], r["id"]


def test_the_suite_is_deterministic_and_reproduces_the_committed_file(bench, suite):
    assert jsonl_bytes(tr.build_traps(list(reversed(bench)))) == jsonl_bytes(suite)
    code = ("import json,sys; from pipeline.stages.traps import build_traps; from pipeline.core.writer import jsonl_bytes;"
            f"rows=[json.loads(l) for l in open({str(BENCH)!r}, encoding='utf-8')];"
            "sys.stdout.buffer.write(jsonl_bytes(build_traps(rows)))")
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout
        assert out == jsonl_bytes(suite)
    if COMMITTED.is_file():   # committed with the suite; the lead rebuilds it with the benchmark
        assert COMMITTED.read_bytes() == jsonl_bytes(suite)


def test_the_checks_fail_on_a_broken_suite(suite, bench):
    broken = [dict(r) for r in suite]
    broken[0] = {**broken[0], "binary_label": "HIT", "label": "EQUIV", "verification_method": "rubric"}
    assert tc.every_row_miss(broken, bench)[0]
    user = next(i for i, r in enumerate(suite) if r["domain"] == "other_user")
    broken = [dict(r) for r in suite]
    broken[user] = {**broken[user], "user_b": broken[user]["user_a"]}
    assert tc.difference_present(broken, bench)[0] == [f"{suite[user]['id']}: the other_user difference is missing"]
    assert tc.ids_stable(suite + [suite[0]], bench)[0]
    assert tc.every_trap_present([r for r in suite if r["domain"] != "regenerate"], bench)[0] == [
        "trap regenerate: no row (the benchmark has no HIT row it can wrap)"]
    assert tc.scoring_contract([{**suite[0], "status_a": "broken"}], bench)[0]


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


class ScopeBlindExact:
    """A store/lookup cache that serves a stored response to the same query text up to case, spaces
    and punctuation (it reads the query only, as GPTCache's default pre-processing does)."""

    def reset(self):
        self.entries = {}

    def store(self, request, response):
        self.entries[norm(request.query)] = response

    def lookup(self, request):
        return self.entries.get(norm(request.query))


def test_per_trap_scoring_isolated_and_stream(suite, tmp_path):
    path = tmp_path / "traps.jsonl"
    path.write_bytes(jsonl_bytes(suite))
    rows = load_bench(path, strict=False)
    report = evaluate(lambda p: norm(p.query_a) == norm(p.query_b), rows).to_dict()
    per = _per_trap_isolated(report, list(tr.TRAPS))
    # the pair traps keep B's wording of a HIT pair: a query-only rule hits where the source was EQUIV up to case
    assert per["all"]["n"] == len(suite) and per["all"]["false_hits"] == sum(per[t]["false_hits"] for t in tr.TRAPS)
    assert per["regenerate"]["false_hits"] == 0   # B is reworded: "try again: ..."
    assert per["other_user"]["false_hits"] > 0 and per["other_user"]["fhr"] == per["other_user"]["false_hits"] / 24
    stream = _per_trap_stream(run_stream(ScopeBlindExact(), rows, StreamConfig(orders=2)), list(tr.TRAPS))
    assert stream["other_tenant"]["false_hits"] > 0 and stream["regenerate"]["false_hits"] == 0
    assert stream["all"]["false_hits"] == sum(stream[t]["false_hits"] for t in tr.TRAPS)


def test_a_small_benchmark_shares_its_rows_out_so_every_trap_has_some(bench):
    import random

    small = random.Random(1).sample(bench, 250)   # about the smoke profile's size
    suite = tr.build_traps(small)
    assert all(0 < n < tr.PER_TRAP for n in tr.counts(suite).values())
    assert all(fn(suite, small)[0] == [] for _, fn in tc.CHECKS.values())


def test_check_compares_the_trap_files_though_the_manifest_does_not_list_them(tmp_path):
    from pipeline.app.cli.materialize import UNLISTED_OUTPUTS, compare_outputs

    committed, rebuilt = tmp_path / "committed", tmp_path / "rebuilt"
    for folder in (committed, rebuilt):
        (folder / "traps").mkdir(parents=True)
        (folder / "manifest.json").write_text('{"outputs": {}}', encoding="utf-8")
    assert compare_outputs(committed, rebuilt) == []          # neither has them: a profile without traps
    (rebuilt / tr.FILE).write_text('{"id": "trap-x-1"}\n', encoding="utf-8")
    assert [(d.file, d.detail) for d in compare_outputs(committed, rebuilt)] == [
        (tr.FILE, "missing from the committed outputs")]
    (committed / tr.FILE).write_text('{"id": "trap-x-1"}\n', encoding="utf-8")
    assert compare_outputs(committed, rebuilt) == [] and tr.FILE in UNLISTED_OUTPUTS
    (committed / tr.FILE).write_text('{"id": "trap-x-2"}\n', encoding="utf-8")
    assert [d.file for d in compare_outputs(committed, rebuilt)] == [tr.FILE]
