"""The duplicate-question guard (domains/corpora/duplicates.py) on hand-written pairs: it keeps
rewordings a reader would serve one answer for, and drops each kind of answer-determining change;
QQP's PARA_SAFE goes through it, and AmbigNQ's rewordings of one disambiguated question too."""
from __future__ import annotations

from collections import Counter

import pytest

from domains.base import GenContext
from domains.corpora import benchmarks
from domains.corpora.duplicates import duplicate_question_guard, question_type
from domains.corpora.feeds import mapping_build
from domains.verify import verify
from sources.base import QARecord

KEPT = [
    ("How do I learn Python?", "How can I learn Python?"),
    ("How to become a dentist?", "How do I become a dentist?"),
    ("How do you motivate yourself to study?", "How can I motivate myself to study?"),      # generic "you"
    ("How do I make my face thinner?", "What can I do to make my face thinner?"),            # how-to openers
    ("What do you mean by globalization?", "What is the meaning of globalization?"),
    ("What is the best digital photo frame?", "What's the best digital picture frame?"),      # synonym
    ("How can I add my profile picture on Qoura?", "How can I upload my profile picture on Quora?"),  # misspelt name
    ("What causes bleeding from nose and mouth?", "What causes mouth and nose bleeding?"),    # words moved
    ("What are some substitutes for triple sec?", "What are some substitutions for triple sec?"),  # inflection
    ("Which are the best movies of 2016?", "What are the best movies of 2016?"),
]

DROPPED = [
    ("Can India win 30 gold medals?", "Can India win 10 gold medals?", "numbers_differ"),
    ("Why is Trump against Mexico?", "Why is Clinton against Mexico?", "entities_differ"),
    ("Why do I feel tired?", "Why don't I feel tired?", "negation_differs"),
    ("Do all Muslims hate Modi?", "Do some Muslims hate Modi?", "scope_differs"),
    ("What are the Romance languages?", "What were some of the Romance languages?", "scope_differs"),
    ("What are the arguments for and against zoos?", "What are the arguments against zoos?", "polarity_differs"),
    ("What is the price of gold today?", "What is the price of gold?", "scope_differs"),
    ("What are the pros of nuclear power?", "What are the cons of nuclear power?", "polarity_differs"),
    ("How do I learn Python?", "What is the best way to learn Python?", "polarity_differs"),
    ("How do I use a condom effectively?", "How do I use a condom safely?", "polarity_differs"),
    ("Why do people learn Latin?", "How do people learn Latin?", "question_type_differs"),
    ("What's your biggest pet peeve?", "What's your biggest pet peeve and why?", "question_type_differs"),
    ("What's your favourite colour?", "What's your favourite colour? And how did you choose it?",
     "question_type_differs"),
    ("Can I buy a DSLR?", "Should I buy a DSLR?", "modal_differs"),
    ("What is the most creative thing you have done?", "What is the most creative thing I have done?",
     "person_differs"),
    ("How can I increase my height?", "How can I increase his height?", "person_differs"),
    ("Should I learn to swim or to run?", "Should I learn to swim and to run?", "constraint_word_one_side"),
    ("Who would win in a war between Russia and the US?", "Who would win in a nuclear war between Russia and the US?",
     "modifier_added"),
    ("How can I improve my English?", "How can I improve my English for job interviews?", "words_added"),
    ("How do I change my Gmail password?", "How do I reset my Gmail password?", "word_swapped"),
    ("Do color blind people dream in color?", "Do blind people dream in colour?", "modifier_added"),
    ("Can a 15 year old girl and 18 year old boy marry?", "Can a 15 year old boy and 18 year old girl marry?",
     "words_moved_between_names"),
    ("What Is The Best Way To Learn Guitar?", "What is the best way to learn the guitar?", "title_case_text"),
    ("What is the weirdest question on Quora?", "What is a weird question on Quora?", "modifier_swapped"),
    ("How do I use a condom?", "How do I store a condom?", "word_swapped"),
    ("How do I cook beans in a pressure cooker?", "How do I cook beans?", "words_added"),
]


