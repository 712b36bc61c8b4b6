"""The stream protocol: the seeded workload, the oracle, the harness's eviction around the cache,
feedback, instability, the counts and the report, and `cacheeval eval --protocol stream` (with
--check-bound and --plot)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_doubles import ExactStore, pair
from pipeline.app.cli import main
from pipeline.harness.stateful import Request, marker
from pipeline.harness.stream import (Oracle, StreamConfig, arrivals, fast_marker, realised_gaps, run_stream,
                                     untimed_stream)
from pipeline.harness.stream_scores import OrderRun, stream_report
from stream_doubles import (CarefulBounded, CarelessBounded, EvictingStore, FirstWordFeedback, QueryStore,
                            repeated_rows)

DOUBLES = str(Path(__file__).resolve().parents[1] / "stream_doubles.py")


def _write_bench(tmp_path: Path, rows: list) -> str:
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), encoding="utf-8")
    return str(path)


# ---- the workload

def test_arrivals_are_seeded_and_hold_every_request_once_a_before_b():
    codes = arrivals(300, seed=4, gap=20)
    assert codes == arrivals(300, seed=4, gap=20)
    assert codes != arrivals(300, seed=5, gap=20)
    assert sorted(codes) == list(range(600))
    pos = {c: i for i, c in enumerate(codes)}
    assert all(pos[2 * r] < pos[2 * r + 1] for r in range(300))
    gaps = realised_gaps(codes)
    assert 15 <= sum(gaps) / len(gaps) <= 25 and min(gaps) >= 1 and max(gaps) <= 45


def test_gap_zero_puts_every_b_right_after_its_a():
    codes = arrivals(50, seed=0, gap=0)
    assert realised_gaps(codes) == [0] * 50
    assert [c & 1 for c in codes] == [0, 1] * 50


# ---- the oracle

def test_oracle_equivalence_identity_hit_rows_transitive_and_policies():
    rows = [pair(1, "HIT", "q one", "q one again"),
            pair(2, "HIT", "q one again", "q one, third form"),                  # linked through row 1's B
            pair(3, "MISS", "q two", "q two changed"),
            pair(4, "MISS", "Send 5 dollars", "Send 5 dollars", label="EQUIV", verification_method="policy_no_cache",
                 verification_payload={"policy": "mutation"}),
            pair(5, "MISS", "my plan", "my plan", label="EQUIV", system_prompt_b="You help Bob.",
                 verification_method="policy_no_cache", verification_payload={"policy": "cross_user"})]
    o = Oracle(rows)
    m = o.markers
    # request codes: 2 x row + side (0 = A, 1 = B)
    assert o.correct(1, m[0]) and o.correct(0, m[1])            # the two requests of a HIT row, both ways
    assert o.correct(3, m[0])                                   # transitively: row 2's B and row 1's A
    assert m[2] == m[1] and o.correct(2, m[1])                  # an identical request (row 2's A is row 1's B)
    assert o.correct(5, m[5])                                   # its own answer
    assert not o.correct(5, m[4]) and not o.correct(5, "junk") and not o.correct(5, None)   # a MISS pair
    assert not o.correct(5, m[0])                               # another row's answer
    assert not o.correct(7, m[6]) and not o.correct(6, m[6])   # mutation: never from a cache, even identical
    assert o.correct(8, m[8]) and not o.correct(9, m[8])        # cross_user: the pair only, not the request


def test_fast_marker_is_the_harness_marker():
    for req in (Request("q"), Request('a"b\\c\n\t\x00é中文😀', 'sys "x"\n'), Request("q", "", [{"role": "user",
                "content": "hi"}], [{"name": "t", "parameters": {"b": 1, "a": 2}}]), Request("", None, [], None)):
        assert fast_marker(req) == marker(req)


# ---- the run

def test_stream_scores_every_lookup_a_and_b():
    rows = repeated_rows(20) + [pair(21, "MISS", "What is 1 times 1?", "What is 1 times 2?"),
                                pair(22, "MISS", "Alpha beta", "Alpha gamma")]
    report = run_stream(QueryStore(), rows, StreamConfig(gap=3, orders=2))
    o = report["overall"]
    assert o["lookups"] == 2 * 2 * len(rows)
    # QueryStore serves only identical queries: every hit is right (the questions repeat verbatim)
    assert o["wrong"] == 0 and o["served"] > 0 and o["precision"] == 1.0 and o["fhr"] == 0.0
    assert report["by_label"]["A (first request)"]["served"] > 0       # repeated A's are served too
    assert report["bound"]["delta"] is None and report["bound"]["upper"] is not None


def test_a_hit_serving_another_entry_is_a_false_hit():
    rows = [pair(1, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8 please"),
            pair(2, "MISS", "Solve y + 3 = 9", "Solve y + 3 = 10")]
    report = run_stream(CarelessBounded(), rows, StreamConfig(gap=0, orders=1))
    o = report["overall"]
    # arrival (gap 0): A1 B1 A2 B2 or A2 B2 A1 B1; everything after the first store is served by "solve"
    assert o["served"] == 3 and o["wrong"] >= 2
    assert report["bound"]["delta"] == 0.01 and report["bound"]["verdict"] == "exceeded"


def test_same_seed_same_bytes_other_seed_other_order():
    rows = repeated_rows(40)
    a = run_stream(FirstWordFeedback(), rows, StreamConfig(gap=5, orders=3, seed=11))
    b = run_stream(FirstWordFeedback(), rows, StreamConfig(gap=5, orders=3, seed=11))
    assert json.dumps(untimed_stream(a), sort_keys=True) == json.dumps(untimed_stream(b), sort_keys=True)
    assert [o["seed"] for o in a["orders"]] == [11, 12, 13]
    c = run_stream(FirstWordFeedback(), rows, StreamConfig(gap=5, orders=3, seed=12))
    assert c["orders"][0] == a["orders"][1]                     # an order depends on its seed alone (reset before)
    assert arrivals(40, 11, 5) != arrivals(40, 12, 5)


def test_eviction_lru_fifo_and_none_are_the_harness_s():
    rows = [pair(i, "HIT", f"q{i}", f"q{i}") for i in range(1, 7)]
    for policy in ("lru", "fifo"):
        cache = EvictingStore()
        report = run_stream(cache, rows, StreamConfig(gap=0, capacity=2, eviction=policy, orders=1))
        order = report["orders"][0]
        # gap 0: A misses and is stored, B (identical) hits; 6 stores into 2 places evict 4
        assert order["stores"] == 6 and order["evictions"] == 4 and len(cache.entries) == 2
        assert order["served"] == 6 and order["entries_at_end"] == 2
        assert report["protocol"]["eviction_supported"] is True
    # LRU keeps what was just served, FIFO what was stored last: with a gap, they differ
    rows = [pair(i, "HIT", f"q{i}", f"q{i}") for i in range(1, 41)]
    served = {}
    for policy in ("lru", "fifo", "none"):
        cache = EvictingStore()
        report = run_stream(cache, rows, StreamConfig(gap=6, capacity=3, eviction=policy, orders=1))
        served[policy] = report["overall"]["served"]
        if policy == "none":
            assert cache.evicted == [] and report["orders"][0]["refused_full"] > 0
            assert report["orders"][0]["entries_at_end"] == 3
        else:
            assert len(cache.evicted) == report["orders"][0]["evictions"] > 0
    assert served["none"] < served["fifo"]


def test_a_cache_without_evict_runs_unbounded_and_the_report_says_so():
    rows = [pair(i, "HIT", f"q{i}", f"q{i}") for i in range(1, 11)]
    cache = QueryStore()
    report = run_stream(cache, rows, StreamConfig(gap=4, capacity=2, orders=1))
    assert report["protocol"]["eviction_supported"] is False
    assert "no evict(request)" in report["protocol"]["eviction_note"]
    assert report["orders"][0]["evictions"] == 0 and len(cache.entries) == 10
    assert not any(c[0] == "reset" for c in cache.calls[1:])      # never reset and re-stored
    from pipeline.harness.stream import render_markdown

    assert "Capacity not applied" in render_markdown(report)


def test_feedback_after_every_served_hit_and_exploration():
    rows = [pair(1, "HIT", "Solve x", "Solve x now"), pair(2, "MISS", "Solve y", "Solve z"),
            pair(3, "HIT", "Name a", "Name a please")]
    cache = FirstWordFeedback()
    report = run_stream(cache, rows, StreamConfig(gap=0, orders=1, seed=3))
    order = report["orders"][0]
    assert order["feedback_calls"] == len(cache.feedback_calls) > 0
    assert order["explorations"] + order["served"] == order["feedback_calls"]
    oracle = Oracle(rows)
    by_query = {r.query: i for i, r in enumerate(oracle.requests)}
    for query, response, verdict in cache.feedback_calls:
        assert verdict == oracle.correct(by_query[query], response)
    assert report["protocol"]["feedback"] is True
    # a cache without feedback runs unchanged: the same lookups, no calls
    plain = run_stream(QueryStore(), rows, StreamConfig(gap=0, orders=1, seed=3))
    assert plain["orders"][0]["feedback_calls"] == 0 and plain["protocol"]["feedback"] is False


def test_instability_counts_rows_answered_differently_across_orders():
    rows = [pair(1, "HIT", "a", "a"), pair(2, "HIT", "b", "b"), pair(3, "MISS", "c", "d")]

    def run(seed, b_answers):
        return OrderRun(seed, [0, 1, 2, 3, 4, 5], [0] * 6, b_answers, {"errors": 0}, 0.0, 0.0, [0.0] * 6, [])

    runs = [run(0, ["x", None, None]), run(1, ["x", "y", None]), run(2, ["z", None, None])]
    report = stream_report(runs, rows, StreamConfig().to_dict(), cache_name="c", delta=None, delta_source=None,
                           eviction_note=None, feedback=False)
    inst = report["instability"]
    assert (inst["answer_unstable"], inst["hit_miss_unstable"]) == (2, 1)     # row 1: x/x/z; row 2: miss/y/miss
    assert inst["answer"] == pytest.approx(2 / 3) and inst["hit_miss"] == pytest.approx(1 / 3)
    one = stream_report(runs[:1], rows, StreamConfig(orders=1).to_dict(), cache_name="c", delta=None,
                        delta_source=None, eviction_note=None, feedback=False)
    assert one["instability"]["answer"] is None                                # one order: nothing to compare


def test_a_bound_given_later_is_the_bound_tested_in_the_run():
    from pipeline.harness.stream import with_bound

    rows = repeated_rows(30) + [pair(31, "MISS", "What is 1 times 1? No", "What is 1 times 9?")]
    config = StreamConfig(gap=3, orders=2)
    tested = run_stream(CarelessBounded(), rows, config, error_bound=0.3)
    later = with_bound(run_stream(CarelessBounded(), rows, config), 0.3, "given")
    assert untimed_stream(tested) == untimed_stream(later)
    assert tested["bound"]["delta"] == 0.3 and tested["bound"]["delta_source"] == "given"


def test_a_raising_cache_is_a_miss_or_stops():
    class Raising(QueryStore):
        def lookup(self, request):
            if request.query == "q2":
                raise RuntimeError("boom")
            return super().lookup(request)

    rows = [pair(i, "HIT", f"q{i}", f"q{i}") for i in range(1, 4)]
    report = run_stream(Raising(), rows, StreamConfig(gap=0, orders=1))
    assert report["errors"]["count"] == 2 and "boom" in report["errors"]["messages"][0]
    with pytest.raises(RuntimeError) as info:
        run_stream(Raising(), rows, StreamConfig(gap=0, orders=1), on_error="raise")
    assert info.value.cacheeval_row_id == "cb-math-0002"


# ---- the command

def test_cli_stream_report_json_plot_and_result_cache(tmp_path, capsys):
    bench = _write_bench(tmp_path, repeated_rows(30))
    args = ["eval", "--bench", bench, "--cache-module", DOUBLES, "--cache-class", "QueryStore", "--protocol", "stream", "--in-process",
            "--gap", "4", "--orders", "2", "--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "r.md"),
            "--plot", str(tmp_path / "r.png")]
    assert main(args) == 0
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["protocol"]["name"] == "stream" and data["protocol"]["gap"] == 4 and len(data["orders"]) == 2
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "stream protocol" in (tmp_path / "r.md").read_text(encoding="utf-8")
    first_png = (tmp_path / "r.png").read_bytes()
    capsys.readouterr()
    assert main(args) == 0
    assert "served from the evaluation-result cache" in capsys.readouterr().err
    assert (tmp_path / "r.png").read_bytes() == first_png                   # no timestamp in the PNG


def test_cli_check_bound_exit_codes(tmp_path, capsys):
    rows = repeated_rows(60)
    bench = _write_bench(tmp_path, rows)
    base = ["eval", "--bench", bench, "--cache-module", DOUBLES, "--protocol", "stream", "--in-process", "--gap", "4"]
    # identical queries only: no wrong hit in ~150 served per order, upper bound ~2% <= 20%: pass
    assert main([*base, "--cache-class", "CarefulBounded", "--check-bound"]) == 0
    assert "within the error bound 0.2: pass" in capsys.readouterr().err
    # the same cache tested against a tighter bound given on the command line: 0.001 cannot be shown
    assert main([*base, "--cache-class", "CarefulBounded", "--check-bound", "0.001"]) == 1
    assert "exceeds the error bound 0.001 (--check-bound)" in capsys.readouterr().err
    # no bound declared and none given: nothing to test
    assert main([*base, "--cache-class", "QueryStore", "--check-bound"]) == 1
    assert "declares no error_bound" in capsys.readouterr().err
    # a careless cache that declares 1%: fails
    mixed = _write_bench(tmp_path, [pair(i, "MISS", f"What is {i} squared?", f"What is {i} cubed?")
                                    for i in range(1, 40)])
    code = main(["eval", "--bench", mixed, "--cache-module", DOUBLES, "--cache-class", "CarelessBounded",
                 "--protocol", "stream", "--in-process", "--check-bound"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") >= 1 and "exceeds the error bound 0.01 (--check-bound)" in err


def test_cli_refuses_stream_options_without_the_stream_protocol(tmp_path, capsys):
    bench = _write_bench(tmp_path, repeated_rows(5))
    code = main(["eval", "--bench", bench, "--cache-module", DOUBLES, "--cache-class", "QueryStore", "--gap", "3"])
    assert code == 2 and "--gap needs --protocol stream" in capsys.readouterr().err
    code = main(["eval", "--bench", bench, "--baseline", "exact_match", "--protocol", "stream", "--in-process"])
    assert code != 0 and "pair cache" in capsys.readouterr().err


def test_exact_store_under_the_stream_protocol(tmp_path):
    # the hand-written store of the other protocols' tests runs unchanged (no evict, no feedback)
    rows = repeated_rows(10)
    report = run_stream(ExactStore(), rows, StreamConfig(gap=2, orders=1))
    assert report["overall"]["wrong"] == 0 and report["overall"]["served"] >= 10


def test_a_user_cache_under_stream_must_be_asked_to_run_in_process(tmp_path, capsys):
    # The stream protocol has no worker yet: a user's cache is not silently run beside the labels.
    from pipeline.app.cli import main

    bench = tmp_path / "bench.jsonl"
    bench.write_text("", encoding="utf-8")
    code = main(["eval", "--bench", str(bench), "--cache-module", DOUBLES, "--protocol", "stream"])
    assert code == 2 and capsys.readouterr().err.startswith("error: --protocol stream runs a user's cache in this process only")
