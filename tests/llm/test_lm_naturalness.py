"""Wordings no user writes (domains/lm/naturalness.py): every pattern the blind readers flagged in
the first 130 LM rows (/work/helpers/s3/lm_review.md) is caught, natural wordings of the same
requests are not, and the paraphrase and edit tasks drop such outputs with a counted reason."""
from __future__ import annotations

import pytest

from domains import get_domain
from domains.base import GenContext
from domains.lm import edits
from domains.lm import generate as lm
from domains.lm.naturalness import kind_changed, pair_problem, scope_changed, unnatural
from domains.lm.rules import Seed, paraphrase_problem

FLAGGED = [   # (a wording the readers flagged, the kind)
    ("Which continent does Estonia live in?", "place_that_lives"),
    ("On which continent does Estonia live?", "place_that_lives"),
    ("What continent does the Gambia part of belong to?", "verb_after_preposition"),
    ("What is the largest moon in Saturn?", "moon_in_planet"),
    ("What is the moon that is the largest on Mars?", "relative_superlative"),
    ("What element does have atomic number 13?", "does_have"),
    ('What are some synonyms for "happy" in thesaurus?', "article_missing"),
    ('What are some synonyms for "laconic" that can be found in thesaurus?', "article_missing"),
    ("How do you show me the driving route from Boston to New York City?", "how_do_you_me"),
    ("What are my tips for beginners in cooking?", "own_tips"),
    ("What public holiday is India having in 2026?", "country_having"),
    ("What's your best advice for a nervous about your job interview tomorrow?", "adjective_as_noun"),
    ("What's the best way to train a first marathon?", "train_a_race"),
    ("What about a houseplant that can cope with low light?", "follow_up_opening"),
    ("Find the antiderivative of the integral of (4*t^4 + 7*t + 11).", "operation_twice"),
    ("Pull up the transactions on my savings account dated May 15, 2024 to 2024-06-14.", "mixed_date_formats"),
    ("What's on a weekend trip to Lisbon?", "whats_on_a_trip"),
    ("What element is the atomic number 10?", "element_is_number"),
    ("What continent is Slovakia?", "continent_is_place"),
    ("In what year did Nineteen Eighty-Four first be published?", "did_be"),
    ("In which city hosted the 1976 Summer Olympics?", "preposition_subject"),
    ("What problems are problems with electric cars?", "word_repeated"),
    ("Which public holidays are public in France in 2026?", "word_repeated"),
    ("The best way to treat a hangover is to what?", "states_a_claim"),
    ("Strength training can be effective for experts. What should I do?", "states_a_claim"),
    ("What should I start gardening?", "start_object"),
    ("What tips are you using for experts in photography?", "own_tips"),
    ("What are my precautions to avoid heartburn?", "own_tips"),
    ("What time zone is Seattle located?", "located_no_preposition"),
    ("How do I show you the 2026 public holidays for France?", "how_do_you_me"),
    ("How do you find the time zone of Seattle?", "asks_for_a_method"),
    ('What does "ubiquitous" mean in terms of fashion?', "in_terms_of"),
    ("What tips for beginners in running?", "no_verb"),
    ("What sights for two days in Lisbon?", "no_verb"),
]
NATURAL = [
    "What continent is Estonia in?", "Which continent does Liberia lie on?", "What continent does the Gambia belong to?",
    "What is Saturn's largest moon?", "What is the largest moon of Neptune?", "Which element has atomic number 13?",
    'What are some synonyms for "happy" in a thesaurus?', "How do I drive from Boston to New York City?",
    "Can you show me the driving route from Chicago to Detroit?", "What are your tips for beginners in cooking?",
    "What are some public holidays in Brazil for 2025?", "How can I calm my nerves before tomorrow's job interview?",
    "How should I train for my first marathon?", "What's the best houseplant for a room with low light?",
    "Compute the antiderivative of 4*t^4 + 7*t + 11 with respect to t.",
    "Pull up the transactions on my savings account from 2024-05-15 to 2024-06-14.",
    "What tips would you give a beginner in running?", "Which sights should I see in two days in Lisbon?",
    "Where do I live?", "What should a beginner start with in photography?", "Where is Seattle located?",
    "How do I drive from Miami to Orlando?", "What are the problems with electric cars?", "What time zone is Tokyo in?", "What's on the menu for a weekend trip to Lisbon?",
    "Which value of t makes 4*t + 26 = 50 hold?", "What element has an atomic number of 10?", "What continent is Slovakia in?",
    "In what year was Nineteen Eighty-Four first published?", "In which city were the 1976 Summer Olympics held?",
    "Which days are public holidays in France in 2026?", "Which river is the longest river in Europe?",
]


