"""Caches behave alike: each lives under the one cache root, and a damaged cache file is moved aside
with one warning and the work done again, with results identical to those of a clean cache."""
from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dagster import asset, materialize

from pipeline.core import settings
from pipeline.core.sqlite import CacheDB, file_problem, held, open_cache
from pipeline.orchestration.resources import BuildSettings
from pipeline.services.embed_cache import EmbeddingCache, embed_texts
from pipeline.services.embedders import EmbedderSpec

ROOT = Path(__file__).resolve().parents[2]
DAMAGES = ["random_bytes", "half_a_file", "directory", "foreign_schema"]
TEXTS = [f"request number {i}: " + "sort a list of integers " * (i % 5) for i in range(300)]


def damage(path: Path, how: str) -> None:
    """Break a closed cache file the way a crash, a bad disk or a careless user would."""
    data = path.read_bytes()
    assert len(data) > 8192 and not Path(f"{path}-wal").exists()  # several pages, checkpointed on close
    if how == "random_bytes":
        path.write_bytes(random.Random(7).randbytes(len(data)))
    elif how == "half_a_file":
        path.write_bytes(data[: len(data) // 2])
    elif how == "directory":
        path.unlink()
        path.mkdir()
        (path / "stray.txt").write_text("a folder where the cache file should be")
    elif how == "foreign_schema":  # a sound SQLite file, but not ours: its tables lack our columns
        path.unlink()
        db = sqlite3.connect(path)
        for table in ("embeddings", "results", "llm_cache"):
            db.execute(f"CREATE TABLE {table} (something_else TEXT)")
        db.commit()
        db.close()
    else:
        raise ValueError(how)


def warning_lines(err: str, path: Path) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"warning: {path}")]


def assert_set_aside(path: Path, err: str, how: str) -> None:
    lines = warning_lines(err, path)
    assert len(lines) == 1, err
    assert f"moved it to {path.name}.corrupt-1" in lines[0]
    aside = path.with_name(f"{path.name}.corrupt-1")
    assert aside.exists() and aside.is_dir() == (how == "directory")
    assert path.is_file()  # a fresh cache in its place


# --------------------------------------------------------------------------- embeddings


def counting_loader(calls: list):
    # The model boundary: deterministic vectors that depend on the text alone (as the real embedders,
    # which embed one text per call), so a recomputed vector must equal the cached one bit for bit.
    def load(spec, cache_dir):
        def enc(texts):
            calls.append(len(texts))
            v = np.array([[len(t), sum(map(ord, t)) % 97, 1.0 / (1 + len(t))] for t in texts], dtype=np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)  # L2-normalised, as the spec declares
        return enc
    return load


@pytest.fixture
def spec(tmp_path) -> EmbedderSpec:
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"weights v1")
    return EmbedderSpec("t", "sentence_transformers", "t", {"path": str(model)}, "", "mean", True)


def embed_once(path: Path, spec: EmbedderSpec, calls: list):
    cache = EmbeddingCache(path)
    try:
        vecs, _ = embed_texts(spec, TEXTS, cache, path.parent, loader=counting_loader(calls))
    finally:
        cache.close()
    return vecs


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_embedding_cache_is_set_aside_and_vectors_are_identical(tmp_path, spec, capsys, how):
    clean = embed_once(tmp_path / "clean" / "embeddings.sqlite", spec, [])
    path = tmp_path / "cache" / "embeddings.sqlite"
    embed_once(path, spec, [])
    damage(path, how)
    capsys.readouterr()
    calls: list = []
    again = embed_once(path, spec, calls)
    assert_set_aside(path, capsys.readouterr().err, how)
    assert calls == [len(set(TEXTS))]  # recomputed, not read from the damaged file
    assert again.tobytes() == clean.tobytes()
    assert embed_once(path, spec, calls).tobytes() == clean.tobytes() and len(calls) == 1  # the fresh file serves


def test_damage_found_on_a_later_read_is_a_miss_then_set_aside(tmp_path, spec, capsys):
    clean = embed_once(tmp_path / "clean" / "embeddings.sqlite", spec, [])
    path = tmp_path / "cache" / "embeddings.sqlite"
    embed_once(path, spec, [])
    with open(path, "r+b") as fh:  # page 1 (header, schema) intact: the open-time checks pass
        size = fh.seek(0, 2)
        fh.seek(4096)
        fh.write(b"\xff" * (size - 4096))
    capsys.readouterr()
    calls: list = []
    assert embed_once(path, spec, calls).tobytes() == clean.tobytes()
    lines = warning_lines(capsys.readouterr().err, path)
    assert len(lines) == 1 and "is corrupt" in lines[0] and "moved it to embeddings.sqlite.corrupt-1" in lines[0]
    assert calls == [len(set(TEXTS))]
    assert embed_once(path, spec, calls).tobytes() == clean.tobytes() and len(calls) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_unreadable_embedding_cache_is_set_aside(tmp_path, spec, capsys):
    clean = embed_once(tmp_path / "clean" / "embeddings.sqlite", spec, [])
    path = tmp_path / "cache" / "embeddings.sqlite"
    embed_once(path, spec, [])
    path.chmod(0)
    capsys.readouterr()
    assert embed_once(path, spec, []).tobytes() == clean.tobytes()
    assert "cannot be read" in capsys.readouterr().err


