"""The sandbox's operating-system layers hold on their own: a program that switches the Python guard
off from inside (it walks the frames to the guard's globals and rewrites them) still cannot read
or write anything outside its folder, nor reach the network; and without bubblewrap the sandbox
refuses to run anything (fail closed)."""
from __future__ import annotations

import json
import os
import socket
import uuid
from pathlib import Path

import pytest

from domains.verify import isolation, sandbox
from domains.verify.sandbox import Limits, SandboxUnavailable

ROOT = Path(__file__).resolve().parents[2]
SLOW = Limits(cpu_seconds=5, wall_seconds=20.0)

# Finds the guard's module globals from inside main.py and disables every check: after this the
# audit hook lets everything through (the first probe shows it).
_DISABLE_GUARD = '''
import sys
_f, _g = sys._getframe(), None
while _f is not None:
    if "_hook" in _f.f_globals and "_ROOT" in _f.f_globals:
        _g = _f.f_globals
        break
    _f = _f.f_back
assert _g is not None, "guard not found"
_g["_DENY_PREFIXES"] = ("no-such-event",)
_g["_PATH_EVENTS"] = set()
_g["_ROOT"] = "/"
_g["_inside"] = lambda path: True
'''

_PROBES = '''
import json, os, socket, subprocess

def attempt(fn):
    try:
        return "ok: " + repr(fn())[:120]
    except BaseException as exc:
        return f"denied: {type(exc).__name__}: {exc}"[:200]

def connect(addr):
    s = socket.socket()
    s.settimeout(2)
    s.connect(addr)
    return "connected"

def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    return os.waitpid(pid, 0)[1]

out = {
    "guard_off_subprocess": attempt(lambda: subprocess.run(["/usr/bin/true"]).returncode),
    "guard_off_fork": attempt(fork_and_wait),
    "inside_write": attempt(lambda: open("inside.txt", "w").write("fine")),
    "read_project_file": attempt(lambda: open(PROJECT_FILE).read()),
    "list_project": attempt(lambda: os.listdir(PROJECT_DIR)),
    "list_corpora": attempt(lambda: os.listdir(CORPORA)),
    "list_home": attempt(lambda: os.listdir(HOME)),
    "list_root_home": attempt(lambda: os.listdir("/root")),
    "read_etc_passwd": attempt(lambda: open("/etc/passwd").read()),
    "write_tmp_outside": attempt(lambda: open(TMP_TARGET, "w").write("x")),
    "write_project": attempt(lambda: open(PROJECT_TARGET, "w").write("x")),
    "write_usr": attempt(lambda: open("/usr/cacheeval_escape", "w").write("x")),
    "spawn_read_project": attempt(lambda: subprocess.run(["/bin/cat", PROJECT_FILE], capture_output=True).returncode),
    "spawn_write_tmp": attempt(lambda: subprocess.run(["/bin/sh", "-c", f"echo x > {SPAWN_TARGET}"],
                                                      capture_output=True).returncode),
    "connect_host_loopback": attempt(lambda: connect(("127.0.0.1", HOST_PORT))),
    "connect_internet": attempt(lambda: connect(("1.1.1.1", 53))),
}
print(json.dumps(out))
'''


@pytest.fixture
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    yield srv.getsockname()[1]
    srv.close()