@pytest.mark.parametrize("text,kind", FLAGGED)
def test_every_flagged_pattern_is_caught(text, kind):
    assert unnatural(text) == kind


@pytest.mark.parametrize("text", NATURAL)
def test_natural_wordings_of_the_same_requests_pass(text):
    assert unnatural(text) is None


def test_a_request_for_one_item_does_not_become_one_for_a_kind_and_holiday_kinds_differ():
    assert scope_changed("What's your favorite true crime podcast?", "What type of true crime podcast would you recommend?")
    assert not scope_changed("Can you recommend a good true crime podcast?", "What's a true crime podcast worth a listen?")
    assert kind_changed("What are some public holidays in India for 2026?", "Which days are national holidays in India in 2026?")
    assert not kind_changed("What are some public holidays in India for 2026?", "Which public holidays does India have in 2026?")
    assert not kind_changed("What is the national animal of Scotland?", "Which animal is Scotland's national one?")
    assert pair_problem("What are some public holidays in France for 2026?",
                        "Which national holidays are in France in 2026?") == "attribute_changed"


def _item(domain: str, group: str):
    keywords = {a: tuple(k) for a, k in lm.prompt_for(domain)["keywords"].items()}
    return next(it for it in get_domain(domain).lm.items(keywords) if it.group == group)


def test_the_paraphrase_rules_drop_unnatural_and_rescoped_rewordings_with_a_reason():
    seed = Seed(_item("conversational", "podcast"), 1)   # "What's a true crime podcast worth listening to?"
    assert paraphrase_problem(seed, "What type of true crime podcast is worth listening to?") == "scope_changed"
    assert paraphrase_problem(seed, "What about a true crime podcast worth listening to?") == "unnatural:follow_up_opening"
    assert paraphrase_problem(seed, "Which true crime podcast is worth listening to?") is None


class Echo:
    """A stand-in CachedProvider that answers every edit request with one scripted rewrite."""

    model_snapshot = "gguf-sha256:test"

    def __init__(self, rewrite: str) -> None:
        self.rewrite = rewrite

    def complete(self, messages, system=None, **params):
        return type("Completion", (), {"text": self.rewrite})()


def test_the_edit_task_drops_a_seed_written_in_two_date_formats(monkeypatch):
    spec = get_domain("tool")
    seed = next(s for s in spec.lm.edit_seeds() if unnatural(s.text) == "mixed_date_formats")
    rewrite = seed.text.replace("account", "savings account", 1) if "credit card" not in seed.text else \
        seed.text.replace("credit card", "savings")
    monkeypatch.setattr(edits, "seeds", lambda *a, **k: [seed])
    monkeypatch.setattr(edits, "section_llm", lambda llm, *a: llm)
    ctx = GenContext(domain="tool", profile="v1.1", need={}, llm=Echo(rewrite), policy=spec.policy)
    rows, y = edits.generate(spec, ctx, in_build=False)
    assert rows == [] and y.drops == {"unnatural:mixed_date_formats": 1}


def test_the_committed_benchmark_holds_150_lm_rows_that_read_naturally():
    """Issue 17's target on the committed outputs: at least 150 lm_generated rows in at least 6
    domains, ADVERSARIAL among them, and none showing a pattern the blind readers flagged."""
    import json

    from pipeline.core.paths import PROJECT_ROOT

    rows = [json.loads(line) for line in (PROJECT_ROOT / "outputs" / "cachebench.jsonl").read_text(encoding="utf-8").splitlines()]
    lm_rows = [r for r in rows if r["construction_method"] == "lm_generated"]
    assert len(lm_rows) >= 150 and len({r["domain"] for r in lm_rows}) >= 6
    assert any(r["label"] == "ADVERSARIAL" for r in lm_rows)
    # a follow-up after earlier turns may open with "What about ..." (domains/lm/followups.py)
    assert [(r["id"], q) for r in lm_rows for q in (r["query_a"], r["query_b"])
            if unnatural(q) and not (r["context_a"] and unnatural(q) == "follow_up_opening")] == []
