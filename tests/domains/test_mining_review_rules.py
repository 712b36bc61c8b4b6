"""Mining rules mended after blind readers labelled every mined row of a corpora build (examples
written for the tests, patterned on what the readers flagged): a surface variant of a later turn is
not one request, a question mark or a recased identifier in code is not a surface change, a line
number is no label, and a discourse "now" or a traceback header is not a request for live news.
A second reading (171 rows of the build after 370bf1e) added: a source location's line number, a
negation swapped for another negation, "what time is it" (live), "for now" (not live), and a
follow-up word opening two conversations."""

import pytest
from domain_helpers import Conversation

from domains.corpora import mining as M
from domains.corpora.mining import engine, near
from domains.corpora.mining.single import route
from domains.base import normalize_text


@pytest.mark.parametrize("a, b, label, rule", [
    ("correct?", "Correct!", None, "question_mark_changed"),
    ("It is done?", "It is done.", None, "question_mark_changed"),
    ("Is it done?", "is it done", "EQUIV", "surface_variant"),
    ('I typed:\n>> Total = 5\nand got nothing', 'I typed:\n>> total = 5\nand got nothing', None, "case_change_in_code"),
    ("Why does print(Items) fail", "Why does print(items) fail", None, "case_change_in_code"),
    ('File "app.py", line 87, in load: KeyError', 'File "app.py", line 88, in load: KeyError', None,
     "line_number_undecided"),
    # second reading (the corpora build of 370bf1e): a source location's line, a negation for a negation
    ("TypeError: x.save is not a function\n    at Object.<anonymous> (/srv/web/app.js:14:9)",
     "TypeError: x.save is not a function\n    at Object.<anonymous> (/srv/web/app.js:41:9)", None, "line_number_undecided"),
    ("ImportError in main.py:7", "ImportError in main.py:9", None, "line_number_undecided"),
    ("it didn't work", "it doesn't work", None, "one_token_undecided"),
    ("Write it without a loop", "Write it with no loop", None, "multi_token_change"),
    # what the rules still decide
    ("Use a for loop", "Don't use a for loop", "ADVERSARIAL", "negation_change"),
    ("Describe a city without cars", "Describe a city with cars", "ADVERSARIAL", "negation_change"),
    ("Convert 12 feet to metres on app.js", "Convert 21 feet to metres on app.js", "ADVERSARIAL", "number_change"),
    ("How do I boil an egg?", "how do I boil an egg ?", "EQUIV", "surface_variant"),
    ("Summarise The Great Gatsby", "summarise the great gatsby", "EQUIV", "surface_variant"),
    ("Explain chapter 3 of the book", "Explain chapter 4 of the book", "ADVERSARIAL", "number_change"),
    ("Fix the bug on line 12 and add 3 tests", "Fix the bug on line 12 and add 4 tests", "ADVERSARIAL", "number_change"),
])
def test_decide_after_the_blind_reading(a, b, label, rule):
    d = M.decide(a, b)
    assert (d.label, d.rule) == (label, rule)


@pytest.mark.parametrize("text, policy", [
    ("Now extract the strongest adjectives.", None),
    ("Thanks. Now I get the error: name 'x' is not defined", None),
    ("ok now write the tests", None),
    ('Traceback (most recent call last):\n  File "main.py", line 3', None),
    ("What's the weather in Oslo now?", "time_sensitive"),
    ("What is the latest news about the election", "time_sensitive"),
    ("Which laptops are popular right now?", "time_sensitive"),
    # second reading: asking the time is live though it names no scope; "for now" is not
    ("what time is it", "time_sensitive"),
    ("What's the date today?", "time_sensitive"),
    ("I will paste my notes about the lease. Just keep them in mind for now, ok?", None),
    ("That's all for now, thanks", None),
])
def test_time_words_that_ask_for_nothing_live(text, policy):
    assert route(text) == ("conversational", policy)



def _shard(records) -> engine.PreparedShard:
    from domains.corpora.mining.turns import conversation_turns

    turns = [t for r in records for t in conversation_turns("sharegpt", r) if not isinstance(t, str)]
    texts = sorted({normalize_text(t.query) for t in turns if t.single})
    return engine.PreparedShard("sharegpt/t.json", tuple(turns), {}, len(turns), tuple(texts), near.signatures(texts))


def test_a_surface_variant_is_one_request_only_between_conversation_openings():
    records = [
        Conversation("a_0", (("user", "Write a haiku about rain"), ("assistant", "Rain on the roof"),
                     ("user", "what did you change"))),
        Conversation("b_0", (("user", "Explain recursion to a child"), ("assistant", "A function that calls itself"),
                     ("user", "What did you change"))),
        Conversation("c_0", (("user", "How do I boil an egg without cracking the shell?"),)),
        Conversation("d_0", (("user", "how do I boil an egg without cracking the shell"),)),
    ]
    res = engine.pair([_shard(records)])
    kept = [(c.query_a, c.query_b, c.label) for c in res.candidates]
    assert kept == [("How do I boil an egg without cracking the shell?",
                     "how do I boil an egg without cracking the shell", "EQUIV")]
    assert res.drops["surface_variant_of_a_later_turn"] == 1


