"""LLM response cache: keys, modes, NOCACHE, errors, eviction, stats, concurrency, corruption, providers.

The doubles (CountingProvider, FakeClock, run_two_writers, MSGS) live in tests/llm_doubles.py.
"""
from __future__ import annotations

import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from llm_doubles import MSGS, T0, CountingProvider, FakeClock, run_two_writers
from pipeline.app import cli
from pipeline.core.errors import InputError
from pipeline.core.hashing import canonical_json
from pipeline.services.llm.cached_provider import CachedProvider, LLMError, ReplayMissError
from pipeline.services.llm.keys import NOCACHE_MARKER, build_request, make_entry, request_key
from pipeline.services.llm.stores import SQLiteStore
from pipeline.services.llm.providers import (
    LlamaCppProvider, OpenAICompatibleProvider, gguf_identity, load_llm_config,
)

ROOT = Path(__file__).resolve().parents[2]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock):
    s = SQLiteStore(tmp_path / "llm.sqlite", clock=clock)
    yield s
    s.close()


def cached(store, clock, mode="both", **kw):
    provider = CountingProvider(**kw)
    return CachedProvider(provider, store, mode, clock=clock), provider


def count_rows(store) -> int:
    return store.stats()["entries"]


def test_same_input_twice_calls_upstream_once(store, clock):
    llm, up = cached(store, clock)
    first = llm.complete(MSGS, temperature=0.2, seed=1, max_tokens=16)
    second = llm.complete(MSGS, temperature=0.2, seed=1, max_tokens=16)
    assert up.calls == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text == "answer #1 to What is the capital of France?"
    assert second.raw == first.raw and second.usage == first.usage and second.key == first.key


BASE = dict(messages=MSGS, system="Be brief.", tools=TOOLS, params={"temperature": 0.2, "seed": 1, "max_tokens": 16})


@pytest.mark.parametrize("change", [
    {"params": {"temperature": 0.3, "seed": 1, "max_tokens": 16}},
    {"params": {"temperature": 0.2, "seed": 2, "max_tokens": 16}},
    {"params": {"temperature": 0.2, "seed": 1, "max_tokens": 17}},
    {"params": {"temperature": 0.2, "seed": 1, "max_tokens": 16, "top_p": 0.9}},
    {"tools": []},
    {"tools": None},
    {"tools": [{"type": "function", "function": {"name": "other", "parameters": {}}}]},
    {"system": "Be verbose."},
    {"messages": [{"role": "user", "content": "What is the capital of Spain?"}]},
    {"model": "fake-2024-02-02"},
    {"provider": "other"},
    {"settings": {"chat_format": "chatml"}},
], ids=["temperature", "seed", "max_tokens", "top_p", "no_tools", "tools_none", "other_tool", "system",
        "message_content", "model_snapshot", "provider", "provider_settings"])
def test_any_semantic_change_changes_the_key(change):
    def key(**over):
        args = {**BASE, "provider": "fake", "model": "fake-2024-01-01", "settings": {"chat_format": "plain"}, **over}
        return request_key(build_request(args["provider"], args["model"], args["messages"], system=args["system"],
                                         tools=args["tools"], settings=args["settings"], params=args["params"]))
    assert key() != key(**change)


def test_message_order_is_a_miss(store, clock):
    llm, up = cached(store, clock)
    convo = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    llm.complete(convo)
    llm.complete([convo[2], convo[1], convo[0]])
    assert up.calls == 2


def test_different_temperature_seed_snapshot_or_tools_miss_through_the_provider(store, clock):
    llm, up = cached(store, clock)
    llm.complete(MSGS, temperature=0.2, seed=1)
    llm.complete(MSGS, temperature=0.7, seed=1)
    llm.complete(MSGS, temperature=0.2, seed=2)
    llm.complete(MSGS, temperature=0.2, seed=1, tools=TOOLS)
    other, up2 = cached(store, clock, snapshot="fake-2024-09-09")
    other.complete(MSGS, temperature=0.2, seed=1)
    assert (up.calls, up2.calls) == (4, 1)
    assert count_rows(store) == 5


def test_dict_key_order_and_operational_params_hit(store, clock):
    llm, up = cached(store, clock)
    tool_a = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    tool_b = {"function": {"parameters": {"properties": {}, "type": "object"}, "name": "f"}, "type": "function"}
    llm.complete([{"role": "user", "content": "hi"}], tools=[tool_a], temperature=0, seed=3, timeout=5)
    again = llm.complete([{"content": "hi", "role": "user"}], tools=[tool_b], seed=3, temperature=0.0, n_threads=8)
    assert up.calls == 1 and again.cached


