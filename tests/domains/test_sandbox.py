"""The sandbox holds: every escape attempt is stopped and reported as a result, never a crash."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import pytest

from domains.verify import sandbox
from domains.verify.sandbox import Limits, run

FAST = Limits(cpu_seconds=1, wall_seconds=3.0)
HAS_NODE = shutil.which("node") is not None


def _fresh(code: str, language: str = "python", limits: Limits = FAST, guard: bool = True):
    started = time.monotonic()
    result = run(code, "", language, limits=limits, use_cache=False, guard=guard)
    return result, time.monotonic() - started


def _no_stray(marker: str) -> bool:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return marker not in ps


def test_passing_and_failing_programs():
    ok, _ = _fresh("assert sum([1, 2]) == 3\nprint('fine')")
    bad, _ = _fresh("assert 1 == 2")
    assert ok.status == "passed" and "fine" in ok.stdout
    assert bad.status == "failed" and "AssertionError" in bad.stderr


def test_infinite_loop_is_stopped_by_cpu_limit():
    res, took = _fresh("while True:\n    pass")
    assert res.status in ("limit", "timeout") and not res.passed
    assert took < FAST.wall_seconds + 2


def test_sleeping_forever_is_stopped_by_wall_clock():
    res, took = _fresh("import time\ntime.sleep(60)")
    assert res.status == "timeout"
    assert took < FAST.wall_seconds + 2


def test_fork_bomb_is_blocked_by_guard():
    tag = f"forkbomb_{uuid.uuid4().hex[:8]}"
    res, took = _fresh(f"# {tag}\nimport os\nwhile True:\n    os.fork()")
    assert res.status == "blocked" and "os.fork" in res.blocked
    assert took < 3 and _no_stray(tag)


def test_fork_bomb_is_stopped_by_process_limit_without_guard():
    tag = f"forkbomb_{uuid.uuid4().hex[:8]}"
    res, took = _fresh(f"# {tag}\nimport os\nwhile True:\n    os.fork()", guard=False)
    assert res.status in ("limit", "failed", "timeout") and not res.passed
    assert ("uid_nobody" in res.isolation or "userns" in res.isolation) and "pidns" in res.isolation
    time.sleep(0.2)
    assert _no_stray(tag)
    assert took < FAST.wall_seconds + 2


def test_ten_gigabyte_allocation_is_refused():
    res, _ = _fresh("x = bytearray(10 * 1024 ** 3)\nprint('allocated')", guard=False)
    assert res.status == "limit" and "MemoryError" in res.stderr and "allocated" not in res.stdout


def test_socket_connect_is_blocked():
    res, _ = _fresh("import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 53))\nprint('connected')")
    assert res.status == "blocked" and "connected" not in res.stdout


def test_network_namespace_has_no_route_even_without_guard():
    res, _ = _fresh("import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 53))\nprint('connected')",
                    guard=False)
    assert "netns" in res.isolation
    assert res.status == "failed" and "unreachable" in res.stderr.lower() and "connected" not in res.stdout


def test_write_outside_the_folder_is_blocked(tmp_path):
    target = f"/tmp/cacheeval_escape_{uuid.uuid4().hex}.txt"
    res, _ = _fresh(f"open({target!r}, 'w').write('x')")
    assert res.status == "blocked" and "open" in res.blocked
    assert not os.path.exists(target)
    res2, _ = _fresh(f"import os\nos.remove({str(tmp_path)!r})")
    assert res2.status == "blocked" and os.path.exists(tmp_path)


def test_write_inside_the_folder_is_allowed_and_folder_is_removed():
    res, _ = _fresh("import os\nopen('note.txt', 'w').write('hi')\nprint(open('note.txt').read(), os.getcwd())")
    assert res.status == "passed" and res.stdout.startswith("hi")
    workdir = res.stdout.split()[-1]
    assert "cacheeval-sbx-" in workdir and not os.path.exists(workdir)


def test_ctypes_and_subprocess_are_blocked():
    res, _ = _fresh("import ctypes")
    assert res.status == "blocked"
    res2, _ = _fresh("import subprocess\nsubprocess.run(['true'])")
    assert res2.status == "blocked"


def test_output_is_truncated():
    res, _ = _fresh("print('x' * 100000)")
    assert res.status == "passed" and len(res.stdout) < FAST.output_chars + 100 and "truncated" in res.stdout


def test_unknown_language_is_an_error_result_not_an_exception():
    res = run("x", "", "cobol", use_cache=False)
    assert res.status == "error" and not res.passed


def test_results_are_memoised_by_content():
    code, tests = "def f():\n    return 1", "assert f() == 1"
    first = run(code, tests, "python")
    assert run(code, tests, "python") is first
    assert sandbox.cache_key(code, tests, "python", Limits()) != sandbox.cache_key(code, tests, "javascript", Limits())


@pytest.mark.skipif(not HAS_NODE, reason="node is not installed")
def test_node_is_fenced_too():
    loop, took = _fresh("while (true) {}", "javascript")
    assert loop.status in ("limit", "timeout") and took < FAST.wall_seconds + 2
    child, _ = _fresh("require('child_process').execSync('true')", "javascript")
    assert child.status == "blocked"
    target = f"/tmp/cacheeval_escape_{uuid.uuid4().hex}.txt"
    write, _ = _fresh(f"require('fs').writeFileSync({target!r}, 'x')", "javascript")
    assert write.status == "blocked" and not os.path.exists(target)
    ok, _ = _fresh("console.log(1 + 1)", "javascript")
    assert ok.status == "passed" and ok.stdout.strip() == "2"


def test_definite_verdicts_persist_across_processes_and_timeouts_do_not(tmp_path, monkeypatch):
    from domains.verify import sandbox

    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(tmp_path))
    sandbox.clear_cache()
    ok = sandbox.run("x = 1", "assert x == 1", "python")
    assert ok.status == "passed"
    sandbox.clear_cache()  # a new process: only the persistent layer remains
    calls = []
    monkeypatch.setattr(sandbox, "_run_uncached", lambda *a: calls.append(a) or ok)
    assert sandbox.run("x = 1", "assert x == 1", "python").status == "passed" and calls == []
    # a corrupt store is a miss, never a wrong verdict
    import sqlite3
    db = sqlite3.connect(tmp_path / "sandbox.sqlite")
    db.execute("UPDATE results SET value = '{\"status\": \"timeout\"}'")
    db.commit()
    sandbox.clear_cache()
    sandbox.run("x = 1", "assert x == 1", "python")
    assert len(calls) == 1


@pytest.mark.parametrize("tamper", ["moved_under_another_key", "edited_with_its_checksum_recomputed"])
def test_a_stored_verdict_that_is_not_what_its_key_produced_is_rerun(tmp_path, monkeypatch, capsys, tamper):
    import json
    import sqlite3

    monkeypatch.setenv("CACHEEVAL_CACHE_DIR", str(tmp_path))
    sandbox.clear_cache()
    assert sandbox.run("x = 1", "assert x == 2", "python").status == "failed"
    assert sandbox.run("x = 1", "assert x == 1", "python").status == "passed"
    sandbox.clear_cache()
    db = sqlite3.connect(tmp_path / "sandbox.sqlite")
    passed_key = sandbox._persistent_key(sandbox.cache_key("x = 1", "assert x == 1", "python", Limits()))
    failed_key = sandbox._persistent_key(sandbox.cache_key("x = 1", "assert x == 2", "python", Limits()))
    if tamper == "moved_under_another_key":  # the passing entry, value and checksum, copied over the failing one
        value, check = db.execute("SELECT value, checksum FROM results WHERE key = ?", (passed_key,)).fetchone()
    else:  # a verdict that says passed with a failing exit code, checksum made to match
        d = json.loads(db.execute("SELECT value FROM results WHERE key = ?", (failed_key,)).fetchone()[0])
        value = json.dumps({**d, "status": "passed"}, sort_keys=True)
        check = sandbox._checksum(failed_key, value)
    db.execute("UPDATE results SET value = ?, checksum = ? WHERE key = ?", (value, check, failed_key))
    db.commit()
    db.close()
    capsys.readouterr()
    assert sandbox.run("x = 1", "assert x == 2", "python").status == "failed"
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: ") and failed_key[:12] in err and "\n" not in err
    assert ("fails its checksum" if tamper == "moved_under_another_key" else "not a definite verdict") in err
    sandbox.clear_cache()
    assert sandbox.run("x = 1", "assert x == 2", "python").status == "failed"  # overwritten: served quietly
    assert capsys.readouterr().err == ""
    sandbox.clear_cache()
