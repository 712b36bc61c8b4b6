"""LM-written follow-ups (domains/lm/followups.py, multi_turn) and LM-edited profiles
(domains/personalized/lm_hooks.py): the rules that keep a model's text, the labels the conversation or
the policy gives it (never the model), and the tasks run with a scripted stand-in for the model
(the real models run in domains.lm.trial)."""
from __future__ import annotations

import re

import pytest

from domains import get_domain
from domains.base import GenContext, Span
from domains.lm import edits, followups
from domains.lm.edits import one_span
from domains.lm.followups import follow_up_problem
from domains.verify import verify
from tests.llm_doubles import ScriptedChat, prompt_file_error

NOVELS = ("who", "whose", "author", "writer")


def _item(group: str):
    found = [it for it in get_domain("multi_turn").lm.follow_ups() if it.group == group]
    assert found, f"no follow-up item {group}"
    return found[0]


@pytest.mark.parametrize("text, expected", [
    ("What would that be in Fahrenheit?", None),
    ("And in Fahrenheit?", None),                               # elliptic: continues the conversation
    ("What about in Fahrenheit?", None),                        # an opening only a first message may not have
    ("What is 12 °C in Fahrenheit?", "restates_context"),       # answerable without the conversation
    ("Could you tell me that in Kelvin?", "target_missing"),
    ("Could you tell me that in Fahrenheit or Kelvin?", "target_changed"),
    ("Convert to Fahrenheit.", "no_reference"),
    ("Convert it to Fahrenheit.", "identical_to_seed"),
    ("What's that in Fahrenheit?", "copies_curated"),
    ("What would that be in Fahrenheit in the morning?", "new_word"),
    ("Is that in Fahrenheit?", "unnatural:yes_no_question"),    # asks whether, not for the value
    ("How's that in Fahrenheit?", "unnatural:how_is_that"),
    ("That is 53.6 °F.", "not_a_question"),
])
def test_a_follow_up_keeps_its_target_refers_back_and_restates_nothing(text, expected):
    item = _item("temperature=12|convert|Fahrenheit")
    assert follow_up_problem(item, "Convert it to Fahrenheit.", text) == expected


def test_the_attribute_of_a_list_follow_up_and_its_wording_are_checked():
    novels = _item("novels=Pride and Prejudice|Moby-Dick|Jane Eyre|ordinal|second")
    assert follow_up_problem(novels, "Who wrote the second one?", "Who is the writer of the second one?", NOVELS) is None
    assert follow_up_problem(novels, "Who wrote the second one?", "Which book wrote the second one?", NOVELS) == "attribute_missing"
    assert follow_up_problem(novels, "Who wrote the second one?", "The second book, who wrote the second one?",
                             NOVELS) == "repeated"
    assert follow_up_problem(novels, "Who wrote the second one?", "Who wrote Moby-Dick?", NOVELS) == "target_missing"
    assert follow_up_problem(novels, "Who wrote the second one?", "What is the author of the second one?",
                             NOVELS) == "unnatural:what_for_person"
    bill = next(it for it in get_domain("multi_turn").lm.follow_ups() if it.group.startswith("bill=4/84"))
    assert follow_up_problem(bill, "How much does each person owe?", "How much does that per person?") == \
        "unnatural:verb_missing"
    assert follow_up_problem(bill, "How much does each person owe?", "Is that $21 each?") == "restates_context"


def test_the_conversation_labels_the_rows_of_a_follow_up():
    item = _item("temperature=12|convert|Fahrenheit")
    rows = get_domain("multi_turn").lm.pair_follow_ups(item, ["What would that be in Fahrenheit?", "And in Fahrenheit?"])
    by_label = {}
    for c in rows:
        by_label.setdefault(c.label, []).append(c)
        assert verify(c, get_domain("multi_turn").policy).passed, c
    assert sorted(by_label) == ["ADVERSARIAL", "PARA_SAFE", "RELATED_UNSAFE"]
    adv = by_label["ADVERSARIAL"][0]
    assert adv.query_a == adv.query_b and adv.expected_answer_a == "53.6 °F" != adv.expected_answer_b
    assert adv.context_a[0]["content"] != adv.context_b[0]["content"]
    assert adv.provenance.operator == "context_value_swap"
    rel = by_label["RELATED_UNSAFE"][0]    # another conversation: other facts and another wording
    assert rel.query_a == rel.query_b and rel.expected_answer_a != rel.expected_answer_b
    assert rel.context_a[0]["content"].split()[:3] != rel.context_b[0]["content"].split()[:3]
    para = by_label["PARA_SAFE"][0]
    assert para.context_a == para.context_b and para.expected_answer_a == para.expected_answer_b == "53.6 °F"
    assert {c.binary_label for c in rows if c.label != "PARA_SAFE"} == {"MISS"} and para.binary_label == "HIT"