def test_canonical_json_is_sorted_at_every_level():
    assert canonical_json({"b": {"y": 1, "x": [{"d": 1, "c": 2}]}, "a": "é"}) == '{"a":"é","b":{"x":[{"c":2,"d":1}],"y":1}}'


def test_off_bypasses_the_store(store, clock):
    llm, up = cached(store, clock, mode="off")
    llm.complete(MSGS)
    llm.complete(MSGS)
    assert up.calls == 2 and count_rows(store) == 0
    assert CachedProvider(CountingProvider(), None, "off").complete(MSGS).text  # off needs no store at all


def test_read_mode_never_writes_and_write_mode_never_reads(store, clock):
    reader, up_r = cached(store, clock, mode="read")
    reader.complete(MSGS)
    assert up_r.calls == 1 and count_rows(store) == 0
    writer, up_w = cached(store, clock, mode="write")
    writer.complete(MSGS)
    writer.complete(MSGS)
    assert up_w.calls == 2 and count_rows(store) == 1
    hit = reader.complete(MSGS)
    assert hit.cached and up_r.calls == 1


def test_replay_serves_hits_and_fails_clearly_on_a_miss(store, clock):
    recorder, _ = cached(store, clock, mode="both")
    recorded = recorder.complete(MSGS, seed=1)
    replay, up = cached(store, clock, mode="replay")
    assert replay.complete(MSGS, seed=1).text == recorded.text
    with pytest.raises(ReplayMissError) as err:
        replay.complete(MSGS, seed=2)
    key = request_key(build_request("fake", "fake-2024-01-01", MSGS, settings={"chat_format": "plain"},
                                    params={"seed": 2}))
    message = str(err.value)
    assert "\n" not in message and key[:12] in message
    assert "CACHEEVAL_LLM_CACHE_MODE=both" in message and "model" in message
    assert up.calls == 0


def test_mode_from_environment_and_bad_mode(store, clock, monkeypatch):
    monkeypatch.setenv("CACHEEVAL_LLM_CACHE_MODE", "replay")
    assert CachedProvider(CountingProvider(), store, clock=clock).mode == "replay"
    assert CachedProvider(CountingProvider(), store, "read", clock=clock).mode == "read"  # argument wins
    monkeypatch.setenv("CACHEEVAL_LLM_CACHE_MODE", "sometimes")
    with pytest.raises(InputError, match="CACHEEVAL_LLM_CACHE_MODE: unknown LLM cache mode 'sometimes'"):
        CachedProvider(CountingProvider(), store, clock=clock)


def test_nocache_marker_is_never_stored(store, clock):
    llm, up = cached(store, clock)
    msgs = [{"role": "user", "content": f"time now? {NOCACHE_MARKER}"}]
    llm.complete(msgs)
    llm.complete(msgs)
    llm.complete(MSGS, system=f"{NOCACHE_MARKER} system")
    assert up.calls == 3 and count_rows(store) == 0
    with pytest.raises(ReplayMissError, match=NOCACHE_MARKER):
        cached(store, clock, mode="replay")[0].complete(msgs)


@pytest.mark.parametrize("behaviour", ["error", "error_body"])
def test_errors_are_never_stored(store, clock, behaviour):
    llm, up = cached(store, clock, behaviour=behaviour)
    for _ in range(2):
        with pytest.raises(LLMError):
            llm.complete(MSGS)
    assert up.calls == 2 and count_rows(store) == 0


def test_empty_responses_are_returned_but_never_stored(store, clock):
    llm, up = cached(store, clock, behaviour="empty")
    assert llm.complete(MSGS).text == "" and llm.complete(MSGS).text == ""
    assert up.calls == 2 and count_rows(store) == 0
    empty = {"choices": [{"message": {"role": "assistant", "content": "  "}}]}
    assert store.put(make_entry(build_request("fake", "m-2024-01-01", MSGS), empty, T0)) is False


