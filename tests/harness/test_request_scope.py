"""The optional request fields (#29 item 4): user, tenant, tool_choice on a Request; user_*, tenant_*,
tool_choice_*, status_a on a Pair and a row; a stored response's status. Old rows, markers and caches
are unaffected; a cache that reads the new fields can use them, in process and in a worker."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness_doubles import ExactStore, pair
from stream_doubles import QueryStore
from pipeline.app.cli import main
from pipeline.core.hashing import canonical_json
from pipeline.harness import load_bench
from pipeline.harness.interface import OPTIONAL_FIELDS, REQUEST_FIELDS, Pair, Row
from pipeline.harness.load import BenchmarkInvalid
from pipeline.harness.scoring import Chosen, run_chosen
from pipeline.harness.stateful import ProtocolRun, Request, Response, marker, stored_response
from pipeline.harness.stream import Oracle, StreamConfig, fast_marker, run_stream

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "data" / "bench.jsonl"


def scoped(rid: int, **extra) -> Row:
    """A MISS row whose two requests say the same thing: only the optional fields differ."""
    base = pair(rid, "MISS", "What is my account balance?", "What is my account balance?")
    return Row.from_dict({**base.to_dict(), **extra})


def test_rows_without_the_fields_give_the_pairs_and_markers_of_before():
    row = load_bench(BENCH)[0]
    p = Pair.of(row, "k")
    assert p.keys() == REQUEST_FIELDS and set(p.to_dict()) == {"key", *REQUEST_FIELDS}
    assert all(getattr(p, k) is None for k in OPTIONAL_FIELDS) and "user_a" not in p
    # the marker of a request without them is the one the harness always wrote
    r = Request("q", "sys", [{"role": "user", "content": "hi"}], [{"name": "t"}])
    old = "cacheeval-response-" + hashlib.sha256(canonical_json(["q", "sys", r.context, r.tools]).encode()).hexdigest()[:20]
    assert marker(r) == old == fast_marker(r)


def test_the_fields_reach_the_pair_the_requests_and_the_markers():
    row = scoped(1, user_a="u1", user_b="u2", tenant_a="t", tenant_b="t", tool_choice_a="auto",
                 tool_choice_b={"type": "function", "function": {"name": "f"}}, status_a="error")
    p = Pair.of(row, "k")
    assert (p.user_a, p.user_b, p["tenant_b"], p.status_a) == ("u1", "u2", "t", "error")
    assert p.keys() == REQUEST_FIELDS + OPTIONAL_FIELDS and Pair(**p.to_dict()) == p
    assert p.a == Request(row.query_a, user="u1", tenant="t", tool_choice="auto") == Request.from_row(row, "a")
    assert p.b.tool_choice == {"type": "function", "function": {"name": "f"}}
    assert marker(p.a) != marker(p.b) and marker(p.a) != marker(Request(row.query_a))
    for req in (p.a, p.b, Request("q", user="u"), Request("q", tenant="t"), Request("q", tool_choice="none")):
        assert fast_marker(req) == marker(req)
    with pytest.raises(AttributeError, match="requests only"):
        p.label  # noqa: B018


def test_a_response_with_a_status_is_still_the_string():
    r = Response("cacheeval-response-x", "refusal")
    assert r == "cacheeval-response-x" and hash(r) == hash("cacheeval-response-x") and r.status == "refusal"
    assert json.dumps(r) == '"cacheeval-response-x"'
    assert type(stored_response("m", None)) is str and type(stored_response("m", "ok")) is str
    with pytest.raises(ValueError, match="status must be one of"):
        Response("m", "broken")


class ScopedStore(ExactStore):
    """Serves only the same query for the same user and tenant, and never keeps a response that
    was not ok: a cache that reads the new fields."""

    def store(self, request, response):
        if getattr(response, "status", "ok") == "ok":
            super().store(Request(f"{request.user}|{request.tenant}|{request.tool_choice}|{request.query}"), response)

    def lookup(self, request):
        return super().lookup(Request(f"{request.user}|{request.tenant}|{request.tool_choice}|{request.query}"))


def test_isolated_protocol_stores_the_status_and_old_caches_run_unchanged():
    rows = [scoped(1, user_a="u1", user_b="u2"), scoped(2, status_a="error"), scoped(3, tenant_a="a", tenant_b="b"),
            scoped(4, tool_choice_a="auto", tool_choice_b="none"), pair(5, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8")]
    old = run_chosen(Chosen("query", "isolated", QueryStore()), rows)   # keys on the query: fooled by every trap
    assert old["confusion"] == {"tp": 1, "fp": 4, "fn": 0, "tn": 0}
    new = run_chosen(Chosen("scoped", "isolated", ScopedStore()), rows)
    assert new["confusion"] == {"tp": 1, "fp": 0, "fn": 0, "tn": 4}
    seen = []

    class Recording(ExactStore):
        def store(self, request, response):
            seen.append((request.user, getattr(response, "status", "ok")))
            super().store(request, response)

    ProtocolRun(Recording(), "isolated")(Pair.of(rows[1], "k"))
    ProtocolRun(Recording(), "isolated")(Pair.of(rows[0], "k"))
    assert seen == [(None, "error"), ("u1", "ok")]


def test_shared_protocol_stores_the_status_too():
    rows = [scoped(1, status_a="refusal"), pair(2, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8")]
    assert run_chosen(Chosen("scoped", "shared", ScopedStore()), rows)["confusion"]["fp"] == 0
    assert run_chosen(Chosen("query", "shared", QueryStore()), rows)["confusion"]["fp"] == 1


def test_stream_counts_a_served_error_or_another_users_answer_as_a_false_hit():
    rows = [scoped(1, status_a="error"), scoped(2, user_a="u1", user_b="u2"),
            pair(3, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8")]
    oracle = Oracle(rows)
    assert oracle.responses[0].status == "error" and oracle.markers[0] in oracle.bad
    assert not oracle.correct(1, oracle.markers[0])        # B of row 1 served A's error
    old = run_stream(QueryStore(), rows, StreamConfig(gap=2, orders=2))
    new = run_stream(ScopedStore(), rows, StreamConfig(gap=2, orders=2))
    assert old["overall"]["false_hits_on_negatives"] > 0 and new["overall"]["wrong"] == 0
    assert new["overall"]["correct"] > 0                     # the HIT row is still served


def test_the_scoring_contract_types_the_fields(tmp_path):
    good = {**pair(1, "MISS", "q", "q").to_dict(), "user_a": "u1", "user_b": "u2", "status_a": "refusal",
            "tool_choice_b": {"type": "function", "function": {"name": "f"}}}
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps(good) + "\n", encoding="utf-8")
    assert load_bench(path, strict=False)[0].extra["status_a"] == "refusal"
    path.write_text(json.dumps({**good, "status_a": "failed", "user_b": 7}) + "\n", encoding="utf-8")
    with pytest.raises(BenchmarkInvalid) as err:
        load_bench(path, strict=False)
    assert "status_a" in str(err.value) and "user_b" in str(err.value)


USER_CACHE = """from pipeline.harness import Verdict
def cache(pair):
    same = (pair.user_a, pair.tenant_a, pair.tool_choice_a) == (pair.user_b, pair.tenant_b, pair.tool_choice_b)
    return Verdict(is_hit=same and pair.status_a in (None, "ok") and pair.query_a.lower() == pair.query_b.lower())
