"""Memory at scale, held without timing: `cacheeval eval` reads a benchmark as a stream, keeps per row
only what scoring needs (never a Row, never the requests: a cache gets them from a new pass over the
file), the worker is fed a window of pairs at a time, and a rerun is served from the result cache on
the benchmark's sha256 without checking the rows again (benchmarks/eval_memory.py measures the
figures: 200,000 rows within 1 GB, the cached rerun under 5 s)."""
from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from pathlib import Path

import pytest

from pipeline.app.cli import main
from pipeline.core.errors import InputError
from pipeline.harness import Pair, Row, Verdict
from pipeline.harness import contract, isolated
from pipeline.harness.evaluation import PairStream
from pipeline.harness.load import Bench, Scored, load_bench, load_scored
from pipeline.harness.scoring import Chosen, run_chosen

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "outputs" / "cachebench.jsonl"
BENCH = ROOT / "tests" / "data" / "bench.jsonl"


def write_rows(path: Path, n: int) -> Path:
    """n rows of the committed benchmark, cycled, ids renumbered (as benchmarks/eval_memory.py does)."""
    rows = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines()]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["id"] = f"cb-{row['domain']}-{i + 1:07d}"
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def live(cls: type) -> int:
    # type(o), not isinstance: isinstance reads o.__class__, and some live objects warn when read (torch's
    # deprecated `torch.distributed.reduce_op`, in a worker that imported torch before)
    return sum(1 for o in gc.get_objects() if issubclass(type(o), cls))


def peak_bytes(fn, *args) -> tuple[int, object]:
    gc.collect()
    tracemalloc.start()
    try:
        out = fn(*args)
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


# ---- what is kept per row

def test_load_keeps_a_few_fields_per_row_and_no_row(tmp_path):
    bench = load_scored(write_rows(tmp_path / "b.jsonl", 300), strict=False)
    assert isinstance(bench, Bench) and len(bench) == 300
    assert isinstance(bench.rows[0], Scored) and not hasattr(bench.rows[0], "query_a")
    full = load_bench(tmp_path / "b.jsonl", strict=False)
    want = [Scored(*[getattr(r, f) for f in Scored._fields]) for r in full]
    assert bench.rows == want     # the same values as the Rows the harness always read
    assert bench.sha256 == __import__("hashlib").sha256((tmp_path / "b.jsonl").read_bytes()).hexdigest()


def test_loading_costs_memory_per_row_far_below_the_rows_size(tmp_path):
    # A row of the committed benchmark is ~2.4 KB of JSON, ~16 KB once parsed; reading the whole file
    # (the old way) grew the peak by that per row. Streamed, a row adds its id and a few shared
    # strings. The slope between n and 2n rows leaves out what does not grow with the file.
    n = 1500
    small, big = write_rows(tmp_path / "small.jsonl", n), write_rows(tmp_path / "big.jsonl", 2 * n)
    load_scored(small, strict=False)  # warm: validators, caches, imports
    peak_small, _ = peak_bytes(lambda: load_scored(small, strict=False))
    peak_big, _ = peak_bytes(lambda: load_scored(big, strict=False))
    per_row = (peak_big - peak_small) / n
    assert per_row < 1024, f"{per_row:.0f} bytes of peak memory per row"


def test_a_cache_is_handed_requests_read_as_it_decides(tmp_path):
    bench = load_scored(write_rows(tmp_path / "b.jsonl", 400), strict=False)
    rows_before = live(Row)
    seen = []

    def cache(pair: Pair) -> Verdict:
        seen.append(pair.key)
        if len(seen) in (1, 200, 400):
            # the pairs already decided are gone: a pass over the file yields one at a time
            seen.append(("live pairs", live(Pair), "rows", live(Row) - rows_before))
        return Verdict(is_hit=pair.query_a == pair.query_b)

    data = run_chosen(Chosen("probe", "pair", cache), bench)
    counts = [s for s in seen if isinstance(s, tuple)]
    assert len(counts) == 3 and all(c[1] <= 3 and c[3] == 0 for c in counts), counts
    assert data["bench"]["n"] == 400


