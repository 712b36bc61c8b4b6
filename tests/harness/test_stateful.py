"""Store/lookup caches under the isolated and shared protocols, with hand-written test doubles:
what is stored, what a lookup served, and how a wrong-entry hit is counted."""
from __future__ import annotations

import pytest

from harness_doubles import ExactStore, FirstWordStore, pair
from pipeline.harness.interface import Pair
from pipeline.harness.scoring import Chosen, run_chosen
from pipeline.harness.stateful import ProtocolRun, Request, StoreFailed, is_store_lookup, marker


def run(store, protocol, rows) -> dict:
    """The report of a store/lookup cache under `protocol`: it decides on Pairs, the labels are joined after."""
    return run_chosen(Chosen("store", protocol, store), rows)


def test_request_from_row_and_as_messages():
    row = pair(1, "HIT", "And in grams?", "And in kilograms?", system_prompt_a="You help Alice.",
               context_a=[{"role": "user", "content": "It weighs 2 kg."}], tools_b=[{"name": "convert"}])
    a, b = Request.from_row(row, "a"), Request.from_row(row, "b")
    assert a == Request("And in grams?", "You help Alice.", [{"role": "user", "content": "It weighs 2 kg."}], None)
    assert b.tools == [{"name": "convert"}] and b.system_prompt is None
    assert a.messages() == [{"role": "system", "content": "You help Alice."},
                            {"role": "user", "content": "It weighs 2 kg."},
                            {"role": "user", "content": "And in grams?"}]
    assert b.messages() == [{"role": "user", "content": "And in kilograms?"}]
    with pytest.raises(ValueError):
        Request.from_row(row, "c")


def test_marker_names_the_whole_request():
    assert marker(Request("q")) == marker(Request("q"))        # the same request, the same answer
    assert marker(Request("q")) != marker(Request("q", "You help Bob."))
    assert marker(Request("q")) != marker(Request("q", context=[{"role": "user", "content": "hi"}]))


def test_isolated_protocol_resets_stores_a_and_looks_up_b():
    rows = [pair(1, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8"),
            pair(2, "MISS", "Solve x + 2 = 8", "Solve a + 2 = 8"),
            pair(3, "MISS", "Same words", "Same words", system_prompt_b="You help Bob.")]
    store = ExactStore()
    d = run(store, "isolated", rows)
    assert store.resets == 3 and len(store.entries) == 1         # a fresh cache for every row
    assert d["confusion"] == {"tp": 1, "fp": 0, "fn": 0, "tn": 2}
    assert [x["confidence"] for x in d["decisions"]] == [1.0, 0.0, 0.0]
    assert d["tiers"]["exact"] == 3
    p = d["protocol"]
    assert (p["name"], p["entries_stored"], p["lookups"], p["served"], p["false_hits"]) == ("isolated", 3, 3, 1, 0)


def test_shared_protocol_counts_a_wrong_entry_hit_as_false():
    # One cache holds every A. FirstWordStore keys on the first word, first entry wins:
    # row 1 stores "Solve...", row 2's A ("Solve ...") is ignored, row 3 stores "What...".
    rows = [pair(1, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8 please"),
            pair(2, "HIT", "Solve y - 1 = 3", "Solve y - 1 = 3 now"),        # served row 1's answer
            pair(3, "MISS", "What is 2 + 2?", "Solve 2 + 2"),                # served row 1's answer
            pair(4, "MISS", "What is 3 + 3?", "What is 4 + 4?"),             # served row 3's answer
            pair(5, "MISS", "Name a prime", "List primes")]                  # nothing to serve
    d = run(FirstWordStore(), "shared", rows)
    # row 1: own answer (TP); row 2: someone else's answer on a HIT row (not a TP: FN);
    # rows 3 and 4: any hit on a MISS row is FP; row 5: TN.
    assert d["confusion"] == {"tp": 1, "fp": 2, "fn": 1, "tn": 1}
    p = d["protocol"]
    assert p["entries_stored"] == 5 and p["served"] == 4 and p["served_own"] == 1
    assert p["wrong_entry_hits"] == {"total": 3, "on_hit_rows": 1, "on_miss_rows": 2,
                                     "ids": ["cb-math-0002", "cb-math-0003", "cb-math-0004"]}
    assert p["false_hits"] == 3 and p["served_precision"] == 0.25
    assert "1 on HIT rows, scored FN" in p["summary"]
    # The same cache isolated: every row sees only its own A, so no wrong entries.
    d = run(FirstWordStore(), "isolated", rows)
    assert d["confusion"] == {"tp": 2, "fp": 1, "fn": 0, "tn": 2}
    assert d["protocol"]["wrong_entry_hits"]["total"] == 0


def test_identical_a_requests_share_their_answer_under_shared():
    rows = [pair(1, "HIT", "Capital of France?", "Capital of France?"),
            pair(2, "HIT", "Capital of France?", "Capital of France?")]
    d = run(ExactStore(), "shared", rows)
    assert d["confusion"]["tp"] == 2
    assert d["protocol"]["wrong_entry_hits"]["total"] == 0


def test_protocol_run_refuses_what_it_cannot_run():
    assert is_store_lookup(ExactStore()) and not is_store_lookup(lambda row: True)
    with pytest.raises(TypeError, match="not a store/lookup cache"):
        ProtocolRun(lambda row: True, "isolated")
    with pytest.raises(ValueError, match="protocol must be one of isolated, shared"):
        ProtocolRun(ExactStore(), "pairs")


def test_a_store_that_fails_under_shared_fails_once_in_one_line():
    class Broken(ExactStore):
        def store(self, request, response):
            raise OSError("disk full\nsecond line")

    rows = [pair(1, "HIT", "a", "a"), pair(2, "MISS", "b", "c")]
    with pytest.raises(StoreFailed) as exc:
        run(Broken(), "shared", rows)
    # the runner sees pairs only; the scorer names the row
    assert str(exc.value) == ("Broken raised OSError: disk full while storing row cb-math-0001's A (shared "
                              "protocol). Fix the cache's store, or run it --protocol isolated")
    runner = ProtocolRun(Broken(), "shared", [Pair.of(r, f"k{i}") for i, r in enumerate(rows)])
    with pytest.raises(StoreFailed, match="while storing pair 1's A"):
        runner.prepare()
    runner.prepare()   # not retried on every row