def test_a_follow_up_that_opens_two_conversations_is_no_surface_variant():
    """"continue" / "Continue" as the first message of two conversations (a ShareGPT part, a pasted
    chat) points at turns we cannot see: no label, counted; a greeting still is one request."""
    records = [Conversation("e_0", (("user", "keep going"),)), Conversation("f_0", (("user", "Keep going!"),)),
               Conversation("g_0", (("user", "hello there"),)), Conversation("h_0", (("user", "Hello there"),))]
    res = engine.pair([_shard(records)])
    assert [(c.query_a, c.query_b, c.label) for c in res.candidates] == [("hello there", "Hello there", "EQUIV")]
    assert res.drops["follow_up_opening"] == 1


# filler_or_typo (issue #27): politeness or filler words and fixed misspellings, nothing else -> PARA_SAFE
@pytest.mark.parametrize("a, b", [
    ("Can you explain how photosynthesis works?", "explain how photosynthesis works?"),
    ("please write a python function that reverses a string", "write a python function that reverses a string"),
    ("Hi, what is the capital of Peru? Thanks", "What is the capital of Peru?"),
    ("explain the diffrence between tcp and udp", "explain the difference between tcp and udp"),
    ("Could you please summarise the plot of hamlet", "summarise the plot of hamlet"),
    ("Just tell me a fun fact about octopuses", "tell me a fun fact about octopuses pls"),
    ("give me a recipe for banana bread", "give me a recpie for banana bread thank you"),     # typo and filler
])
def test_filler_or_typo_is_para_safe(a, b):
    assert M.decide(a, b) == M.Decision("PARA_SAFE", "filler_or_typo")
    assert M.decide(b, a).label == "PARA_SAFE"


@pytest.mark.parametrize("a, b, rule", [
    ("summarize this text for me", "summarize this text", "insertion_or_deletion"),           # not a filler
    ("you write a poem about cats", "write a poem about cats", "insertion_or_deletion"),     # "you" alone
    ("list the names of the planets", "list just the names of the planets", "insertion_or_deletion"),  # "just" = only
    ("explain the difference between tcp and udp", "explain the difference between tcp and ip", "one_token_undecided"),
    ("What is Jupyter?", "What is Jyupyter?", "spelling_variant_undecided"),                 # a name, not a typo
    ("Tell me about Grenoble", "Tell me about Grenobel", "spelling_variant_undecided"),      # capitalised: a name
    ("def area(r): return r * r  explain the fucntion", "def area(r): return r * r  explain the function",
     "one_token_undecided"),                                                                 # code
    ("list the largest cities", "list the largest citys", "one_token_undecided"),            # a short word
    ("explain the first sorting algorithm", "explain the frist sorting algorithm please now", "multi_token_change"),
    ("please sort the list in ascending order", "sort the list in descending order", "multi_token_change"),
    ("Hi [NAME]", "Hey [NAME]", "one_token_undecided"),                                      # nothing asked
])
def test_filler_or_typo_takes_nothing_else(a, b, rule):
    d = M.decide(a, b)
    assert d.label is None and d.rule == rule, d


def test_filler_or_typo_candidate_is_a_hit_with_one_rubric():
    from domains.corpora.mining import single, turns
    from domains.verify import verify

    a, b = "Could you explain how vaccines train the immune system?", "explain how vaccines train the immune system?"
    p = [turns.Turn("sharegpt", "x.json", "lic", f"r{i}", 0, f"r{i}", t, "first", False, ()) for i, t in enumerate((a, b))]
    c = single.candidate(p[0], p[1], M.decide(a, b))
    assert (c.label, c.domain, c.provenance.template_id) == ("PARA_SAFE", "qa_open", "filler_or_typo")
    assert c.verification_payload["criteria_a"] == c.verification_payload["criteria_b"]
    assert c.expected_answer_a == c.expected_answer_b and verify(c).passed
    assert not verify(c.with_(label="ADVERSARIAL")).passed
    assert "politely" in c.real_world_grounding
    # under a policy the rubric is the underlying check, still one for both sides
    w = single.candidate(*[turns.Turn("sharegpt", "x.json", "lic", f"r{i}", 0, f"r{i}", t, "first", False, ())
                           for i, t in enumerate(("please tell me the weather in Oslo today",
                                                  "tell me the weather in Oslo today"))], M.decide(
        "please tell me the weather in Oslo today", "tell me the weather in Oslo today"))
    assert w.verification_method == "policy_no_cache" and verify(w).passed
    u = w.verification_payload["underlying_payload"]
    assert u["criteria_a"] == u["criteria_b"]


def test_a_filler_variant_is_one_request_only_between_conversation_openings():
    records = [
        Conversation("a_0", (("user", "Explain recursion to a child"), ("assistant", "A function that calls itself"),
                     ("user", "please explain the code you wrote line by line"))),
        Conversation("b_0", (("user", "Write a haiku about rain"), ("assistant", "Rain on the roof"),
                     ("user", "explain the code you wrote line by line"))),
        Conversation("c_0", (("user", "Can you explain how a bloom filter works?"),)),
        Conversation("d_0", (("user", "explain how a bloom filter works"),)),
    ]
    res = engine.pair([_shard(records)])
    kept = [(c.query_a, c.query_b, c.label) for c in res.candidates]
    assert kept == [("Can you explain how a bloom filter works?", "explain how a bloom filter works", "PARA_SAFE")]
    assert res.drops["paraphrase_of_a_later_turn"] == 1
