"""Evaluation-result cache: an entry is served only when everything that can change a score matches."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core import secret
from pipeline.harness import cache as eval_cache
from pipeline.harness.cache import EvalCache, implementation_identity

CONFIG = {"thresholds": [0.8, 0.9], "metrics": ["precision", "recall"], "on_error": "miss"}
CACHE_MODULE = '''
class ToyCache:
    """A semantic cache under evaluation."""
    def __init__(self, snapshot="emb-2024-01-01", threshold=0.85):
        self.model_snapshot = snapshot
        self.settings = {"threshold": threshold}
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A cache implementation in its own module file, so its code version can change."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "toy_cache_impl.py").write_text(CACHE_MODULE)
    monkeypatch.syspath_prepend(str(src))
    sys.modules.pop("toy_cache_impl", None)
    yield importlib.import_module("toy_cache_impl")
    sys.modules.pop("toy_cache_impl", None)


@pytest.fixture
def bench(tmp_path):
    path = tmp_path / "cachebench.jsonl"
    path.write_text('{"id": 1}\n')
    return path


class Runner:
    """Counts evaluations; each returns a report naming its run number."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> dict:
        self.runs += 1
        return {"run": self.runs, "precision": 0.9, "per_domain": {"math": [1, 2]}}


def test_same_identity_is_served_from_cache(tmp_path, toy, bench):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    assert ec.cached_run(ident, run) == (run_report(1), False)
    assert ec.cached_run(ec.identity(bench, toy.ToyCache(), dict(reversed(list(CONFIG.items())))), run) \
        == (run_report(1), True)
    assert run.runs == 1
    stored = json.loads(next((tmp_path / "eval").rglob("*.json")).read_text())
    assert stored["identity"]["implementation"]["model_snapshot"] == "emb-2024-01-01"  # records what produced it


def run_report(n: int) -> dict:
    return {"run": n, "precision": 0.9, "per_domain": {"math": [1, 2]}}


@pytest.mark.parametrize("change", ["model_snapshot", "settings", "benchmark", "harness_config", "metric_set",
                                    "on_error", "code", "harness_version"])
def test_an_entry_from_anything_else_is_never_served(tmp_path, toy, bench, monkeypatch, change):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ec.cached_run(ec.identity(bench, toy.ToyCache(), CONFIG), run)
    impl, config = toy.ToyCache(), dict(CONFIG)
    if change == "model_snapshot":
        impl = toy.ToyCache(snapshot="emb-2024-06-01")
    elif change == "settings":
        impl = toy.ToyCache(threshold=0.86)
    elif change == "benchmark":
        bench.write_text('{"id": 2}\n')
    elif change == "harness_config":
        config["thresholds"] = [0.8, 0.95]
    elif change == "metric_set":
        config["metrics"] = ["precision"]
    elif change == "on_error":
        config["on_error"] = "raise"
    elif change == "code":
        (tmp_path / "src" / "toy_cache_impl.py").write_text(CACHE_MODULE + "\n# a code change\n")
    elif change == "harness_version":
        monkeypatch.setattr(eval_cache, "HARNESS_VERSION", "999")
    report, from_cache = ec.cached_run(ec.identity(bench, impl, config), run)
    assert (report["run"], from_cache, run.runs) == (2, False, 2)


def test_stored_identity_mismatch_is_detected_even_under_the_right_key(tmp_path, toy, bench, capsys):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    ec.cached_run(ident, run)
    path = next((tmp_path / "eval").rglob("*.json"))
    entry = json.loads(path.read_text())
    entry["identity"]["implementation"]["model_snapshot"] = "emb-1999-01-01"  # as if another run wrote it here
    entry["signature"] = secret.sign(ec.key, eval_cache._signed(entry["identity"], entry["report"]))  # with the key
    path.write_text(json.dumps(entry))
    assert ec.cached_run(ident, run) == (run_report(2), False)
    assert "was made from another identity" in capsys.readouterr().err
    assert ec.cached_run(ident, run) == (run_report(2), True)  # the re-run replaced it