@pytest.mark.parametrize("a,b", KEPT)
def test_keeps_true_duplicates(a, b):
    assert duplicate_question_guard(a, b) is None
    assert duplicate_question_guard(b, a) is None
    assert benchmarks.decide("qqp", 1, a, b) == ("PARA_SAFE", "")


@pytest.mark.parametrize("a,b,why", DROPPED)
def test_drops_each_failure_kind(a, b, why):
    assert duplicate_question_guard(a, b) == why
    assert benchmarks.decide("qqp", 1, a, b) == (None, f"duplicate_question_guard:{why}")


def test_every_drop_reason_is_documented_and_most_are_tested():
    import inspect
    import re

    from domains.corpora import duplicates

    code = inspect.getsource(duplicates.duplicate_question_guard) + inspect.getsource(duplicates._content_change)
    returned = set(re.findall(r'return "(\w+)"', code))
    assert all(why in duplicates.__doc__ for why in returned - {"no_content_words"})
    assert returned - {why for *_, why in DROPPED} <= {"script_differs", "no_content_words", "reworded_too_much"}


def test_question_types():
    assert question_type("how do i learn python".split()) == question_type("how to learn python".split()) == "how_to"
    assert question_type("what are some ways to learn python".split()) == "how_to"
    assert question_type("how many people live in india".split()) == "how_many"
    assert question_type("is it safe to eat eggs".split()) == "yes_no"
    assert question_type("which is the best phone".split()) == question_type("what is the best phone".split())
    assert question_type("why is the sky blue".split()) == "why"


def test_paws_and_mrpc_keep_the_same_words_guard():
    # PAWS/MRPC sentences still need the same content words: a synonym is not enough there
    assert benchmarks.decide("mrpc", 1, "The film opened in Paris.", "The movie opened in Paris.")[0] is None
    assert benchmarks.decide("qqp", 1, "Where did the film open?", "Where did the movie open?")[0] == "PARA_SAFE"


class _Datasets:
    def __init__(self, **corpora):
        self.corpora = corpora

    def load(self, corpus):
        return iter(self.corpora.get(corpus, []))


def test_ambignq_rewordings_are_para_safe():
    def rec(rid, question, pairs):
        return QARecord("ambigqa", "dev", rid, "dev_light.json", "CC-BY-SA-3.0", question=question, answers=(),
                        qa_pairs=tuple(pairs))
    recs = [
        rec("1", "When was soccer introduced at the Olympics?",
            [("When was men's soccer introduced at the Olympics?|When was men's soccer first introduced at the Olympics?",
              ("1900",)),
             ("When was women's soccer first added at the Olympics?|When was women's soccer first introduced at the "
              "Olympics?", ("1996",))]),
        # the variants are different questions (American vs Association football): no pair
        rec("2", "Who won the football cup in 1990?",
            [("Who won the 1990 cup for American football?|Who won the 1990 cup for Association football?", ("Leeds",)),
             ("Who won the 1990 cup for rugby?", ("York",)), ("Who won the 1990 cup for cricket?", ("Hull",))]),
    ]
    ctx = GenContext(domain="qa_factual", profile="v1.1", need={}, datasets=_Datasets(ambigqa=recs))
    cands, drops = mapping_build(ctx, "ambigqa", {"PARA_SAFE": 1.0, "RELATED_UNSAFE": 1.0})
    para = [c for c in cands if c.label == "PARA_SAFE"]
    assert [(c.query_a, c.query_b) for c in para] == [
        ("When was women's soccer first added at the Olympics?", "When was women's soccer first introduced at the "
                                                                  "Olympics?")]
    assert para[0].verification_payload == {"aliases_a": ["1996"], "aliases_b": ["1996"]} and verify(para[0]).passed
    # "men's soccer introduced" / "first introduced": "first" is a constraint word on one side only
    assert drops["rewording_duplicate_question_guard:constraint_word_one_side"] == 1
    assert drops["rewording_duplicate_question_guard:entities_differ"] == 1
    assert Counter(c.label for c in cands)["RELATED_UNSAFE"] == 1