def test_the_shared_protocol_reads_the_file_twice_and_holds_no_request(tmp_path):
    bench = load_scored(write_rows(tmp_path / "b.jsonl", 300), strict=False)

    class Probe:
        def __init__(self) -> None:
            self.entries: dict[str, str] = {}
            self.counts: list[int] = []

        def reset(self) -> None:
            self.entries = {}

        def store(self, request, response) -> None:
            if len(self.entries) == 250:
                self.counts.append(live(Pair))
            self.entries.setdefault(request.query, response)

        def lookup(self, request):
            return self.entries.get(request.query)

    probe = Probe()
    data = run_chosen(Chosen("probe", "shared", probe), bench)
    assert probe.counts and max(probe.counts) <= 3
    in_memory = run_chosen(Chosen("probe", "shared", Probe()), load_bench(tmp_path / "b.jsonl", strict=False))
    for d in (data, in_memory):
        d.pop("latency_ms")
        d["protocol"].pop("store_seconds")
    assert data == in_memory   # the same report as from Rows held in memory


def test_a_file_changed_after_its_check_is_refused(tmp_path):
    path = write_rows(tmp_path / "b.jsonl", 20)
    bench = load_scored(path, strict=False)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[5])
    row["query_b"] = "something else"
    lines[5] = json.dumps(row) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match="changed while it was being scored"):
        list(bench.pairs("k"))
    with pytest.raises(InputError, match="changed while it was being scored"):   # the ids still match
        run_chosen(Chosen("exact", "pair", lambda pair: pair.query_a == pair.query_b), bench)
    with pytest.raises(InputError, match="changed while it was being read"):
        load_scored(path, strict=False, sha256=bench.sha256)


def test_a_request_field_withheld_in_the_labels_file_reaches_the_cache(tmp_path):
    rows = [json.loads(line) for line in BENCH.read_text(encoding="utf-8").splitlines()]
    public, labels = tmp_path / "public.jsonl", tmp_path / "labels.jsonl"
    public.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("label", "binary_label",
                                                                                    "system_prompt_b")}) + "\n"
                              for r in rows), encoding="utf-8")
    labels.write_text("".join(json.dumps({"id": r["id"], "label": r["label"], "binary_label": r["binary_label"],
                                          "system_prompt_b": f"you help {r['id']}"}) + "\n" for r in rows),
                      encoding="utf-8")
    bench = load_scored(public, labels, strict=False)
    assert [p.system_prompt_b for p in bench.pairs("k")] == [f"you help {r['id']}" for r in rows]


# ---- the worker is fed a window at a time

def test_the_worker_is_fed_a_window_of_pairs_ahead_of_its_decisions(tmp_path, monkeypatch):
    monkeypatch.setattr(isolated, "OUT_WINDOW", 4096)
    (tmp_path / "plain.py").write_text("def cache(pair):\n    return pair.query_a == pair.query_b\n", encoding="utf-8")
    n, produced, lag = 3000, [0], []

    def open_pass(start: int):
        for i in range(start, n):
            produced[0] += 1
            yield Pair(f"k-{i}", f"question {i}", f"question {i}" if i % 3 else f"other {i}")

    class Watched(isolated.Worker):
        def _take(self, d, i, msg):
            lag.append(produced[0] - i)
            super()._take(d, i, msg)

    worker = Watched(str(tmp_path / "plain.py"), sandbox=False)
    try:
        worker.start()
        d = worker.decide(PairStream(n, open_pass), "pair")
    finally:
        worker.close()
    assert d.hits == [bool(i % 3) for i in range(n)] and not d.errors
    # ahead of the decisions: the window, the pipe's buffer and the worker's read buffer; never the lot
    assert max(lag) < n // 2, max(lag)


# ---- a rerun is decided by the benchmark's sha256

def _eval(tmp_path, capsys, bench: Path, *argv: str) -> tuple[int, str]:
    code = main(["eval", "--bench", str(bench), "--json", str(tmp_path / "r.json"), *argv])
    return code, capsys.readouterr().err


