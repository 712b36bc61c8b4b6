"""`cacheeval eval`: baselines, cache loading (dotted module, .py file, class, decide()), outputs,
exit codes and one-line errors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pipeline.app.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
BENCH = str(DATA / "bench.jsonl")


@pytest.fixture(autouse=True)
def _restore_import_state(monkeypatch):
    # Loading a cache module puts its folder (or the cwd) on sys.path; keep tests independent.
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [n for n in sys.modules if n.startswith(("democache", "published_cacheeval", "cacheeval_user_"))]:
        monkeypatch.delitem(sys.modules, name)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["eval", "--bench", BENCH, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_baseline_prints_the_markdown_report(capsys):
    code, out, err = run(capsys, "--baseline", "exact_match")
    assert (code, err) == (0, "")
    assert out.startswith("# CacheEval report: exact_match\n")
    assert "| FHR | 0.167 (1/6) | 0.030 – 0.564 |" in out


def test_out_and_json_are_written(tmp_path, capsys):
    md, js = tmp_path / "report.md", tmp_path / "report.json"
    code, out, err = run(capsys, "--baseline", "always_hit", "--cache-name", "everything",
                         "--out", str(md), "--json", str(js))
    assert (code, err) == (0, "")
    assert out == f"everything: F1 0.571, FHR 1.000, 10 rows, 0 errors; report written to {md}\n"
    assert md.read_text(encoding="utf-8").startswith("# CacheEval report: everything\n")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["cache_name"] == "everything" and data["metrics"]["recall"]["value"] == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]  # no temp files left


def test_output_into_a_missing_folder_is_one_line(tmp_path, capsys):
    code, out, err = run(capsys, "--baseline", "always_hit", "--json", str(tmp_path / "no" / "r.json"))
    assert code == 2 and out == ""
    assert err == (f"error: --json {tmp_path / 'no' / 'r.json'}: folder {tmp_path / 'no'} does not exist. "
                   "Choose a new or existing regular file that is none of the run's inputs\n")


def _fifo(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    return tmp_path / "fifo"


def _dir_link(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "folder")
    return tmp_path / "link"


@pytest.mark.parametrize("make, kind", [
    (lambda t: Path("/dev/null"), "a character device"),
    (_fifo, "a FIFO"),
    (lambda t: t, "a folder"),
    (_dir_link, "a folder (through a symlink)"),
    (lambda t: (t / "dangling").symlink_to(t / "nothing") or t / "dangling", "a symlink to nothing"),
])
@pytest.mark.parametrize("option", ["--out", "--json"])
def test_an_output_that_is_not_a_regular_file_is_refused_before_any_work(tmp_path, capsys, make, kind, option):
    # Run as root, `--out /dev/null` once turned the system's /dev/null into a regular file.
    import os
    import stat

    target = make(tmp_path)
    before = os.stat(target).st_mode if os.path.exists(target) else None
    code, out, err = run(capsys, "--baseline", "always_hit", option, str(target))
    assert (code, out) == (2, "")
    assert err == (f"error: {option} {target}: is {kind}, not a regular file. Choose a new or existing regular "
                   "file that is none of the run's inputs\n")
    after = os.stat(target).st_mode if os.path.exists(target) else None
    assert before == after and (before is None or not stat.S_ISREG(before))


def test_an_output_that_is_an_input_of_the_run_is_refused(tmp_path, capsys):
    bench = tmp_path / "bench.jsonl"
    bench.write_bytes(Path(BENCH).read_bytes())
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(bench)
    for option, target in (("--json", bench), ("--out", alias)):
        code, out, err = run(capsys, "--bench", str(bench), "--baseline", "always_hit", option, str(target))
        assert code == 2 and err == (f"error: {option} {target}: is the run's input --bench {bench}. Choose a new or "
                                     "existing regular file that is none of the run's inputs\n")
    assert bench.read_bytes() == Path(BENCH).read_bytes()
    code, _, err = run(capsys, "--baseline", "always_hit", "--out", str(tmp_path / "r"), "--json", str(tmp_path / "r"))
    assert code == 2 and "--out and --json are the same file" in err


def test_a_symlink_to_a_regular_file_is_written_through(tmp_path, capsys):
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    code, _, _ = run(capsys, "--baseline", "always_hit", "--json", str(link))
    assert code == 0 and link.is_symlink() and json.loads(real.read_text(encoding="utf-8"))["cache_name"]


def test_unknown_baseline(capsys):
    code, out, err = run(capsys, "--baseline", "exact")
    assert code == 1
    assert err == ("error: --baseline: Unknown baseline 'exact'. Did you mean 'exact_match'? "
                   "Available: always_hit, always_miss, exact_match\n")


def test_missing_bench_file(capsys, tmp_path):
    code = main(["eval", "--bench", str(tmp_path / "x.jsonl"), "--baseline", "always_miss"])
    assert code == 1
    assert capsys.readouterr().err == f"error: {tmp_path / 'x.jsonl'}: file not found. Pass the path of a benchmark JSONL file\n"


@pytest.mark.parametrize("argv", [
    [],                                                                  # neither a baseline nor a cache
    ["--baseline", "always_hit", "--cache-module", "democache.simple"],  # both
    ["--baseline", "always_hit", "--on-error", "ignore"],
])
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--bench", BENCH, *argv])
    assert exc.value.code == 2
    assert "usage: cacheeval eval" in capsys.readouterr().err


def test_help_shows_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  cacheeval eval --bench outputs/cachebench.jsonl --baseline exact_match" in out
    assert "--cache-class MyCache" in out


def test_cache_class_without_module(capsys):
    code, _, err = run(capsys, "--baseline", "always_hit", "--cache-class", "X")
    assert code == 1
    assert err == "error: --cache-class needs --cache-module. Name the module that defines the class\n"


# ---------------------------------------------------------------- loading caches

def test_dotted_module_with_a_cache_function(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(DATA))
    js = tmp_path / "r.json"
    code, _, err = run(capsys, "--cache-module", "democache.simple", "--json", str(js))
    assert (code, err) == (0, "")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["cache_name"] == "democache.simple"
    # It compares system prompts (personalized-0001 is a MISS) but not context, so the multi-turn
    # pair with the same last message is a false hit, as is the policy_no_cache poem.
    assert data["confusion"] == {"tp": 2, "fp": 2, "fn": 2, "tn": 4}
    assert data["by_domain"]["multi_turn"]["fp"] == 1 and data["by_domain"]["personalized"]["fp"] == 0
    assert data["latency_ms"]["cache_timed"] == 10 and data["latency_ms"]["p50"] == 0.5


@pytest.mark.parametrize("cls,tp_fp", [("CallableCache", (2, 3)), ("DecideCache", (2, 1))])
def test_dotted_module_with_a_class(monkeypatch, tmp_path, capsys, cls, tp_fp):
    monkeypatch.syspath_prepend(str(DATA))
    js = tmp_path / "r.json"
    code, _, err = run(capsys, "--cache-module", "democache.simple", "--cache-class", cls, "--json", str(js))
    assert (code, err) == (0, "")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["cache_name"] == cls
    assert (data["confusion"]["tp"], data["confusion"]["fp"]) == tp_fp


def test_file_path_module_with_a_lookalike_verdict(tmp_path, capsys):
    js = tmp_path / "r.json"
    code, _, err = run(capsys, "--cache-module", str(DATA / "lookalike_cache.py"), "--cache-class",
                       "TokenOverlapCache", "--json", str(js))
    assert (code, err) == (0, "")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["errors"]["count"] == 0
    assert data["tiers"] == {"programmatic": 10, "error": 0}
    assert data["cost"]["total_usd"] == pytest.approx(0.001)
    assert data["confidence"]["rows_with_confidence"] == 10
    # Jaccard >= 0.5 hits the four verbatim pairs, "Solve x/a + 2 = 8" (0.6) and the two
    # "sort a list ..." queries (5/7); of those only math-0002 and qa_factual-0002 are HIT rows.
    assert data["confusion"] == {"tp": 2, "fp": 5, "fn": 2, "tn": 1}


def test_file_path_module_with_a_cache_function(capsys):
    code, out, err = run(capsys, "--cache-module", str(DATA / "lookalike_cache.py"))
    assert (code, err) == (0, "")
    assert out.startswith("# CacheEval report: lookalike_cache\n")


@pytest.mark.parametrize("argv,message", [
    (["--cache-module", "no_such_cache_module"],
     "--cache-module no_such_cache_module: no module named 'no_such_cache_module'. Pass a dotted module "
     "importable from the current directory, or a path to a .py file"),
    (["--cache-module", "democache.simple", "--cache-class", "Missing"],
     "--cache-class Missing: no class of that name in democache.simple. Classes there: CallableCache, "
     "DecideCache, NeedsArgs, NotACache"),
    (["--cache-module", "democache.simple", "--cache-class", "NeedsArgs"],
     "--cache-class NeedsArgs: NeedsArgs() raised TypeError: NeedsArgs.__init__() missing 1 required "
     "positional argument: 'threshold'. The class must be built with no arguments"),
    (["--cache-module", "democache.simple", "--cache-class", "NotACache"],
     "--cache-module democache.simple: a NotACache instance is neither callable nor has a decide(pair) "
     "method. Make it a function of the pair, or give the class __call__ or decide"),
    (["--cache-module", "democache"],
     "--cache-module democache: no attribute named 'cache'. Define `cache(pair) -> Verdict` in the module, "
     "or pass --cache-class NAME"),
    (["--cache-module", "tests/data/nope.py"],
     "--cache-module tests/data/nope.py: file not found. Pass an existing .py file or a dotted module name"),
])
def test_cache_loading_errors_are_one_line(monkeypatch, capsys, argv, message):
    monkeypatch.syspath_prepend(str(DATA))
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "")
    assert err == f"error: {message}\n"


def test_a_module_that_fails_to_import(tmp_path, capsys):
    broken = tmp_path / "broken_cache.py"
    broken.write_text("import json\nraise RuntimeError('needs a GPU\\nmore detail')\n", encoding="utf-8")
    code, _, err = run(capsys, "--cache-module", str(broken))
    assert code == 1
    assert err == (f"error: --cache-module {broken}: importing it raised RuntimeError: needs a GPU. "
                   "Fix the module\n")


# ---------------------------------------------------------------- raising caches

def test_a_raising_cache_is_scored_miss_by_default(tmp_path, capsys):
    js = tmp_path / "r.json"
    code, _, err = run(capsys, "--cache-module", str(DATA / "raising_cache.py"), "--json", str(js))
    assert (code, err) == (0, "")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["tiers"]["error"] == 3 and data["errors"]["count"] == 3
    assert data["errors"]["messages"][0] == "cb-math-0001: ZeroDivisionError: cannot compare 'Solve x + 2 = 8'"
    assert data["by_domain"]["math"]["tp"] == 0 and data["by_domain"]["math"]["fp"] == 0


def test_on_error_raise_stops_with_one_line(tmp_path, capsys):
    md = tmp_path / "r.md"
    code, out, err = run(capsys, "--cache-module", str(DATA / "raising_cache.py"), "--on-error", "raise",
                         "--out", str(md))
    assert (code, out) == (1, "")
    assert err == ("error: cache 'raising_cache' raised ZeroDivisionError: cannot compare 'Solve x + 2 = 8' on row "
                   "cb-math-0001. Fix the cache, or use --on-error miss to score such rows as MISS\n")
    assert not md.exists()


# ---------------------------------------------------------------- labels

def test_labels_file_is_joined(tmp_path, capsys):
    full = [json.loads(line) for line in Path(BENCH).read_text(encoding="utf-8").splitlines()]
    public = tmp_path / "test.jsonl"
    public.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("label", "binary_label")}) + "\n"
                              for r in full), encoding="utf-8")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": r["id"], "label": r["label"], "binary_label": r["binary_label"]})
                              + "\n" for r in full), encoding="utf-8")
    js = tmp_path / "r.json"
    code = main(["eval", "--bench", str(public), "--labels", str(labels), "--baseline", "exact_match",
                 "--json", str(js)])
    assert code == 0
    assert json.loads(js.read_text(encoding="utf-8"))["confusion"] == {"tp": 2, "fp": 1, "fn": 2, "tn": 5}
    code = main(["eval", "--bench", str(public), "--baseline", "exact_match"])
    assert code == 1
    assert capsys.readouterr().err == (f"error: {public}:1: label, binary_label: missing on 10 rows (first on line 1): "
                                       "a split published without labels. Pass --labels with the labels file of this "
                                       "split.\n")


def test_labels_of_another_split_are_one_line_with_the_count(tmp_path, capsys):
    # Before: "--labels dev.jsonl" on the test split reported a missing field on every row.
    full = [json.loads(line) for line in Path(BENCH).read_text(encoding="utf-8").splitlines()]
    public = tmp_path / "test.jsonl"
    public.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("label", "binary_label")}) + "\n"
                              for r in full), encoding="utf-8")
    other = tmp_path / "dev_labels.jsonl"
    other.write_text("".join(json.dumps({"id": r["id"], "label": r["label"], "binary_label": r["binary_label"]})
                             + "\n" for r in full[:3]), encoding="utf-8")
    code = main(["eval", "--bench", str(public), "--labels", str(other), "--baseline", "exact_match"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"error: {other}: no labels for 7 of 10 rows of {public} (the first: {full[3]['id']} on "
                          "line 4). Pass the labels file of this split")


def test_eval_result_cache_serves_a_repeat_and_no_cache_reruns(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CACHEEVAL_EVAL_CACHE_DIR", str(tmp_path / "evalcache"))
    bench = str(Path(__file__).resolve().parents[1] / "data" / "bench.jsonl")
    args = ["eval", "--bench", bench, "--baseline", "always_hit", "--json", str(tmp_path / "r.json")]
    assert main(args) == 0
    first = (tmp_path / "r.json").read_text()
    assert "served from the evaluation-result cache" not in capsys.readouterr().err
    assert main(args) == 0
    assert "served from the evaluation-result cache" in capsys.readouterr().err
    assert (tmp_path / "r.json").read_text() == first
    assert main([*args, "--no-cache"]) == 0
    assert "served from the evaluation-result cache" not in capsys.readouterr().err