def test_a_lock_is_waited_for_never_taken_for_damage(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    ddl = ["CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)"]
    first = CacheDB(path, ddl, what="test cache")
    first.conn.execute("BEGIN IMMEDIATE")  # hold the write lock
    second = CacheDB(path, ddl, what="test cache", wait_s=0.3)  # its DDL cannot get the lock in time
    assert not second.on_disk  # goes on in memory, with a warning
    err = capsys.readouterr().err
    assert "cannot use the test cache" in err and "locked" in err and "moved it" not in err
    first.conn.rollback()
    assert not list(tmp_path.glob("*.corrupt-*")) and file_problem(path) is None
    assert second.run(lambda db: db.execute("SELECT count(*) FROM t").fetchone()[0], -1) == 0


def test_a_second_cache_on_a_file_keeps_the_first_ones_locks(tmp_path):
    # Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's too. The
    # header check read the file with its own descriptor on every open, so a second cache opened on a
    # file in one process dropped the first one's locks; another process closing its connection then
    # found itself alone and deleted the WAL under both (a CI run left a corrupt embeddings.sqlite).
    path = tmp_path / "c.sqlite"
    ddl = ["CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)"]
    first = CacheDB(path, ddl, what="test cache")
    first.run(lambda db: (db.execute("INSERT INTO t VALUES ('a')"), db.commit()), None)
    second = CacheDB(path, ddl, what="test cache")
    assert held(path) and file_problem(path) is None  # not read: this process holds it
    other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM t').fetchall(); c.close()"
    subprocess.run([sys.executable, "-c", other, str(path)], check=True)
    assert Path(f"{path}-wal").exists()  # the other process was not the last: the WAL stays
    second.run(lambda db: (db.execute("INSERT INTO t VALUES ('b')"), db.commit()), None)
    assert first.run(lambda db: db.execute("SELECT count(*) FROM t").fetchone()[0], -1) == 2
    first.close()
    assert held(path)
    second.close()  # the last connection: checkpointed, the WAL gone, the file sound and checked again
    assert not held(path) and not Path(f"{path}-wal").exists() and file_problem(path) is None
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_unusable_folder_means_no_cache_not_a_crash(tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    conn, on_disk = open_cache(blocker / "x.sqlite", ["CREATE TABLE t (k)"], what="test cache")
    assert not on_disk and conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    assert "running without it" in capsys.readouterr().err


# --------------------------------------------------------------------------- sandbox verdicts


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_sandbox_cache_is_set_aside_and_the_verdict_is_identical(tmp_path, monkeypatch, capsys, how):
    from domains.verify import sandbox

    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path))
    programs = [(f"def f(x):\n    return x + {i}", f"assert f(1) == {1 + i + (i % 2)}") for i in range(8)]
    sandbox.clear_cache()
    clean = [sandbox.run(code, tests, "python") for code, tests in programs]
    assert {r.status for r in clean} == {"passed", "failed"}
    sandbox.clear_cache()  # closes the file, as the end of a process would
    path = tmp_path / "sandbox.sqlite"
    damage(path, how)
    real, calls = sandbox._run_uncached, []
    monkeypatch.setattr(sandbox, "_run_uncached", lambda *a: calls.append(a) or real(*a))
    capsys.readouterr()
    again = [sandbox.run(code, tests, "python") for code, tests in programs]
    assert_set_aside(path, capsys.readouterr().err, how)
    assert len(calls) == len(programs)  # every program ran again
    assert [(r.status, r.returncode, r.stdout) for r in again] == [(r.status, r.returncode, r.stdout) for r in clean]
    sandbox.clear_cache()
    assert [sandbox.run(c, t, "python").status for c, t in programs] == [r.status for r in clean]
    assert len(calls) == len(programs)  # served by the fresh file
    sandbox.clear_cache()


@asset
def settings_user(build: BuildSettings) -> str:
    """Stands for candidate_rows: a step that takes the build settings."""
    return str(build.caches)


