"""The LLM response cache on a real PostgreSQL server (start one with `eval "$(bash .ci/postgres.sh)"`)."""
from __future__ import annotations

import uuid

import pytest

from pipeline.core.hashing import canonical_json
from pipeline.core.settings import TEST_PG_URL, TEST_REQUIRE_PG, env
from pipeline.services.llm.cached_provider import CachedProvider, ReplayMissError
from pipeline.services.llm.keys import build_request, request_key
from pipeline.services.llm.stores import PostgresStore
from llm_doubles import MSGS, CountingProvider, FakeClock, run_two_writers

URL = env(TEST_PG_URL)
pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _server():
    """Skip without a server, except where the run requires one (.ci/test sets CACHEEVAL_TEST_REQUIRE_PG):
    there a server that did not start fails every test here instead of hiding them."""
    if URL:
        return
    if env(TEST_REQUIRE_PG):
        pytest.fail(f"{TEST_PG_URL} is unset although {TEST_REQUIRE_PG} is set: .ci/postgres.sh did not start "
                    f"PostgreSQL (its output above says why)", pytrace=False)
    pytest.skip(f"{TEST_PG_URL} is unset: run eval \"$(bash .ci/postgres.sh)\" first")


@pytest.fixture
def table():
    name = f"llm_cache_t{uuid.uuid4().hex[:12]}"  # a throw-away table per test: tests never see each other
    yield name
    cleanup = PostgresStore(URL, table=name)
    cleanup.drop()
    cleanup.close()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def store(table, clock):
    s = PostgresStore(URL, table=table, clock=clock)
    yield s
    s.close()


def test_hit_miss_and_replay(store, clock, capsys):
    up = CountingProvider()
    llm = CachedProvider(up, store, "both", clock=clock)
    first = llm.complete(MSGS, temperature=0.2, seed=1)
    second = llm.complete(MSGS, seed=1, temperature=0.2)
    llm.complete(MSGS, temperature=0.2, seed=2)
    assert up.calls == 2 and second.cached and second.text == first.text
    replay = CachedProvider(CountingProvider(), store, "replay", clock=clock)
    assert replay.complete(MSGS, temperature=0.2, seed=1).text == first.text
    with pytest.raises(ReplayMissError, match="CACHEEVAL_LLM_CACHE_MODE=both"):
        replay.complete(MSGS, temperature=0.9)
    assert capsys.readouterr().err == ""


def test_tampered_row_is_never_served(store, clock, capsys):
    up = CountingProvider()
    llm = CachedProvider(up, store, "both", clock=clock)
    llm.complete(MSGS)
    store._conn.execute(f"UPDATE {store.table} SET response = %s",
                        ('{"choices":[{"message":{"content":"a wrong answer"}}]}',))
    again = llm.complete(MSGS)
    assert not again.cached and up.calls == 2 and again.text != "a wrong answer"
    assert "fails its checksum" in capsys.readouterr().err
    assert llm.complete(MSGS).cached


@pytest.mark.parametrize("tamper", ["moved_under_another_key", "truncated_response", "request_of_another_key"])
def test_an_entry_that_its_key_did_not_produce_is_never_served(store, clock, capsys, tamper):
    up = CountingProvider()
    llm = CachedProvider(up, store, "both", clock=clock)
    first = llm.complete(MSGS)
    other = llm.complete([{"role": "user", "content": "a different question"}])
    t = store.table
    if tamper == "moved_under_another_key":  # another entry's response, usage and checksum under this key
        store._conn.execute(f"UPDATE {t} SET (response, usage, checksum) = (SELECT response, usage, checksum "
                            f"FROM {t} WHERE key = %s) WHERE key = %s", (other.key, first.key))
    elif tamper == "truncated_response":
        store._conn.execute(f"UPDATE {t} SET response = left(response, length(response) / 2) WHERE key = %s",
                            (first.key,))
    else:  # the whole row of the other entry under this key
        store._conn.execute(f"UPDATE {t} SET (request, response, usage, checksum) = (SELECT request, response, "
                            f"usage, checksum FROM {t} WHERE key = %s) WHERE key = %s", (other.key, first.key))
    capsys.readouterr()
    again = llm.complete(MSGS)
    assert not again.cached and up.calls == 3 and again.text != other.text
    err = capsys.readouterr().err.strip()
    problem = "does not re-hash to its key" if tamper == "request_of_another_key" else "fails its checksum"
    assert err.startswith("warning: ") and problem in err and first.key[:12] in err and "\n" not in err
    assert llm.complete(MSGS).cached  # the re-run answer replaced the bad row


def test_stats_and_eviction(store, clock):
    llm = CachedProvider(CountingProvider(), store, "both", clock=clock)
    llm.complete([{"role": "user", "content": "kept: hit"}])
    llm.complete([{"role": "user", "content": "dropped: never hit"}])
    clock.t += 40 * 86400
    llm.complete([{"role": "user", "content": "kept: hit"}])
    llm.complete([{"role": "user", "content": "kept: young"}])
    assert store.evict(30) == 1
    stats = store.stats(lambda provider, model: (1.0, 1.0))
    assert stats["entries"] == 2 and stats["bytes"] > 0
    assert (stats["hits_7d"], stats["misses_7d"]) == (1, 1)  # the first two lookups are 40 days old
    assert stats["top_prompts"] == [{"key": stats["top_prompts"][0]["key"], "hits": 1, "prompt": "kept: hit"}]
    assert stats["estimated_usd_saved"] == pytest.approx(1500 / 1e6)


def test_two_processes_writing_at_once_lose_nothing(table, tmp_path):
    PostgresStore(URL, table=table).close()  # create the table first, as a run's start would
    written = run_two_writers(URL, table, tmp_path, count=300, overlap=50)
    assert sum(written) == 550
    store = PostgresStore(URL, table=table)
    try:
        assert store.stats()["entries"] == 550
        for worker in (1, 2):
            for i in (50, 175, 299):
                req = build_request("fake", "fake-2024-01-01",
                                    [{"role": "user", "content": f"worker {worker} prompt {i}"}])
                assert store.get(request_key(req), canonical_json(req)) is not None
    finally:
        store.close()


def test_unreachable_server_is_a_warning_and_a_miss(clock, capsys):
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/none?connect_timeout=2", clock=clock)
    up = CountingProvider()
    llm = CachedProvider(up, store, "both", clock=clock)
    assert llm.complete(MSGS).text and up.calls == 1
    err = capsys.readouterr().err
    assert err.startswith("warning: postgresql ") and "treated as a miss" in err