def test_eviction_respects_hit_count_and_age(store, clock):
    llm, _ = cached(store, clock)
    llm.complete([{"role": "user", "content": "old and hit"}])
    llm.complete([{"role": "user", "content": "old never hit"}])
    clock.t += 40 * 86400
    llm.complete([{"role": "user", "content": "old and hit"}])  # a hit, 40 days later
    llm.complete([{"role": "user", "content": "new never hit"}])
    assert store.evict(30) == 1
    assert count_rows(store) == 2
    replay = cached(store, clock, mode="replay")[0]
    replay.complete([{"role": "user", "content": "old and hit"}])
    with pytest.raises(ReplayMissError):
        replay.complete([{"role": "user", "content": "old never hit"}])
    assert store.evict(0) == 0  # "new never hit" was made this very second: not older than 0 days
    clock.t += 1
    assert store.evict(0) == 1 and count_rows(store) == 1  # only the entry that was hit survives


def test_stats_counts_hits_over_seven_days_and_savings(store, clock):
    llm, _ = cached(store, clock)
    llm.complete([{"role": "user", "content": "stale"}])           # miss, day 0
    llm.complete([{"role": "user", "content": "stale"}])           # hit, day 0
    clock.t += 8 * 86400                                             # day 0 leaves the window
    llm.complete([{"role": "user", "content": "popular  prompt"}])  # miss
    for _ in range(3):
        llm.complete([{"role": "user", "content": "popular  prompt"}])
    stats = store.stats(lambda provider, model: (1.0, 2.0))
    assert stats["entries"] == 2 and stats["bytes"] > 0 and stats["file_bytes"] > 0
    assert (stats["hits_7d"], stats["misses_7d"], stats["hit_rate_7d"]) == (3, 1, 0.75)
    assert [(p["hits"], p["prompt"]) for p in stats["top_prompts"]] == [(3, "popular prompt"), (1, "stale")]
    # 4 hits × (1000 input tokens × $1 + 500 output tokens × $2) per million
    assert stats["estimated_usd_saved"] == pytest.approx(4 * 2000 / 1e6)


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    db = tmp_path / "shared.sqlite"
    written = run_two_writers(str(db), "llm_cache", tmp_path, count=300, overlap=50)
    assert sum(written) == 550  # each shared prompt stored once, by whichever process won
    store = SQLiteStore(db)
    assert store.stats()["entries"] == 550
    for worker in (1, 2):
        for i in range(50, 300):
            req = build_request("fake", "fake-2024-01-01", [{"role": "user", "content": f"worker {worker} prompt {i}"}])
            assert store.get(request_key(req), canonical_json(req)) is not None
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def fill(store, clock, n=5):
    llm, up = cached(store, clock)
    for i in range(n):
        llm.complete([{"role": "user", "content": f"prompt {i} " + "x" * 400}])
    return llm, up


@pytest.mark.parametrize("damage", ["garbage", "truncated", "zero_header"])
def test_corrupt_or_truncated_file_is_moved_aside_and_work_reruns(tmp_path, clock, capsys, damage):
    path = tmp_path / "llm.sqlite"
    store = SQLiteStore(path, clock=clock)
    fill(store, clock, n=200)
    store.close()
    data = path.read_bytes()
    assert len(data) > 8192 and not Path(f"{path}-wal").exists()  # checkpointed into the main file on close
    if damage == "garbage":
        path.write_bytes(b"this is not a database\n" * 100)
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(b"\0" * 100 + data[100:])
    store = SQLiteStore(path, clock=clock)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {path}: LLM cache file ") and "moved it to" in err[0]
    assert len(list(tmp_path.glob("llm.sqlite.corrupt-*"))) == 1
    llm, up = fill(store, clock, n=3)
    assert up.calls == 3  # a miss each: re-run, never served from the damaged file
    again = llm.complete([{"role": "user", "content": "prompt 0 " + "x" * 400}])
    assert again.cached and up.calls == 3


def test_damage_behind_a_valid_header_is_found_on_read_and_reruns(tmp_path, clock, capsys):
    path = tmp_path / "llm.sqlite"
    store = SQLiteStore(path, clock=clock)
    fill(store, clock, n=50)
    store.close()
    with open(path, "r+b") as fh:  # keep page 1 (header, schema) intact; scribble over every other page
        size = fh.seek(0, 2)
        fh.seek(4096)
        fh.write(b"\xff" * (size - 4096))
    store = SQLiteStore(path, clock=clock)
    assert capsys.readouterr().err == ""  # the header check cannot see it: reads must
    llm, up = cached(store, clock)
    result = llm.complete([{"role": "user", "content": "prompt 7 " + "x" * 400}])
    assert not result.cached and up.calls == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is corrupt" in err[0] and "moved it to" in err[0]
    assert llm.complete([{"role": "user", "content": "prompt 7 " + "x" * 400}]).cached  # rebuilt cache works


