"""The step cache (pipeline/orchestration/step_cache.py) and the steps wrapped in it
(pipeline/orchestration/cached_steps.py): a hit returns what the step made; any change of an input
the key must hold (code, configuration, an input value or file, the models, a setting) runs the
step again; a forged, damaged or re-signed entry runs it again."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from pipeline.orchestration import cached_steps, step_cache
from pipeline.orchestration.file_memo import FileMemo
from pipeline.orchestration.step_cache import StepCache, Unfingerprintable, fingerprint


class Counted:
    """A step that counts how often it really ran."""

    def __init__(self, value="result"):
        self.calls, self.value = 0, value

    def __call__(self):
        self.calls += 1
        return {"value": self.value, "call": self.calls}


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A small project tree in place of the real one, for the code identity."""
    root = tmp_path / "project"
    for rel, text in {"domains/math/answers.py": "X = 1\n", "configs/sampling.yaml": "a: 1\n",
                      "sources/curated/llm_replay.jsonl": "{}\n", "pipeline/x.py": "", "assets/a.py": ""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setattr(step_cache, "PROJECT_ROOT", root)
    step_cache.code_identity.cache_clear()
    yield root
    step_cache.code_identity.cache_clear()


def test_a_second_run_is_served_and_equal(tmp_path, tree):
    cache, step = StepCache(tmp_path / "c"), Counted()
    first = cache.run("s", {"x": 1}, step)
    assert cache.run("s", {"x": 1}, step) == first and step.calls == 1
    assert cache.run("s", {"x": 2}, step)["call"] == 2  # another input value
    assert cache.run("other", {"x": 1}, step)["call"] == 3  # another step


@pytest.mark.parametrize("rel,text", [("domains/math/answers.py", "X = 2\n"),  # a plugin module no import walk sees
                                      ("configs/sampling.yaml", "a: 2\n"),
                                      ("sources/curated/llm_replay.jsonl", "{\"a\": 1}\n"),
                                      ("pipeline/new_module.py", "")])
def test_a_change_of_code_config_or_data_runs_the_step_again(tmp_path, tree, rel, text):
    cache, step = StepCache(tmp_path / "c"), Counted()
    cache.run("s", {}, step)
    (tree / rel).write_text(text)
    step_cache.code_identity.cache_clear()  # a new process
    assert cache.run("s", {}, step)["call"] == 2
    step_cache.code_identity.cache_clear()
    assert cache.run("s", {}, step)["call"] == 2  # unchanged since: served


def test_the_code_identity_holds_the_whole_tree_and_the_installed_distributions():
    step_cache.code_identity.cache_clear()
    ident = step_cache.code_identity()
    for rel in ("domains/math/answers.py", "domains/verify/__init__.py", "configs/sampling.yaml",
                "configs/embedders.yaml", "sources/curated/llm_replay.jsonl", "assets/evaluation.py",
                "pipeline/references/verified.py"):
        assert rel in ident["files"], rel
    assert any(d.lower().startswith("sympy-") for d in ident["distributions"])  # imported by a plugin module only


def test_a_setting_that_changes_results_is_in_the_key_and_the_cache_folder_is_not(tmp_path, tree, monkeypatch):
    cache, step = StepCache(tmp_path / "c"), Counted()
    cache.run("s", {}, step)
    monkeypatch.setenv("CACHEEVAL_LLM_CACHE_MODE", "off")
    assert cache.run("s", {}, step)["call"] == 2
    monkeypatch.setenv("CACHEEVAL_WORKERS", "7")
    assert cache.run("s", {}, step)["call"] == 2
    # what .ci/test and .ci/postgres.sh set for the tests: a step the test suite ran is served to the
    # user's own shell (CI run 15's `cacheeval check` test filled a cache a later check missed entirely)
    for name, value in (("CACHEEVAL_TEST_REQUIRE_PG", "1"), ("CACHEEVAL_TEST_PG_URL", "postgresql://127.0.0.1:55432/t"),
                        ("CACHEEVAL_TEST_HF_CACHE", str(tmp_path / "hf"))):
        monkeypatch.setenv(name, value)
        assert cache.run("s", {}, step)["call"] == 2, name


def test_a_damaged_forged_or_resigned_entry_runs_the_step(tmp_path, tree, capsys):
    cache, step = StepCache(tmp_path / "c"), Counted()
    cache.run("s", {}, step)
    (entry,) = (tmp_path / "c" / "steps").rglob("*.step")
    header, payload = entry.read_bytes().split(b"\n", 1)
    entry.write_bytes(header + b"\n" + payload[:-1] + bytes([payload[-1] ^ 1]))  # a flipped bit
    assert cache.run("s", {}, step)["call"] == 2
    assert "signature" in capsys.readouterr().err
    # re-signed with another key: refused
    other = StepCache(tmp_path / "c", key=b"k" * 32)
    import pickle

    forged = pickle.dumps({"value": "forged", "call": 0})
    key = cache.key_of("s", {})
    entry.write_bytes(json.dumps({"schema": step_cache.SCHEMA, "key": key, "step": "s",
                                  "signature": other._signature(key, forged)}).encode() + b"\n" + forged)
    assert cache.run("s", {}, step)["call"] == 3
    entry.write_bytes(b"not json\n")
    assert cache.run("s", {}, step)["call"] == 4
    assert cache.run("s", {}, step)["call"] == 4  # replaced by a good one


def test_inputs_that_cannot_be_fingerprinted_run_uncached(tmp_path, tree, capsys):
    cache, step = StepCache(tmp_path / "c"), Counted()
    cache.run("s", lambda: {"x": fingerprint(object())}, step)
    cache.run("s", lambda: {"x": fingerprint(object())}, step)
    assert step.calls == 2 and "not cached" in capsys.readouterr().err


def test_the_switch_turns_it_off(tmp_path, tree, monkeypatch):
    cache, step = StepCache(tmp_path / "c"), Counted()
    monkeypatch.setenv(step_cache.OFF, "off")
    cache.run("s", {}, step)
    cache.run("s", {}, step)
    assert step.calls == 2


@dataclass(frozen=True)
class Row:
    name: str
    score: float


def test_fingerprint_is_exact_and_order_aware():
    assert fingerprint({"a": 1, "b": 2}) != fingerprint({"b": 2, "a": 1})  # dict order can change a result
    assert fingerprint({1, 2, 3}) == fingerprint({3, 2, 1})
    assert fingerprint(Row("a", 0.1)) != fingerprint(Row("a", 0.1 + 1e-17 + 1e-16))
    assert fingerprint(1) != fingerprint(1.0) != fingerprint(True) and fingerprint("1") != fingerprint(1)
    assert fingerprint([Row("a", 0.5)]) != fingerprint([{"name": "a", "score": 0.5}])  # a dataclass names its class
    # A list and a tuple of the same items are one value: which one a step receives is fixed by its
    # code, and the code is in the key (json writes both as an array).
    assert fingerprint([1, (2, 3)]) == fingerprint((1, [2, 3]))
    # What json cannot write is walked (keys that are tuples), the same value the same fingerprint
    assert fingerprint({(1, 2): {3}}) == fingerprint({(1, 2): {3}}) != fingerprint({(1, 2): {4}})
    with pytest.raises(Unfingerprintable):
        fingerprint(object())
    with pytest.raises(Unfingerprintable):
        fingerprint([{"k": object()}])


def test_the_file_memo_rehashes_a_rewritten_file_even_with_its_old_size_and_mtime(tmp_path):
    f = tmp_path / "weights.bin"
    f.write_bytes(b"a" * 64)
    memo = FileMemo(tmp_path)
    first = memo.sha256(f)
    memo.save()
    st = f.stat()
    f.write_bytes(b"b" * 64)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: ctime moved
    assert FileMemo(tmp_path).sha256(f) != first
    # a memo not signed with the installation key is ignored
    memo = FileMemo(tmp_path)
    memo.sha256(f)
    memo.save()
    data = json.loads((tmp_path / "steps" / "file-sha256.json").read_text())
    data["entries"][str(f)][1] = "0" * 64
    (tmp_path / "steps" / "file-sha256.json").write_text(json.dumps(data))
    assert FileMemo(tmp_path).sha256(f) != "0" * 64


def test_model_snapshots_are_the_embedders_weights_sha256(tmp_path):
    from pipeline.services.embedders import load_embedders_config, weights_sha256

    snaps = step_cache.model_snapshots(tmp_path)
    specs = load_embedders_config().specs
    assert snaps == {n: weights_sha256(s) for n, s in sorted(specs.items())}
    assert step_cache.model_snapshots(tmp_path) == snaps  # from the memo


def test_an_embedding_step_reruns_when_a_model_changes(tmp_path, tree, monkeypatch):
    step = Counted()
    monkeypatch.setattr(cached_steps, "model_snapshots", lambda root: {"m": "1"})
    cached_steps.embedded(tmp_path, "e", lambda: {"texts": "t"}, step)
    cached_steps.embedded(tmp_path, "e", lambda: {"texts": "t"}, step)
    assert step.calls == 1
    monkeypatch.setattr(cached_steps, "model_snapshots", lambda root: {"m": "2"})
    cached_steps.embedded(tmp_path, "e", lambda: {"texts": "t"}, step)
    assert step.calls == 2


def test_generation_and_verification_of_a_real_domain(tmp_path, monkeypatch):
    from domains import check
    from domains.base import GenContext

    calls = {"generate": 0, "verify": 0}
    real_generate, real_verify = check.generate, check.verify_candidates

    def counting(name, real):
        def run(*a, **k):
            calls[name] += 1
            return real(*a, **k)
        return run

    monkeypatch.setattr(check, "generate", counting("generate", real_generate))
    monkeypatch.setattr(check, "verify_candidates", counting("verify", real_verify))
    ctx = GenContext(domain="creative", profile="v1.1", need={"EXACT_HIT": 5})
    made, drops = cached_steps.generate(tmp_path, "creative", ctx)
    again, drops_again = cached_steps.generate(tmp_path, "creative", ctx)
    assert (again, drops_again) == (made, drops) and made and calls["generate"] == 1
    cached_steps.generate(tmp_path, "creative", replace(ctx, need={"EXACT_HIT": 6}))  # another context
    assert calls["generate"] == 2
    cached_steps.generate(tmp_path, "creative", replace(ctx, datasets=object()))  # a datasets dir: never cached
    cached_steps.generate(tmp_path, "creative", replace(ctx, datasets=object()))
    assert calls["generate"] == 4

    kept, vdrops = cached_steps.verify(tmp_path, made[:20])
    assert cached_steps.verify(tmp_path, made[:20]) == (kept, vdrops) and calls["verify"] == 1
    cached_steps.verify(tmp_path, [replace(made[0], query_b=made[0].query_b + " (edited)"), *made[1:20]])
    assert calls["verify"] == 2
    assert cached_steps.sandbox_identity()["node"]  # what runs a candidate's code is in the key
    monkeypatch.setattr(cached_steps, "sandbox_identity", lambda: {"node": "/usr/bin/node v99", "jail": "x"})
    cached_steps.verify(tmp_path, made[:20])
    assert calls["verify"] == 3


def test_a_live_language_model_is_not_cached():
    class Live:
        mode = "both"

    assert cached_steps.llm_identity(Live()) is None
    assert cached_steps.llm_identity(None) == {"mode": "none"}


def test_a_report_step_reruns_when_the_benchmark_bytes_change(tmp_path, tree, monkeypatch):
    from assets.evaluation import bench_step
    from pipeline.orchestration.resources import BuildSettings

    out = tmp_path / "out"
    (out / "splits").mkdir(parents=True)
    (out / "cachebench.jsonl").write_text('{"id": 1}\n')
    (out / "splits" / "train.jsonl").write_text('{"id": 1}\n')
    monkeypatch.setattr(cached_steps, "model_snapshots", lambda root: {})
    build, step = BuildSettings(out_dir=str(out), cache_dir=str(tmp_path / "c")), Counted()
    bench_step(build, "r", step)
    bench_step(build, "r", step)
    assert step.calls == 1
    (out / "splits" / "train.jsonl").write_text('{"id": 2}\n')
    bench_step(build, "r", step)
    assert step.calls == 2
