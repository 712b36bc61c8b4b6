"""Trap operators on real requests (domains.corpora.traps): each operator on hand-written requests
(the trap it should make, the traps it must refuse), the independent accept() check, determinism,
follow-ups, the MASSIVE gazetteer's regeneration, and a run on the real corpora."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from domains.corpora.traps import OPERATORS, SINGLE_TURN, accept, followup_traps, traps
from domains.corpora.traps import gazetteer as gz
from domains.corpora.traps.followups import check_detail

DATASETS = Path(os.environ.get("CACHEEVAL_DATASETS_DIR") or Path(__file__).resolve().parents[2].parent / "shared" / "datasets")


def made(text: str, op: str, seed: str = "t"):
    found, _ = traps(text, seed)
    return next((t for t in found if t.operator == op), None)


@pytest.mark.parametrize("op,text,old,new", [
    ("polarity_flip", "What are the benefits of drinking coffee?", "benefits", "drawbacks"),
    ("polarity_flip", "What is the best way to learn Spanish?", "best", "worst"),
    ("polarity_flip", "How to increase my credit score", "increase", "decrease"),
    ("polarity_flip", "The function does not return the list", "does not", "does"),
    ("comparison_flip", "How can I make my essay more concise?", "more", "less"),
    ("comparison_flip", "Is Python faster than Java?", "Python faster than Java", "Java faster than Python"),
    ("unit_change", "How many miles is a marathon?", "miles", "kilometers"),
    ("unit_change", "My laptop has 16 GB of memory, is it enough?", "GB", "MB"),
    ("scope_change", "Why do some people believe the earth is flat?", "some", "all"),
    ("scope_change", "What are the best restaurants in France?", "France", "Europe"),
    ("scope_change", "do i have any events scheduled this week", "this week", "this month"),
    ("scope_change", "Who won Wimbledon in 1980?", "in 1980", "between 1978 and 1982"),
])
def test_operator_makes_the_trap(op, text, old, new):
    t = made(text, op)
    assert t is not None, f"{op} made nothing on {text!r}"
    assert (t.old, t.new) == (old, new)
    assert t.label == "ADVERSARIAL" and accept(text, t.query_b)[0] == op


@pytest.mark.parametrize("op,text,changed", [
    ("entity_swap", "Write a python script to rename files", "python"),
    ("entity_swap", "Is Go a good language to learn?", "Go"),
    ("entity_swap", "What is the population of the UK?", "the UK"),
    ("number_change", "Write a 500 word essay about dogs", "500"),
    ("date_time_change", "Set an alarm for 7 am on Monday", None),
    ("date_time_change", "Who won the World Cup in 1998?", "1998"),
])
def test_operator_changes_the_right_span(op, text, changed):
    t = made(text, op)
    assert t is not None and accept(text, t.query_b)[0] == op
    if changed:
        assert t.old == changed and t.new != changed
    assert t.query_b.count(" ") == text.count(" ") or t.old.startswith("the ")


def test_article_is_fixed():
    t = made("an increase in taxes", "polarity_flip")
    assert t.query_b == "a decrease in taxes"


@pytest.mark.parametrize("op,text", [
    ("polarity_flip", "What are the pros and cons of remote work?"),        # the partner is already there
    ("polarity_flip", "Please do your best to explain this."),              # idiom
    ("polarity_flip", "Use `best` as the variable name"),                   # inside code
    ("polarity_flip", "Why doesn't he want to see me anymore?"),            # negative-polarity word
    ("number_change", "What is new in Python 3.10?"),                       # a version
    ("number_change", "Solve question 3 of the worksheet"),                 # a reference
    ("number_change", "When is volume 5 coming out?"),                      # a name's number
    ("number_change", "Call me at 5551234567"),                             # an id
    ("unit_change", "Convert 5 kg to pounds"),                              # the other unit is there: nonsense
    ("unit_change", "My feet hurt after running"),                          # no number: not a unit
    ("unit_change", "I withdrew 30 pounds from the ATM"),                   # money, not weight
    ("entity_swap", "Read https://python.org/docs first"),                  # URL
    ("entity_swap", "Who founded the New York Times?"),                     # part of a title
    ("entity_swap", "Can you help us with this?"),                          # "us" is not the US
    ("entity_swap", "Tell me about the Bank of England"),                   # institution name
    ("entity_swap", "Go to the store and buy milk"),                        # ambiguous, no code word
    ("comparison_flip", "Political leader Mustafa Kemal is better known by what name?"),
    ("comparison_flip", "How much longer will my card take?"),
    ("date_time_change", "Today I used my card and it was declined."),      # past tense, no schedule
    ("date_time_change", "Let's pretend it is the 1990's"),                 # a decade
    ("scope_change", "Put everything in a single file"),                    # everything is never swapped
    ("scope_change", "I have some topics to discuss"),                      # not a question
    ("scope_change", "Ashton Carter, appointed in 2015, succeeded whom?"),  # year not the filter
])
def test_operator_refuses(op, text):
    assert made(text, op) is None


def test_non_english_is_refused():
    found, drops = traps("Какая масса у домика шириной 140 метров?", "s")
    assert found == [] and drops["all:not_english"] == 1


@pytest.mark.parametrize("a,b,op", [
    ("What are the benefits of X?", "What are the drawbacks of X?", "polarity_flip"),
    ("It is not working", "It is working", "polarity_flip"),
    ("Is Python faster than Java?", "Is Java faster than Python?", "comparison_flip"),
    ("Write a python script", "Write a ruby script", "entity_swap"),
    ("Give me 5 ideas", "Give me 7 ideas", "number_change"),
    ("Wait 5 minutes", "Wait 7 minutes", "date_time_change"),
    ("Best food in Paris", "Best food in France", "scope_change"),
    ("How far is 10 km?", "How far is 10 miles?", "unit_change"),
])
def test_accept_names_the_operator(a, b, op):
    assert accept(a, b)[0] == op


@pytest.mark.parametrize("a,b", [
    ("What are the benefits of X in 2020?", "What are the drawbacks of X in 2021?"),   # two spans
    ("Best food in Paris", "Worst food in Berlin"),                                    # two spans
    ("What is a cat?", "What is a dog?"),                                              # unknown pair
    ("What is the best way?", "What is the Best way?"),                                # case only
    ("Give me 5 ideas", "Give me 5 ideas"),                                            # identical
    ("Write a python script", "Write an python script"),                               # article only
    ("an increase", "an decrease"),                                                    # wrong article
])
def test_accept_rejects(a, b):
    op, reason = accept(a, b)
    assert op is None and reason


def test_deterministic():
    text = "Write a 500 word essay about Paris in 2020 for beginners"
    assert traps(text, "seed-1") == traps(text, "seed-1")
    outs = {tuple(t.query_b for t in traps(text, f"seed-{i}")[0]) for i in range(12)}
    assert len(outs) > 1          # the seed matters


def test_operators_listed():
    assert set(SINGLE_TURN) <= set(OPERATORS)
    assert {"context_detail_change", "context_topic_swap", "context_chatter_inserted"} <= set(OPERATORS)


CTX = [{"role": "user", "content": "What are the benefits of solar panels?"},
       {"role": "assistant", "content": "They cut bills and emissions."}]
OTHER = [{"role": "user", "content": "Recommend thriller novels"}, {"role": "assistant", "content": "Try Gone Girl."}]


def test_followups():
    found, drops = followup_traps(CTX, "Summarise that in one line", "s", [OTHER, CTX])
    by = {t.operator: t for t in found}
    detail = by["context_detail_change"]
    assert detail.label == "ADVERSARIAL" and "drawbacks" in detail.context_b[0]["content"]
    assert check_detail(CTX, detail.context_b)[0] == "polarity_flip"
    assert by["context_topic_swap"].context_b == tuple(OTHER) and by["context_topic_swap"].label == "RELATED_UNSAFE"
    assert "context_chatter_inserted" not in by            # "summarise" reaches the whole conversation
    assert drops["context_chatter_inserted:final_refers_to_whole_conversation"] == 1
    found, _ = followup_traps(CTX, "Make it shorter", "s", [OTHER])
    chat = next(t for t in found if t.operator == "context_chatter_inserted")
    assert chat.label == "PARA_SAFE" and chat.context_b[2:] == tuple(CTX) and chat.context_b[0]["role"] == "user"


def test_check_detail_rejects_two_changes():
    b = [{"role": "user", "content": "What are the drawbacks of solar panels?"},
         {"role": "assistant", "content": "They cost a lot."}]
    assert check_detail(CTX, b)[0] is None


def test_committed_gazetteer_holds_only_names():
    data = json.loads(gz.MASSIVE.read_text(encoding="utf-8"))
    for names in data.values():
        assert all(len(n.split()) <= 2 and n.replace(" ", "").isalpha() for n in names)


needs_data = pytest.mark.skipif(not (DATASETS / "massive").is_dir(),
                                reason=f"real corpora not found at {DATASETS} (set CACHEEVAL_DATASETS_DIR)")


@needs_data
def test_massive_gazetteer_regenerates():
    assert gz.build_massive_names(DATASETS) == json.loads(gz.MASSIVE.read_text(encoding="utf-8"))


@needs_data
def test_real_requests_every_trap_accepted():
    from domains.corpora.traps.survey import requests
    reqs = requests(DATASETS)
    kept = {op: 0 for op in SINGLE_TURN}
    for corpus, rows in reqs.items():
        for rid, text in rows[:400]:
            for t in traps(text, rid)[0]:
                assert accept(text, t.query_b)[0] == t.operator
                kept[t.operator] += 1
    assert all(kept[op] > 0 for op in SINGLE_TURN), kept