@pytest.mark.parametrize("damage", ["garbage", "truncated", "report_edited", "empty"])
def test_corrupt_entry_reruns(tmp_path, toy, bench, capsys, damage):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    ec.cached_run(ident, run)
    path = next((tmp_path / "eval").rglob("*.json"))
    text = path.read_text()
    path.write_text({"garbage": "\x00not json", "truncated": text[: len(text) // 2], "empty": "",
                     "report_edited": text.replace('"precision": 0.9', '"precision": 1.0')}[damage])
    assert ec.cached_run(ident, run) == (run_report(2), False)
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: {path}") and "evaluating again" in err and "\n" not in err


def test_an_entry_moved_under_another_key_is_never_served(tmp_path, toy, bench, capsys):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    other = ec.identity(bench, toy.ToyCache(threshold=0.5), CONFIG)
    ec.cached_run(ident, run)
    ec.cached_run(other, run)
    entries = {json.loads(p.read_text())["report"]["run"]: p for p in (tmp_path / "eval").rglob("*.json")}
    shutil.copyfile(entries[2], entries[1])  # the second evaluation's whole entry in the first one's place
    capsys.readouterr()
    assert ec.cached_run(ident, run) == (run_report(3), False)
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: {entries[1]}") and "has another schema or key" in err and "\n" not in err
    assert ec.cached_run(ident, run) == (run_report(3), True)  # overwritten by the re-run


def test_an_f1_edited_by_hand_is_rescored_by_the_cli_and_overwritten(tmp_path, monkeypatch, capsys):
    from pipeline.app.cli import main

    monkeypatch.setenv("CACHEEVAL_EVAL_CACHE_DIR", str(tmp_path / "evalcache"))
    bench = str(Path(__file__).resolve().parents[1] / "data" / "bench.jsonl")
    args = ["eval", "--bench", bench, "--baseline", "always_hit", "--json", str(tmp_path / "r.json"),
            "--out", str(tmp_path / "r.md")]  # stdout: the one summary line with the F1
    assert main(args) == 0
    true_f1 = json.loads((tmp_path / "r.json").read_text())["metrics"]["f1"]["value"]
    entry = next((tmp_path / "evalcache").rglob("*.json"))
    data = json.loads(entry.read_text())
    data["report"]["metrics"]["f1"]["value"] = 0.999  # a better score, signature left as it was
    entry.write_text(json.dumps(data, indent=1))
    capsys.readouterr()
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert f"F1 {true_f1:.3f}" in out and "0.999" not in out
    assert json.loads((tmp_path / "r.json").read_text())["metrics"]["f1"]["value"] == true_f1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: {entry}") and "is not signed with this installation's key" in lines[0]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert f"F1 {true_f1:.3f}" in out and "served from the evaluation-result cache" in err  # the rescored entry


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_rerun_and_replaced(tmp_path, toy, bench, capsys, kind):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    ec.cached_run(ident, run)
    path = next((tmp_path / "eval").rglob("*.json"))
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # a read would wait for a writer forever
    else:
        path.mkdir()
        (path / "stray.json").write_text("{}")
    capsys.readouterr()
    assert ec.cached_run(ident, run) == (run_report(2), False)
    err = capsys.readouterr().err.strip()
    assert err == f"warning: {path}: evaluation cache entry is not a regular file; evaluating again"
    assert path.is_file() and ec.cached_run(ident, run) == (run_report(2), True)


def test_no_cache_forces_a_run_and_refreshes(tmp_path, toy, bench):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    ec.cached_run(ident, run)
    assert ec.cached_run(ident, run, use_cache=False) == (run_report(2), False)
    assert ec.cached_run(ident, run) == (run_report(2), True)


def test_reports_that_json_would_change_are_not_cached(tmp_path, toy, bench, capsys):
    ec = EvalCache(tmp_path / "eval")
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    calls = []
    for _ in range(2):
        report, from_cache = ec.cached_run(ident, lambda: calls.append(1) or {"pair": (1, 2), 3: "x"})
        assert not from_cache and report == {"pair": (1, 2), 3: "x"}
    assert len(calls) == 2 and "not cached" in capsys.readouterr().err


def test_identity_covers_the_class_hierarchy_code():
    class Local(EvalCache):
        pass

    ident = implementation_identity(Local(".x"))
    assert ident["class"].endswith("Local") and ident["model_snapshot"] is None and ident["unknown"] == []
    assert ident["roots"] == sorted([__name__, "pipeline.harness.cache"])
    modules = ident["code"]["modules"]
    assert {__name__, "pipeline.harness.cache", "pipeline.harness.closure", "pipeline.core.hashing"} <= set(modules)
    assert all(len(digest) == 64 for digest in modules.values() if digest is not None)
    assert "pytest" in " ".join(ident["code"]["distributions"])  # this module imports pytest: an installed one


def test_harness_identity_is_the_version_and_every_module_of_the_package():
    from pipeline.harness import HARNESS_VERSION

    ident = eval_cache.harness_identity()
    package = Path(eval_cache.__file__).parent
    modules = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    assert ident["version"] == HARNESS_VERSION
    assert list(ident["code"]) == modules
    # what the harness imports from outside its package is keyed too (pipeline.core, by file hash)
    assert {"pipeline.core.errors", "pipeline.core.taxonomy"} <= set(ident["imports"]["modules"])
    assert not [m for m in ident["imports"]["modules"] if m.startswith("pipeline.harness")]
    assert {"__init__.py", "interface.py", "load.py", "evaluation.py", "metrics.py", "report.py",
            "baselines.py", "cache.py"} <= set(modules)
    assert all(len(digest) == 64 for digest in ident["code"].values())


@pytest.fixture
def harness_copy(tmp_path, monkeypatch):
    """A copy of pipeline/harness/ that the cache takes for the harness, so a test can edit it."""
    copy = tmp_path / "harness"
    shutil.copytree(Path(eval_cache.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(eval_cache, "HARNESS_DIR", copy)
    return copy


HARNESS_MODULES = sorted(p.name for p in Path(eval_cache.__file__).parent.glob("*.py"))


@pytest.mark.parametrize("module", HARNESS_MODULES)
def test_editing_any_harness_module_changes_the_key(tmp_path, toy, bench, harness_copy, module):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    before = ec.identity(bench, toy.ToyCache(), CONFIG)
    assert ec.cached_run(before, run) == (run_report(1), False)
    assert ec.cached_run(ec.identity(bench, toy.ToyCache(), CONFIG), run) == (run_report(1), True)
    path = harness_copy / module
    path.write_text(path.read_text(encoding="utf-8") + "\n# a change to the scoring code\n", encoding="utf-8")
    after = ec.identity(bench, toy.ToyCache(), CONFIG)
    assert after["harness"]["code"][module] != before["harness"]["code"][module]
    assert ec.cached_run(after, run) == (run_report(2), False)


def test_a_new_harness_module_changes_the_key(tmp_path, toy, bench, harness_copy):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ec.cached_run(ec.identity(bench, toy.ToyCache(), CONFIG), run)
    (harness_copy / "calibration.py").write_text('"""A new metric module."""\n', encoding="utf-8")
    assert ec.cached_run(ec.identity(bench, toy.ToyCache(), CONFIG), run) == (run_report(2), False)


def test_unknown_harness_code_is_never_cached(tmp_path, toy, bench, monkeypatch, capsys):
    monkeypatch.setattr(eval_cache, "HARNESS_DIR", tmp_path / "no_such_package")
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, toy.ToyCache(), CONFIG)
    assert ec.cached_run(ident, run)[1] is False and ec.cached_run(ident, run)[1] is False
    assert run.runs == 2 and "harness source files were not found" in capsys.readouterr().err


def test_unknown_code_version_is_never_cached(tmp_path, bench, capsys):
    ec, run = EvalCache(tmp_path / "eval"), Runner()
    ident = ec.identity(bench, {"a builtin": "object"}, CONFIG)  # dict: no source file to hash
    assert ec.cached_run(ident, run)[1] is False and ec.cached_run(ident, run)[1] is False
    assert run.runs == 2 and "code version cannot be checked" in capsys.readouterr().err


def test_a_plain_cache_function_is_identified_by_its_module(tmp_path, bench):
    src = tmp_path / "src"
    src.mkdir()
    (src / "fn_cache_impl.py").write_text("def cache(row):\n    return False\n")
    sys.path.insert(0, str(src))
    try:
        mod = importlib.import_module("fn_cache_impl")
        ec, run = EvalCache(tmp_path / "eval"), Runner()
        ident = ec.identity(bench, mod.cache, CONFIG)
        assert ident["implementation"]["class"] == "fn_cache_impl.cache"
        assert ec.cached_run(ident, run)[1] is False and ec.cached_run(ident, run)[1] is True
        (src / "fn_cache_impl.py").write_text("def cache(row):\n    return True\n")
        assert ec.cached_run(ec.identity(bench, mod.cache, CONFIG), run) == (run_report(2), False)
    finally:
        sys.path.remove(str(src))
        sys.modules.pop("fn_cache_impl", None)


# ---------------------------------------------------------------- the whole import closure (issue #12)

def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "proj"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return src


def _eval(src: Path, bench: Path, cache_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    """`cacheeval eval` in a fresh interpreter, as a user re-running it after an edit."""
    env = {**os.environ, "CACHEEVAL_EVAL_CACHE_DIR": str(cache_dir), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": str(ROOT)}  # this checkout's pipeline, whatever the install points at
    return subprocess.run([sys.executable, "-m", "pipeline.app.cli", "eval", "--bench", str(bench),
                           "--cache-module", str(src / "mycache.py"), *extra],
                          cwd=src, env=env, capture_output=True, text=True, timeout=120)


ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "data" / "bench.jsonl"
SERVED = "served from the evaluation-result cache"
# The cache's decision lives in modules it imports, each reached a different way.
CLOSURE_FILES = {
    "mycache.py": "from helpers.rules import same\n\ndef cache(row):\n    return same(row)\n",
    "helpers/__init__.py": "",
    "helpers/rules.py": "from . import norm\n\ndef same(row):\n    return norm.text(row.query_a) == norm.text(row.query_b)\n",
    "helpers/norm.py": "import importlib\n_impl = importlib.import_module('helpers.' + 'deep')\n\n"
                       "def text(s):\n    return _impl.fold(s)\n",
    "helpers/deep.py": "def fold(s):\n    return s\n",
}


@pytest.mark.parametrize("edited,new_text", [
    ("helpers/rules.py", "from . import norm\n\ndef same(row):\n    return True\n"),  # imported directly
    ("helpers/norm.py", "import importlib\n_impl = importlib.import_module('helpers.' + 'deep')\n\n"
                        "def text(s):\n    return s[:4]\n"),                            # transitively (relative)
    ("helpers/deep.py", "def fold(s):\n    return s[:4]\n"),                              # by a computed name
    ("helpers/__init__.py", "import sys\nsys.modules[__name__].patched = True\n"),       # a package __init__
])
def test_editing_a_module_the_cache_imports_reruns(tmp_path, edited, new_text):
    # Issue #12: editing a helper module of the scored cache served the old result.
    src, cache_dir = _project(tmp_path, CLOSURE_FILES), tmp_path / "eval"
    first = _eval(src, BENCH, cache_dir, "--json", str(tmp_path / "a.json"))
    assert first.returncode == 0, first.stderr
    again = _eval(src, BENCH, cache_dir)
    assert again.returncode == 0 and SERVED in again.stderr  # unchanged code: served
    (src / edited).write_text(new_text, encoding="utf-8")
    after = _eval(src, BENCH, cache_dir, "--json", str(tmp_path / "b.json"))
    assert after.returncode == 0, after.stderr
    assert SERVED not in after.stderr
    if edited != "helpers/__init__.py":  # the others change decisions: the fresh score differs
        a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
        assert a["confusion"] != b["confusion"]


def test_the_closure_keys_project_modules_by_hash_and_installed_ones_by_version(tmp_path, monkeypatch):
    src = _project(tmp_path, {**CLOSURE_FILES, "mycache.py": "import json\nimport pytest\nimport not_installed_xyz\n"
                                                           "from helpers.rules import same\n"})
    monkeypatch.syspath_prepend(str(src))
    from pipeline.harness.closure import code_identity

    code = code_identity(["mycache"])
    # helpers.deep is imported by a computed name: only an imported module's globals reveal it
    # (test_editing_a_module_the_cache_imports_reruns covers that); nothing is imported here
    assert sorted(code["modules"]) == ["helpers", "helpers.norm", "helpers.rules", "mycache"]
    assert [d.split("==")[0] for d in code["distributions"]] == ["pytest"]
    assert code["absent"] == ["not_installed_xyz"] and code["unknown"] == []
    assert code["python"].split()[-1] == ".".join(map(str, sys.version_info[:3]))
    assert not [m for m in sys.modules if m.startswith(("mycache", "helpers", "not_installed_xyz"))]  # nothing imported


# The declared values come from a file the cache reads (as from a model folder or a config), so
# changing them changes no code: only reading them where the decision is made can key them.
DECIDE_MODULE = '''
import json
from pathlib import Path

CONF = json.loads(Path(__file__).with_name("conf.json").read_text())
model_snapshot = CONF["module_snapshot"]

class DecideCache:
    model_snapshot = CONF["class_snapshot"]

    def __init__(self):
        self.settings = {"threshold": CONF["threshold"]}

    def decide(self, row):
        return len(row.query_a) > 30
'''


@pytest.mark.parametrize("change", ["instance settings", "class model_snapshot", "module model_snapshot"])
def test_declared_snapshot_and_settings_of_a_decide_class_key_the_result(tmp_path, change):
    # Issue #12: a class deciding through decide() had model_snapshot and settings read as null.
    conf = {"module_snapshot": "m-1", "class_snapshot": "c-1", "threshold": 0.8}
    src = _project(tmp_path, {"mycache.py": DECIDE_MODULE, "conf.json": json.dumps(conf)})
    cache_dir, args = tmp_path / "eval", ("--cache-class", "DecideCache")
    assert _eval(src, BENCH, cache_dir, *args).returncode == 0
    assert SERVED in _eval(src, BENCH, cache_dir, *args).stderr
    key = {"instance settings": "threshold", "class model_snapshot": "class_snapshot",
           "module model_snapshot": "module_snapshot"}[change]
    conf[key] = 0.9 if key == "threshold" else "v-2"
    (src / "conf.json").write_text(json.dumps(conf), encoding="utf-8")
    after = _eval(src, BENCH, cache_dir, *args)
    assert after.returncode == 0 and SERVED not in after.stderr


def test_a_decide_method_is_read_on_the_object_it_is_bound_to(tmp_path, bench, monkeypatch):
    conf = {"module_snapshot": "m-1", "class_snapshot": "c-1", "threshold": 0.8}
    src = _project(tmp_path, {"decide_impl.py": DECIDE_MODULE, "conf.json": json.dumps(conf)})
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.delitem(sys.modules, "decide_impl", raising=False)
    mod = importlib.import_module("decide_impl")
    try:
        ident = implementation_identity(mod.DecideCache().decide)
        assert ident["class"] == "decide_impl.DecideCache.decide"
        assert (ident["model_snapshot"], ident["settings"]) == ("c-1", {"threshold": 0.8})
        assert ident["module_declarations"] == {"decide_impl": {"model_snapshot": "m-1"}}
        ec, run = EvalCache(tmp_path / "eval"), Runner()
        impl = mod.DecideCache()
        ec.cached_run(ec.identity(bench, impl.decide, CONFIG), run)
        impl.settings = {"threshold": 0.95}
        assert ec.cached_run(ec.identity(bench, impl.decide, CONFIG), run) == (run_report(2), False)
    finally:
        sys.modules.pop("decide_impl", None)


def test_a_declared_value_that_cannot_be_read_is_never_cached(tmp_path, bench, capsys):
    class Flaky:
        @property
        def model_snapshot(self):
            raise OSError("weights folder gone")

        def __call__(self, row):
            return False

    ec, run = EvalCache(tmp_path / "eval"), Runner()
    for _ in range(2):
        assert ec.cached_run(ec.identity(bench, Flaky(), CONFIG), run)[1] is False
    assert run.runs == 2 and "model_snapshot of" in capsys.readouterr().err


def test_a_module_global_is_a_declaration_only_when_it_is_data(tmp_path, bench, monkeypatch):
    # `from pipeline.core import settings` in the cache's module is an import, not declared settings
    src = _project(tmp_path, {"imports_settings.py": "from pipeline.core import settings\nmodel_snapshot = 'm-1'\n\n"
                                                     "def cache(row):\n    return False\n"})
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.delitem(sys.modules, "imports_settings", raising=False)
    try:
        mod = importlib.import_module("imports_settings")
        ident = implementation_identity(mod.cache)
        assert ident["module_declarations"] == {"imports_settings": {"model_snapshot": "m-1"}}
        ec, run = EvalCache(tmp_path / "eval"), Runner()
        assert ec.cached_run(ec.identity(bench, mod.cache, CONFIG), run)[1] is False
        assert ec.cached_run(ec.identity(bench, mod.cache, CONFIG), run)[1] is True
    finally:
        sys.modules.pop("imports_settings", None)