"""


def test_a_users_cache_in_a_worker_sees_the_fields(tmp_path, capsys):
    rows = [scoped(1, user_a="u1", user_b="u2"), scoped(2, status_a="error"), scoped(3, tenant_a="a", tenant_b="b"),
            scoped(4, tool_choice_a="auto", tool_choice_b="none"), pair(5, "HIT", "Solve x + 2 = 8", "solve X + 2 = 8")]
    bench, mod, out = tmp_path / "b.jsonl", tmp_path / "user_cache.py", tmp_path / "r.json"
    bench.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), encoding="utf-8")
    mod.write_text(USER_CACHE, encoding="utf-8")
    code = main(["eval", "--bench", str(bench), "--cache-module", str(mod), "--json", str(out), "--out",
                 str(tmp_path / "r.md"), "--no-cache"])
    capsys.readouterr()
    data = json.loads(out.read_text())
    assert code == 0 and data["isolation"] in ("bubblewrap", "process")
    assert data["confusion"] == {"tp": 1, "fp": 0, "fn": 0, "tn": 4} and data["errors"]["count"] == 0


def test_the_stream_protocol_reads_a_trap_file_under_the_scoring_contract(tmp_path, capsys):
    rows = [{**scoped(i, user_a="u1", user_b="u2").to_dict(), "id": f"trap-other_user-{i}", "domain": "other_user",
             "construction_method": "system_trap"} for i in range(1, 4)]
    bench, out = tmp_path / "traps.jsonl", tmp_path / "r.json"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = main(["eval", "--bench", str(bench), "--cache-module", str(ROOT / "tests" / "stream_doubles.py"),
                 "--cache-class", "QueryStore", "--protocol", "stream", "--in-process", "--orders", "1", "--json",
                 str(out), "--out", str(tmp_path / "r.md"), "--no-cache"])
    capsys.readouterr()
    data = json.loads(out.read_text())
    # QueryStore keys on the query: every B is served A's answer for another user
    assert code == 0 and data["by_domain"]["other_user"]["false_hits_on_negatives"] == 3