@pytest.mark.parametrize("column, value, problem", [
    ("response", '{"choices":[{"message":{"content":"a wrong answer"}}]}', "fails its checksum"),
    ("request", '{"messages":[],"model":"x","provider":"fake"}', "does not re-hash to its key"),
    ("usage", '{"prompt_tokens":1}', "fails its checksum"),
])
def test_tampered_row_is_never_served(store, clock, capsys, column, value, problem):
    llm, up = cached(store, clock)
    first = llm.complete(MSGS)
    store._conn.execute(f"UPDATE llm_cache SET {column} = ?", (value,))
    second = llm.complete(MSGS)
    assert not second.cached and up.calls == 2 and second.text != "a wrong answer"
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: ") and problem in err and first.key[:12] in err and "\n" not in err
    assert llm.complete(MSGS).cached  # the re-run answer was stored in place of the bad row


@pytest.mark.parametrize("tamper", ["moved_under_another_key", "truncated_response"])
def test_an_entry_that_its_key_did_not_produce_is_never_served(store, clock, capsys, tamper):
    # what a careless copy or a crash mid-write would leave: another entry's row (response and
    # checksum) under this key, or half a response behind an intact checksum
    llm, up = cached(store, clock)
    first = llm.complete(MSGS)
    other = llm.complete([{"role": "user", "content": "a different question"}])
    if tamper == "moved_under_another_key":
        store._conn.execute("UPDATE llm_cache SET response = (SELECT response FROM llm_cache WHERE key = ?), "
                            "usage = (SELECT usage FROM llm_cache WHERE key = ?), "
                            "checksum = (SELECT checksum FROM llm_cache WHERE key = ?) WHERE key = ?",
                            (other.key, other.key, other.key, first.key))
    else:
        store._conn.execute("UPDATE llm_cache SET response = substr(response, 1, length(response) / 2) WHERE key = ?",
                            (first.key,))
    capsys.readouterr()
    again = llm.complete(MSGS)
    assert not again.cached and up.calls == 3 and again.text != other.text
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: ") and "fails its checksum" in err and first.key[:12] in err and "\n" not in err
    assert llm.complete(MSGS).text == again.text and llm.complete(MSGS).cached  # overwritten by the re-run


def _replay_request(entry) -> dict:
    request = json.loads(entry.request)
    return dict(messages=request["messages"], system=request["system"], tools=request["tools"], **request["params"])


def test_replayed_responses_are_checked_like_any_stored_one(tmp_path, capsys):
    from pipeline.services.llm.replay import REPLAY_FILE, load_entries, replay_llm

    private = tmp_path / "llm_replay.jsonl"  # a copy: the process's replay store of the real file stays clean
    private.write_bytes(REPLAY_FILE.read_bytes())
    llm = replay_llm(private)
    entry = next(e for e in load_entries(private) if e.model == llm.model_snapshot)   # the configured model's
    hit = llm.complete(**_replay_request(entry))
    assert hit.cached and hit.raw == json.loads(entry.response)
    llm.store._conn.execute("UPDATE llm_cache SET response = ? WHERE key = ?",
                            ('{"choices":[{"message":{"content":"a wrong answer"}}]}', entry.key))
    capsys.readouterr()
    with pytest.raises(ReplayMissError):  # never the wrong answer: replay has no model to ask instead
        llm.complete(**_replay_request(entry))
    assert capsys.readouterr().err.startswith(f"warning: LLM cache (in memory): entry {entry.key[:12]} has a "
                                              f"response that fails its checksum")


REPLAY_SCRIPT = """
import sys
from pipeline.services.llm.replay import REPLAY_FILE, load_entries, replay_llm
import json
llm = replay_llm()
entry = next(e for e in load_entries() if e.model == llm.model_snapshot)   # the configured model's
request = json.loads(entry.request)
assert llm.complete(messages=request["messages"], system=request["system"], tools=request["tools"],
                    **request["params"]).cached
if sys.argv[1] == "fail":
    raise RuntimeError("a build step that fails after replaying")
"""