def test_a_follow_up_tied_to_its_own_wording_is_paired_only_after_it():
    item = _item("temperature=0|convert|Fahrenheit")
    turns = item.context[0]["content"]           # "The thermometer on my balcony reads 0 °C."
    assert "balcony" in turns
    tied = "What does that balcony read in Fahrenheit?"
    assert follow_up_problem(item, "Convert it to Fahrenheit.", tied) is None
    rows = get_domain("multi_turn").lm.pair_follow_ups(item, [tied], ("And in Fahrenheit?",))
    assert sorted(c.label for c in rows) == ["ADVERSARIAL"]    # no other wording, no partner written elsewhere
    rows = get_domain("multi_turn").lm.pair_follow_ups(item, ["What would that be in Fahrenheit?"], ("And in Fahrenheit?",))
    assert sorted(c.label for c in rows) == ["ADVERSARIAL", "PARA_SAFE", "RELATED_UNSAFE"]


def test_the_follow_up_task_counts_its_yield_and_stamps_the_rows(monkeypatch):
    spec = get_domain("multi_turn")
    items = [_item("temperature=12|convert|Fahrenheit"), _item("novels=Pride and Prejudice|Moby-Dick|Jane Eyre|ordinal|second")]
    monkeypatch.setattr(followups, "items", lambda spec, section, ctx, limit=None: items)
    model = ScriptedChat({
        "Convert it to Fahrenheit.": ["Convert it to Fahrenheit.", "What would that be in Fahrenheit?"],  # a copy, then kept
        "What's that in Fahrenheit?": ["And in Fahrenheit?"],
        "Who wrote the second one?": ["Who wrote Moby-Dick?"],
        "Who is the author of the second one?": ["Who's the writer of the second one?"],
    }, prefix="Next message: ", suffix="\nReworded:")
    ctx = GenContext(domain="multi_turn", profile="v1.1", need={}, llm=model)
    monkeypatch.setitem(followups.prompt_for("multi_turn"), "in_build", False)
    assert followups.generate(spec, ctx) == []                        # not recorded yet: the build asks nothing
    monkeypatch.setitem(followups.prompt_for("multi_turn"), "max_para_safe", 0)
    rows = followups.generate(spec, ctx, in_build=False)
    rec = followups.yields.of("multi_turn")["followup"]
    assert (rec["seeds"], rec["sent"], rec["kept"]) == (2, 5, len(rows))
    assert rec["drops"] == {"followup:identical_to_seed": 1, "followup:target_missing": 1, "pair:para_safe_cap": 1}
    assert {c.label for c in rows} == {"ADVERSARIAL", "RELATED_UNSAFE"}
    c = rows[0]
    assert (c.construction_method, c.source) == ("lm_generated", "lm:HuggingFaceTB/SmolLM2-135M-Instruct")
    assert (c.provenance.generator, c.provenance.template_id) == ("multi_turn.lm_generated", "multi_turn.followup.v1")
    assert c.provenance.model_snapshot == model.model_snapshot


def test_a_follow_up_section_without_its_placeholders_is_a_clear_error(tmp_path, monkeypatch):
    text = ("params: {seed: 1}\ndomains:\n  multi_turn:\n    id: m\n    finals: [0]\n    max_items: 1\n"
            "    max_para_safe: 0\n    system: s\n    user: 'Reword: {q}'\n    examples: []\n")
    assert re.match(r"configs/prompts/lm_followup\.yaml:domains\.multi_turn\.user: needs the \{context\} and \{q\} "
                    r"placeholders\. Add them$", prompt_file_error(followups, text, tmp_path, monkeypatch))