def test_a_cache_hit_does_not_check_the_benchmark_again(tmp_path, monkeypatch, capsys):
    bench = write_rows(tmp_path / "b.jsonl", 50)
    code, err = _eval(tmp_path, capsys, bench, "--baseline", "exact_match")
    assert code == 0 and "served from" not in err
    first = (tmp_path / "r.json").read_text()

    def checked_again(self, lineno, row):
        raise AssertionError("the benchmark was checked again")

    monkeypatch.setattr(contract.ScoringChecker, "check", checked_again)
    code, err = _eval(tmp_path, capsys, bench, "--baseline", "exact_match")
    assert code == 0 and "served from the evaluation-result cache" in err
    assert (tmp_path / "r.json").read_text() == first
    # a miss checks it (here: another baseline), and so does --no-cache, always
    with pytest.raises(AssertionError, match="checked again"):
        _eval(tmp_path, capsys, bench, "--baseline", "always_hit")
    with pytest.raises(AssertionError, match="checked again"):
        _eval(tmp_path, capsys, bench, "--baseline", "exact_match", "--no-cache")


def test_a_checked_record_counts_only_for_the_same_bytes_contract_and_key(tmp_path):
    from pipeline.harness.cache import EvalCache

    sha, other = "ab" * 32, "cd" * 32
    store = EvalCache(tmp_path / "eval", key=b"k" * 32)
    assert not store.checked(sha, None, "scoring")
    store.mark_checked(sha, None, "scoring")
    assert store.checked(sha, None, "scoring")
    assert not store.checked(other, None, "scoring") and not store.checked(sha, other, "scoring")
    assert not store.checked(sha, None, "strict")
    assert not EvalCache(tmp_path / "eval", key=b"x" * 32).checked(sha, None, "scoring")   # forged: another key
    assert not list((tmp_path / "eval").rglob("*.json"))   # *.json there are evaluation entries only


def test_a_benchmark_never_checked_here_is_checked_before_the_cache_is_imported(tmp_path, capsys):
    bench = tmp_path / "b.jsonl"
    bench.write_text('{"id": "p1", "query_a": "q", "binary_label": "HIT"}\n', encoding="utf-8")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    code, err = _eval(tmp_path, capsys, bench, "--cache-module", str(broken))
    assert code == 1 and err.startswith(f"error: {bench}:1: query_b: missing required field") and "imported" not in err


def test_editing_the_benchmark_is_a_miss_and_a_new_check(tmp_path, capsys):
    bench = write_rows(tmp_path / "b.jsonl", 30)
    assert _eval(tmp_path, capsys, bench, "--baseline", "always_hit")[0] == 0
    with bench.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "extra", "query_a": "q", "binary_label": "HIT"}\n')
    code, err = _eval(tmp_path, capsys, bench, "--baseline", "always_hit")
    assert code == 1 and f"{bench}:31: query_b: missing required field" in err


STORE = '''import os


class FirstWords:
    """Keys on the query's first two words; the worker dies on one lookup when asked to."""

    def reset(self):
        self.entries = {}

    def store(self, request, response):
        self.entries.setdefault(" ".join(request.query.split()[:2]), response)

    def lookup(self, request):
        if os.environ.get("MEMTEST_CRASH") and request.query.startswith("Sort"):
            os._exit(3)
        return self.entries.get(" ".join(request.query.split()[:2]))
'''


def test_a_shared_protocol_worker_that_dies_is_fed_every_a_again(tmp_path, monkeypatch, capsys):
    # after a crash the next worker stores every A again (a new pass over the file) and goes on
    monkeypatch.setattr(sys, "path", list(sys.path))            # --in-process puts the module's folder there
    monkeypatch.setitem(sys.modules, "cacheeval_user_firstwords", None)
    (tmp_path / "firstwords.py").write_text(STORE, encoding="utf-8")
    argv = ["--cache-module", str(tmp_path / "firstwords.py"), "--cache-class", "FirstWords", "--protocol", "shared",
            "--no-cache"]
    assert _eval(tmp_path, capsys, BENCH, *argv, "--in-process")[0] == 0
    want = json.loads((tmp_path / "r.json").read_text())["decisions"]
    monkeypatch.setenv("MEMTEST_CRASH", "1")
    assert _eval(tmp_path, capsys, BENCH, *argv)[0] == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["errors"]["count"] == 1 and "exited (code 3)" in data["errors"]["messages"][0]
    got = data["decisions"]
    crashed = next(i for i, d in enumerate(got) if d["id"] == "cb-code-0001")
    assert [d for i, d in enumerate(got) if i != crashed] == [d for i, d in enumerate(want) if i != crashed]
    assert data["protocol"]["wrong_entry_hits"]["total"] > 0   # the shared store served other rows' answers
