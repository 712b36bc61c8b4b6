"""The answer-token rules added for free-text requests (conversational rewordings: the item's own
vocabulary), the "is ... has" slip, and the conversational domain's LM items."""
from __future__ import annotations

from domains import get_domain
from domains.base import GenContext, LMItem
from domains.lm import generate as lm
from domains.lm.rules import Seed, paraphrase_problem, shared_words


def _conversational(group: str) -> LMItem:
    spec = get_domain("conversational")
    keywords = {a: tuple(k) for a, k in lm.prompt_for("conversational")["keywords"].items()}
    return next(it for it in spec.lm.items(keywords) if it.group == group)


def test_shared_words_are_the_content_words_every_wording_has():
    texts = ["Can you suggest a quick vegetarian dinner for two?", "What's a fast vegetarian dinner I could make for two people?",
             "Give me an easy vegetarian dinner idea for two."]
    assert shared_words(texts, skip="vegetarian") == ("dinner", "two")
    assert shared_words(["Which plant suits low light?", "Recommend a plant for low light."], skip="low light") == ("plant",)


def test_a_conversational_item_keeps_its_slot_and_subject_and_never_live_information():
    spec = get_domain("conversational")
    keywords = {a: tuple(k) for a, k in lm.prompt_for("conversational")["keywords"].items()}
    items = spec.lm.items(keywords)
    assert items and all(it.subcategory != "time_sensitive" for it in items)
    dinner = _conversational("dinner_diet")
    assert dinner.keep == ("vegetarian", "dinner", "two")
    assert set(dinner.foreign) == {"vegan", "keto"}
    assert dinner.verification_method == "rubric" and dinner.payload["criteria_a"] == dinner.payload["criteria_b"]
    assert "vegetarian" in dinner.payload["criteria_a"][1]


def test_a_conversational_rewording_may_not_bring_in_a_new_topic_word():
    seed = Seed(_conversational("dinner_diet"), 0)     # "Can you suggest a quick vegetarian dinner for two?"
    assert paraphrase_problem(seed, "Could you recommend an easy vegetarian dinner for two?") is None
    assert paraphrase_problem(seed, "Any ideas for a simple vegetarian dinner for two people?") is None
    # a new topic word may ask something else: the price, a dessert, a restaurant
    assert paraphrase_problem(seed, "Can you suggest a cheap vegetarian dinner for two?") == "new_word"
    assert paraphrase_problem(seed, "Which restaurant serves a quick vegetarian dinner for two?") == "new_word"
    # the slot swapped for one of the seed's own swap targets, or dropped, is never a paraphrase
    assert paraphrase_problem(seed, "Can you suggest a quick vegan dinner for two?") == "entity_missing"
    assert paraphrase_problem(seed, "Can you suggest a quick vegetarian or vegan dinner for two?") == "attribute_changed"
    assert paraphrase_problem(seed, "Can you suggest a quick vegetarian dinner for four?") == "entity_missing"


def test_two_finite_verbs_read_as_ungrammatical():
    item = LMItem(group="jp.holidays", spread_key="get_public_holidays",
                  phrasings=("What are the public holidays in Japan in 2025?", "List Japan's public holidays for 2025."),
                  keep=("Japan",), keywords=("holiday", "holidays"), foreign=(), others=(), leaks=(),
                  subcategory="calendar", answer="{}", verification_method="tool_call_match", payload={},
                  asks_for="the public holidays of Japan in 2025")
    seed = Seed(item, 0)
    assert paraphrase_problem(seed, "What public holiday is Japan has in 2025?") == "ungrammatical"
    assert paraphrase_problem(seed, "What public holidays is the Japan has in 2025?") == "ungrammatical"
    assert paraphrase_problem(seed, "What are Japan's public holidays in 2025? Which is the longest?") == \
        "several_questions"
    assert paraphrase_problem(seed, "Which public holidays does Japan have in 2025?") is None


def test_seeds_send_every_named_phrasing_of_each_item():
    spec = get_domain("conversational")
    prompt = lm.prompt_for("conversational")
    sent = lm.seeds(spec, prompt, GenContext(domain="conversational", profile="v1.1", need={}))
    assert {s.index for s in sent} == set(prompt["phrasings"])
    assert len({s.item.group for s in sent}) == len(sent) // len(prompt["phrasings"])


def test_a_plural_verb_on_a_name_or_the_question_asked_twice_is_dropped():
    item = LMItem(group="he.symbol", spread_key="chemical_symbol",
                  phrasings=("What is the chemical symbol for helium?", "Which chemical symbol stands for helium?"),
                  keep=("helium",), keywords=("symbol",), foreign=(), others=(), leaks=("He",),
                  subcategory="chemistry", answer="He", verification_method="alias_exact_match", payload={},
                  asks_for="the chemical symbol of helium")
    seed = Seed(item, 0)
    assert paraphrase_problem(seed, "What symbol do helium have on the periodic table?") == "ungrammatical"
    assert paraphrase_problem(seed, "What symbol does helium have on the periodic table?") is None
    assert paraphrase_problem(seed, "What is helium's symbol, the chemical symbol of helium?") == "repeated"
    assert paraphrase_problem(seed, "What is helium's symbol? Which symbol stands for helium?") == "several_questions"


def test_contractions_and_word_forms_are_not_new_words():
    seed = Seed(_conversational("houseplant"), 2)      # "Recommend a houseplant that copes with low light."
    assert paraphrase_problem(seed, "What's a houseplant that can cope with low light?") is None
    assert paraphrase_problem(seed, "What's a cheap houseplant that can cope with low light?") == "new_word"