# ---------------------------------------------------------------- personalized: edited profiles

def _profile(record: str):
    found = [s for s in get_domain("personalized").lm.edit_seeds() if s.record == record]
    assert found, f"no profile seed {record}"
    return found[0]


def _resolve(record: str, rewrite: str):
    seed = _profile(record)
    span = one_span(seed.text, rewrite)
    assert isinstance(span, Span), span
    return get_domain("personalized").lm.resolve_edit(seed, rewrite, span)


def test_a_profile_with_one_attribute_changed_is_another_user_by_policy():
    seed = _profile("Priya.diet")
    c = _resolve("Priya.diet", seed.text.replace("vegetarian", "vegan"))
    assert (c.label, c.binary_label, c.verification_method) == ("ADVERSARIAL", "MISS", "policy_no_cache")
    assert c.verification_payload["policy"] == "cross_user"
    crit = c.verification_payload["underlying_payload"]
    assert any("vegan" in x for x in crit["criteria_b"]) and not any("vegan" in x for x in crit["criteria_a"])
    assert c.system_prompt_b == seed.text.replace("vegetarian", "vegan") and c.query_a == c.query_b
    assert verify(c, get_domain("personalized").policy).passed


def test_a_job_change_is_paired_with_a_request_that_depends_on_the_job():
    kwame = _profile("Kwame.role")
    c = _resolve("Kwame.role", kwame.text.replace("an accountant", "a park ranger"))
    assert c.subcategory == "cross_user_bio"          # never an out-of-office reply (WEAK): it barely depends on the job


def test_a_profile_edit_is_kept_only_when_re_rendered_with_a_known_value():
    seed = _profile("Priya.diet")
    assert _resolve("Priya.diet", seed.text.replace("vegetarian", "paleo")) == "not_a_known_value"
    assert _resolve("Priya.diet", seed.text.replace("Leeds", "Lisbon")) == "changed_another_detail"
    kwame = _profile("Kwame.role")
    assert _resolve("Kwame.role", kwame.text.replace("an accountant", "an park ranger")) == "not_re_rendered"
    assert _resolve("Kwame.role", kwame.text.replace("an accountant", "a park ranger")).system_prompt_b.startswith(
        "You are assisting Kwame, a park ranger")


def test_the_edit_task_keeps_a_row_its_resolver_put_under_the_policy(monkeypatch):
    spec = get_domain("personalized")
    seed = _profile("Priya.diet")
    monkeypatch.setattr(edits, "seeds", lambda spec, section, ctx, limit=None: [seed])
    model = ScriptedChat({seed.text: [seed.text.replace("vegetarian", "vegan")]}, prefix="profile: ")
    ctx = GenContext(domain="personalized", profile="v1.1", need={}, llm=model)
    monkeypatch.setitem(edits.prompt_for("personalized"), "in_build", False)
    assert edits.generate(spec, ctx) == ([], edits.Yield())            # a section not recorded yet: not in the build
    (c,), y = edits.generate(spec, ctx, in_build=False)
    assert y.kept == 1 and c.construction_method == "lm_generated" and c.verification_payload["policy"] == "cross_user"


# ---------------------------------------------------------------- the readers' notes on the 161 LM rows

def test_tips_made_from_a_template_read_as_unnatural():
    from domains.lm.naturalness import unnatural

    assert unnatural("What tips are effective for experts in rock climbing?") == "tips_are_for"
    assert unnatural("What tips are best for experts in gardening?") == "tips_are_for"
    assert unnatural("What tips do you have for experts in running?") is None
    assert unnatural("What are good rock climbing tips for experts?") is None


def test_pairs_of_the_pros_and_upsides_pattern_are_recognised():
    from domains.lm.naturalness import upside_pair

    assert upside_pair("What are some of the pros of renting a home?", "What are the upsides of renting a home?")
    assert upside_pair("What are the main benefits of microservices?", "What advantages do microservices have?")
    assert not upside_pair("What are the pros of online learning?", "What makes online learning attractive?")