@asset
def verdict(settings_user: str) -> str:
    """Stands for verified_rows: a step that runs the sandbox without the settings in hand."""
    from domains.verify import sandbox

    return sandbox.run("x = 2", "assert x == 2", "python").status


def test_the_build_cache_dir_reaches_the_sandbox(tmp_path, monkeypatch):
    # while a run uses the build settings, their cache_dir is the process's cache root, so the
    # verdicts land beside the embeddings (and the variable is restored after the run)
    from domains.verify import sandbox

    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "elsewhere"))
    sandbox.clear_cache()
    chosen = tmp_path / "chosen"
    res = materialize([settings_user, verdict], resources={"build": BuildSettings(cache_dir=str(chosen))})
    sandbox.clear_cache()
    assert res.success and res.output_for_node("verdict") == "passed"
    assert (chosen / "sandbox.sqlite").is_file() and not (tmp_path / "elsewhere").exists()
    assert os.environ[settings.CACHE_DIR] == str(tmp_path / "elsewhere")


# --------------------------------------------------------------------------- LLM responses




@pytest.mark.parametrize("how", ["random_bytes", "half_a_file", "directory", "foreign_schema"])
def test_damaged_llm_store_is_set_aside_and_answers_are_identical(tmp_path, capsys, how):
    from pipeline.services.llm.cached_provider import CachedProvider
    from pipeline.services.llm.stores import open_store
    from llm_doubles import CountingProvider, FakeClock

    def answers(path: Path) -> tuple[list[str], int]:
        clock = FakeClock()
        store = open_store(path, clock=clock)
        provider = CountingProvider()
        llm = CachedProvider(provider, store, "both", clock=clock)
        # the fake's answer carries its call number, so a served answer is the one first recorded
        out = [llm.complete([{"role": "user", "content": f"prompt {i} " + "x" * 300}]).text for i in range(60)]
        store.close()
        return out, provider.calls

    clean, _ = answers(tmp_path / "clean" / "llm.sqlite")
    path = tmp_path / "llm" / "llm.sqlite"
    assert answers(path) == (clean, 60)
    damage(path, how)
    capsys.readouterr()
    again, calls = answers(path)
    assert len(warning_lines(capsys.readouterr().err, path)) == 1
    assert len(list(path.parent.glob("llm.sqlite.corrupt-*"))) == 1 and path.is_file()
    assert (again, calls) == (clean, 60)  # asked again, same answers
    assert answers(path) == (clean, 0)    # and the fresh store serves them


# --------------------------------------------------------------------------- evaluation results


def test_eval_results_live_under_the_cache_root_unless_their_variable_says_otherwise(tmp_path, monkeypatch):
    from pipeline.harness.cache import EvalCache

    monkeypatch.delenv(settings.EVAL_CACHE_DIR, raising=False)
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "root"))
    assert EvalCache().path == tmp_path / "root" / "eval"
    monkeypatch.setenv(settings.EVAL_CACHE_DIR, str(tmp_path / "own"))  # read at call time, not import
    assert EvalCache().path == tmp_path / "own"
    monkeypatch.delenv(settings.CACHE_DIR)
    monkeypatch.delenv(settings.EVAL_CACHE_DIR)
    assert EvalCache().path == ROOT / ".cache" / "cacheeval" / "eval"


@pytest.mark.parametrize("how", ["random_bytes", "half_a_file", "directory"])
def test_damaged_eval_entry_is_a_miss_with_an_identical_report(tmp_path, capsys, how):
    from pipeline.harness.cache import EvalCache

    bench = tmp_path / "bench.jsonl"
    bench.write_text('{"id": 1}\n')
    runs = []

    def evaluate() -> dict:
        runs.append(1)
        return {"precision": 0.75, "per_domain": {"math": [3, 4]}}

    ec = EvalCache(tmp_path / "eval")
    ident = ec.identity(bench, evaluate, {"thresholds": [0.8]})
    clean, _ = ec.cached_run(ident, evaluate)
    entry = next((tmp_path / "eval").rglob("*.json"))
    data = entry.read_bytes()
    if how == "random_bytes":
        entry.write_bytes(random.Random(3).randbytes(len(data)))
    elif how == "half_a_file":
        entry.write_bytes(data[: len(data) // 2])
    else:
        entry.unlink()
        entry.mkdir()
    capsys.readouterr()
    report, from_cache = ec.cached_run(ident, evaluate)
    assert (report, from_cache, len(runs)) == (clean, False, 2)
    assert warning_lines(capsys.readouterr().err, entry)


# End to end, a build through a damaged embedding cache gives the same bytes: part of
# tests/e2e/test_build.py::test_byte_identical_with_cold_cache (its cold cache folder starts with random
# bytes where the embeddings' SQLite file belongs), so that CI builds the smoke profile cold once.