@pytest.mark.parametrize("outcome", ["success", "failure"])
def test_the_replay_store_leaves_no_folder_in_the_temp_dir(tmp_path, outcome):
    # every build used to leave a cacheeval-replay-* folder behind (the replay store's SQLite file)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", REPLAY_SCRIPT, "fail" if outcome == "failure" else "ok"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == (1 if outcome == "failure" else 0), proc.stderr[-2000:]
    assert "a build step that fails" in proc.stderr or outcome == "success"
    assert not [p.name for p in tmp.iterdir() if p.name.startswith("cacheeval-replay-")]


def test_cli_stats_json_and_evict(tmp_path, clock, capsys):
    db = tmp_path / "c.sqlite"
    store = SQLiteStore(db)  # real clock: the CLI runs now
    llm = CachedProvider(CountingProvider(), store, "both")
    llm.complete(MSGS)
    llm.complete(MSGS)
    store._conn.execute("UPDATE llm_cache SET created_at = created_at - 86400 * 100")
    llm.complete([{"role": "user", "content": "never hit"}])
    store._conn.execute("UPDATE llm_cache SET created_at = created_at - 86400 * 100 WHERE hit_count = 0")
    store.close()
    assert cli.main(["llm-cache", "stats", "--json", "--db", str(db)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 2 and stats["hits_7d"] == 1 and stats["misses_7d"] == 2
    assert stats["top_prompts"][0]["prompt"] == "What is the capital of France?"
    assert stats["estimated_usd_saved"] == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)  # configs/llm.yaml default
    assert cli.main(["llm-cache", "evict", "--older-than", "30", "--db", str(db)]) == 0
    assert "evicted 1 entries" in capsys.readouterr().out
    assert cli.main(["llm-cache", "stats", "--db", str(db)]) == 0
    assert "entries:             1" in capsys.readouterr().out
    assert cli.main(["llm-cache", "evict", "--older-than", "-1", "--db", str(db)]) == 1
    assert capsys.readouterr().err.startswith("error: --older-than -1.0: negative age.")


@pytest.mark.parametrize("action", ["stats", "evict"])
@pytest.mark.parametrize("kind", ["folder", "missing", "fifo"])
def test_cli_db_that_is_not_a_cache_file_is_one_line(tmp_path, capsys, action, kind):
    # Issue #12: `llm-cache stats --db DIR` gave a traceback (later: moved the folder aside as a
    # damaged cache and made a new file in its place). A --db that is not a file is left as it is.
    db = tmp_path / "given"
    if kind == "folder":
        db.mkdir()
        (db / "keep.txt").write_text("mine", encoding="utf-8")
    elif kind == "fifo":
        import os

        os.mkfifo(db)
    assert cli.main(["llm-cache", action, "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    what = {"folder": "is a folder, not an SQLite file", "missing": "no such file", "fifo": "is not a regular file"}[kind]
    assert out == "" and err.startswith(f"error: --db {db}: {what}. Pass the LLM cache's SQLite file (configured: ")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if kind == "missing" else ["given"])
    if kind == "folder":
        assert (db / "keep.txt").read_text(encoding="utf-8") == "mine"


# ---------------------------------------------------------------------------------------- providers

def test_llama_cpp_identity_is_the_gguf_sha256_and_checked_against_the_pin(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 10)
    import hashlib
    expected = "gguf-sha256:" + hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert LlamaCppProvider(gguf).model_snapshot == gguf_identity(gguf) == expected
    assert LlamaCppProvider(None, snapshot=expected).model_snapshot == expected  # replay without the file
    with pytest.raises(InputError, match="hashes to"):
        LlamaCppProvider(gguf, snapshot="gguf-sha256:" + "0" * 64)
    with pytest.raises(InputError, match="no snapshot pinned"):
        LlamaCppProvider(tmp_path / "missing.gguf")


def test_llama_cpp_missing_runtime_is_a_clear_error_and_hits_need_no_runtime(tmp_path, store, clock):
    try:
        import llama_cpp  # noqa: F401
        pytest.skip("llama-cpp-python is installed: the missing-runtime message cannot be shown")
    except ImportError:
        pass
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF fake weights")
    llm = CachedProvider(LlamaCppProvider(gguf), store, "both", clock=clock)
    with pytest.raises(LLMError, match=r"llama-cpp-python is not installed. Run bash \.ci/install-llm"):
        llm.complete(MSGS)
    assert count_rows(store) == 0
    req = build_request("llama_cpp", gguf_identity(gguf), MSGS, settings={"chat_format": None})
    store.put(make_entry(req, {"choices": [{"message": {"content": "Paris"}}]}, T0))
    assert llm.complete(MSGS).text == "Paris"  # served without loading llama_cpp


class _Endpoint(http.server.BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Endpoint.bodies.append((self.path, self.headers.get("Authorization"), body))
        if body["messages"][-1]["content"] == "fail":
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"model is loading\n")
            return
        answer = {"model": body["model"], "choices": [{"message": {"role": "assistant", "content": "pong"}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_compatible_provider_over_real_http(store, clock):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/v1"
        with pytest.raises(InputError, match="'local' is an alias"):
            OpenAICompatibleProvider(base, "local")
        provider = OpenAICompatibleProvider(base, "local", snapshot="local-2025-01-01", api_key="k", timeout_s=5)
        llm = CachedProvider(provider, store, "both", clock=clock)
        _Endpoint.bodies.clear()
        assert llm.complete([{"role": "user", "content": "ping"}], system="s", temperature=0, seed=1).text == "pong"
        assert llm.complete([{"role": "user", "content": "ping"}], system="s", temperature=0, seed=1).cached
        path, auth, body = _Endpoint.bodies[0]
        assert len(_Endpoint.bodies) == 1 and path == "/v1/chat/completions" and auth == "Bearer k"
        assert body == {"model": "local", "messages": [{"role": "system", "content": "s"},
                                                       {"role": "user", "content": "ping"}], "temperature": 0, "seed": 1}
        with pytest.raises(LLMError, match="HTTP 503 model is loading"):
            llm.complete([{"role": "user", "content": "fail"}])
        assert count_rows(store) == 1
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_endpoint_is_a_one_line_error(store, clock):
    llm = CachedProvider(OpenAICompatibleProvider("http://127.0.0.1:9/v1", "m-2024-01-01", timeout_s=2), store,
                         "both", clock=clock)
    with pytest.raises(LLMError, match="unreachable") as err:
        llm.complete(MSGS)
    assert "\n" not in str(err.value)


def test_llm_config_loads_and_rejects_unknown_keys(tmp_path):
    config = load_llm_config()
    assert config.provider in config.providers and config.mode == "replay"
    assert config.price("llama_cpp", "gguf-sha256:abc") == (0.15, 0.60)
    bad = tmp_path / "llm.yaml"
    bad.write_text("provider: a\nproviders:\n  a: {kind: llama_cpp, gguf: x.gguf, temprature: 1}\n"
                   "cache: {sqlite_path: c.sqlite}\n")
    with pytest.raises(InputError, match=r"providers.a: unknown key\(s\) temprature"):
        load_llm_config(bad)


def test_open_llm_resolves_the_provider_once_and_honours_the_mode(tmp_path, monkeypatch):
    from pipeline.services.llm.providers import open_llm

    config = tmp_path / "llm.yaml"
    pin = "gguf-sha256:" + "1" * 64
    config.write_text(f"provider: pinned\nproviders:\n  pinned: {{kind: llama_cpp, gguf: {tmp_path}/absent.gguf, "
                      f"snapshot: '{pin}'}}\ncache: {{mode: replay, sqlite_path: {tmp_path}/c.sqlite}}\n")
    monkeypatch.delenv("CACHEEVAL_LLM_CACHE_MODE", raising=False)
    llm = open_llm(config_path=config)
    assert (llm.mode, llm.model_snapshot, llm.name) == ("replay", pin, "llama_cpp")
    with pytest.raises(ReplayMissError, match="replay mode"):
        llm.complete(MSGS, temperature=0.7, seed=1, max_tokens=32)
    monkeypatch.setenv("CACHEEVAL_LLM_CACHE_MODE", "off")
    assert open_llm(config_path=config).store is None
    with pytest.raises(LLMError, match="no GGUF file"):
        open_llm(config_path=config).complete(MSGS)


def test_set_up_that_finds_the_file_locked_is_retried_not_given_up():
    # Two processes switching a new file to WAL at once get "database is locked" without SQLite's busy
    # handler being called; opening must retry rather than run without the cache.
    from pipeline.core.sqlite import retry_locked

    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "open"

    assert retry_locked(flaky, wait_s=5) == "open" and len(calls) == 3

    def broken():
        raise sqlite3.OperationalError("no such table: x")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_locked(broken, wait_s=5)

    def always_locked():
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_locked(always_locked, wait_s=0.05)