def test_disabled_guard_leaves_nothing_outside_the_folder_reachable(tmp_path, listener):
    tag = uuid.uuid4().hex[:12]
    targets = {"TMP_TARGET": f"/tmp/cacheeval_escape_{tag}", "SPAWN_TARGET": f"/tmp/cacheeval_escape_spawn_{tag}",
               "PROJECT_TARGET": str(ROOT / f"cacheeval_escape_{tag}")}
    names = {"PROJECT_FILE": str(ROOT / "pipeline" / "core" / "settings.py"), "PROJECT_DIR": str(ROOT),
             "CORPORA": str(ROOT.parent / "shared" / "datasets"), "HOME": os.path.expanduser("~"),
             "HOST_PORT": listener, **targets}
    program = "\n".join(f"{k} = {v!r}" for k, v in names.items()) + _DISABLE_GUARD + _PROBES
    res = sandbox.run(program, "", "python", limits=SLOW, use_cache=False, guard=True)
    assert res.status == "passed", (res.status, res.stderr[-2000:])
    got = json.loads(res.stdout.strip().splitlines()[-1])

    # the guard is really off: what it blocks (process creation) now works, inside the jail
    assert got["guard_off_subprocess"] == "ok: 0" and got["guard_off_fork"] == "ok: 0", got
    assert got["inside_write"].startswith("ok"), got
    # ... and still nothing outside the folder can be read: the files are not in the jail at all
    for probe in ("read_project_file", "list_project", "list_corpora", "list_home", "list_root_home",
                  "read_etc_passwd"):
        assert got[probe].startswith("denied: FileNotFoundError"), (probe, got[probe])
    # ... nor written: the jail's root, /tmp and /usr are read-only or not writable for nobody
    for probe in ("write_tmp_outside", "write_project", "write_usr"):
        assert got[probe].startswith("denied:"), (probe, got[probe])
    # ... a spawned process is in the same jail
    assert got["spawn_read_project"] not in ("ok: 0",) and got["spawn_write_tmp"] not in ("ok: 0",), got
    # ... and the network namespace has only its own loopback
    assert got["connect_host_loopback"].startswith("denied: ConnectionRefusedError"), got
    assert got["connect_internet"].startswith("denied: OSError") and "unreachable" in got["connect_internet"], got
    for path in targets.values():
        assert not os.path.exists(path), path
    assert {"mountns", "private_tmp", "ro_system", "netns", "pidns"} <= set(res.isolation)
    assert "uid_nobody" in res.isolation or "userns" in res.isolation


def test_node_without_its_permission_model_is_jailed_too():
    if not os.path.exists("/usr/bin/node") and not __import__("shutil").which("node"):
        pytest.skip("node is not installed")
    tag = uuid.uuid4().hex[:12]
    target = f"/tmp/cacheeval_escape_node_{tag}"
    program = f"""
const fs = require('fs');
const cp = require('child_process');
const out = {{}};
for (const [name, fn] of Object.entries({{
  read_project: () => fs.readFileSync({str(ROOT / 'README.md')!r}, 'utf8').length,
  list_home: () => fs.readdirSync({os.path.expanduser('~')!r}).length,
  write_tmp: () => fs.writeFileSync({target!r}, 'x'),
  spawn: () => cp.execSync('cat {ROOT / 'README.md'}').length,
}})) {{ try {{ out[name] = 'ok ' + fn(); }} catch (e) {{ out[name] = 'denied ' + e.code; }} }}
console.log(JSON.stringify(out));
"""
    res = sandbox.run(program, "", "javascript", limits=SLOW, use_cache=False, guard=False)
    assert res.status == "passed", res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert all(v.startswith("denied") for v in got.values()), got
    assert not os.path.exists(target)


def _forget_isolation():
    isolation._bwrap.cache_clear()
    isolation._probe.cache_clear()
    isolation.identity.cache_clear()


def test_without_bubblewrap_nothing_runs(monkeypatch):
    started = []
    monkeypatch.setattr(isolation.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox.subprocess, "Popen", lambda *a, **k: started.append(a))
    _forget_isolation()
    try:
        with pytest.raises(SandboxUnavailable, match="bubblewrap"):
            sandbox.run("print('unisolated')", "", "python", use_cache=False)
    finally:
        monkeypatch.undo()
        _forget_isolation()
    assert started == []


def test_a_jail_that_cannot_start_is_an_error_not_a_weaker_run(monkeypatch):
    real = isolation._argv

    def broken(workdir, program):
        opts, inside, env, layers = real(workdir, program)
        return [opts[0], "--no-such-bwrap-option", *opts[1:]], inside, env, layers

    monkeypatch.setattr(isolation, "_argv", broken)
    _forget_isolation()
    try:
        with pytest.raises(SandboxUnavailable, match="cannot isolate a run on this machine"):
            sandbox.run("print(1)", "", "python", use_cache=False)
    finally:
        monkeypatch.undo()
        _forget_isolation()


def test_the_verdict_cache_key_covers_the_jail(monkeypatch):
    before = sandbox._persistent_key("k")
    monkeypatch.setattr(isolation, "identity", lambda: "bubblewrap 9.9|other")
    assert sandbox._persistent_key("k") != before
