"""Mining every turn: the negation and follow-up rules (examples written for the tests, patterned
on what real traffic asks), turn extraction (scrub first, length limit, cut context, ShareGPT
parts), MinHash/LSH candidates, multi-turn pairs and their cap, and selection preferring mined rows."""
from collections import Counter

import pytest
from domain_helpers import Conversation

from domains.base import Candidate, Provenance
from domains.corpora import mining as M
from domains.corpora.mining import context, followups, near, turns
from domains.verify import verify


@pytest.mark.parametrize("a, b, rule", [
    ("Write a sorting function that does not use recursion", "Write a sorting function that does use recursion",
     "negation_change"),
    ("Why isn't my cron job running at midnight", "Why is my cron job running at midnight", "negation_change"),
    ("Summarise the report without the appendix", "Summarise the report with the appendix", "negation_change"),
    ("List fruits that are never red", "List fruits that are always red", "negation_change"),
    ("Is there no limit on uploads", "Is there a limit on uploads", "one_token_undecided"),  # no -> a: undecided
    ("Explain the tax rules for 2021", "Explain the tax rules for 2022", "number_change"),
])
def test_decide_adds_the_negation_rule(a, b, rule):
    d = M.decide(a, b)
    assert d.rule == rule and (d.label == "ADVERSARIAL") == (rule != "one_token_undecided")
    # classify, a feature of the committed reference cache, is unchanged: it never says negation_change
    assert M.classify(a, b).rule != "negation_change"


@pytest.mark.parametrize("text, rule", [
    ("continue", "continuation"), ("Please continue.", "continuation"), ("keep going", "continuation"),
    ("Continue writing please", "continuation"), ("continue from where you stopped", "continuation"),
    ("finish your answer", "continuation"), ("go on", "continuation"),
    ("make it shorter", "edit_previous"), ("Shorter", "edit_previous"), ("translate it to French", "edit_previous"),
    ("Rewrite this in simpler words", "edit_previous"), ("10 more", "edit_previous"),
    ("explain the second point", "item_reference"), ("continue to step 3", "item_reference"),
    ("tell me about option 2 in detail", "item_reference"), ("the first one", "item_reference"),
    ("yes", "reply_to_question"), ("b", "reply_to_question"), ("5", "reply_to_question"),
    ("thanks", None), ("hello", None), ("What are cataracts?", None),
    ("Write a Python function that merges two sorted lists and explains it step by step in detail", None),
])
def test_follow_up_rules(text, rule):
    assert context.follow_up_rule(text) == rule


@pytest.mark.parametrize("text, alone", [
    ("How do I install numpy on Windows?", True), ("Write a haiku about autumn leaves", True),
    ("Now do the same for Java", False), ("Can you explain that again?", False), ("continue", False),
    ("thank you", False),
])
def test_standalone(text, alone):
    assert context.standalone(text) is alone



def test_turns_scrub_first_limit_length_and_cut_context():
    long_answer = "word " * 400  # 2,000 characters: cut at CONTEXT_CHARS
    rec = Conversation("c1_0", (("user", "My email is jane.doe@example.com, write a cover letter"), ("assistant", long_answer),
                        ("user", "x" * (turns.QUERY_CHARS + 1)), ("assistant", "ok"),
                        ("user", "Now do the same for my sister"), ("assistant", "Sure."), ("user", "make it shorter"),
                        ("assistant", "Done."), ("user", "thanks")))
    items = list(turns.conversation_turns("sharegpt", rec))
    assert [i if isinstance(i, str) else i.use for i in items] == [
        "first", "query_too_long", "later_turn_not_standalone", "edit_previous", "courtesy"]
    first, follow = items[0], items[3]
    assert "jane.doe" not in first.query and "[EMAIL]" in first.query and first.scrubbed and "email" in first.kinds[0]
    assert follow.context is not None and len(follow.context) == turns.CONTEXT_TURNS and follow.earlier == 6
    assert all("jane.doe" not in m["content"] for m in follow.context)
    assert follow.cut == (0,) and follow.context[0]["content"].endswith(turns.CUT_MARK)
    assert len(follow.context[0]["content"]) <= turns.CONTEXT_CHARS + len(turns.CUT_MARK)


def test_a_later_sharegpt_part_opens_mid_conversation():
    part = Conversation("c1_1", (("user", "continue"), ("assistant", "…"), ("user", "How do I boil an egg?")))
    items = list(turns.conversation_turns("sharegpt", part))
    assert items[0] == "follow_up_without_earlier_turns" and items[1].use == "standalone"
    assert turns.conversation_key("sharegpt", "abc_12") == ("abc", 12)
    assert turns.conversation_key("lmsys_arena", "abc_12") == ("abc_12", 0)


def test_lsh_finds_one_token_changes_among_unrelated_prompts():
    base = [f"Please explain how the {w} works in a modern car engine today" for w in
            ("turbocharger", "alternator", "radiator", "crankshaft")]
    texts = base + ["Please explain how the turbocharger works in a modern truck engine today"] + \
        [f"unrelated prompt number {k} about {k * 7} different topics entirely" for k in range(40)]
    pairs = near.lsh_pairs(near.signatures(texts))
    assert (0, 4) in pairs
    assert all(i >= 5 and j >= 5 for i, j in pairs if i not in range(5) and j not in range(5))
    # near-linear: every text keeps at most LSH_NEIGHBOURS partners, never all pairs
    assert len(pairs) <= len(texts) * near.LSH_NEIGHBOURS
    assert near.signatures(texts).tobytes() == near.signatures(list(texts)).tobytes()


def _follow(rid: str, conv: str, answer: str, final: str = "continue") -> turns.Turn:
    ctx = ({"role": "user", "content": f"Write about {answer}"}, {"role": "assistant", "content": answer})
    return turns.Turn("sharegpt", "t.json", "none stated", rid, 2, conv, final, context.follow_up_rule(final),
                      False, (), ctx, (), 2)


def test_follow_up_pairs_other_conversations_capped_per_final_message():
    group = [_follow("a_0", "a", "Rome was founded"), _follow("a_1", "a", "The Tiber river"),
             _follow("b_0", "b", "Rome was founded"), _follow("c_0", "c", "Photosynthesis turns light"),
             _follow("d_0", "d", "A haiku has three lines"), _follow("e_0", "e", "Quicksort picks a pivot"),
             _follow("f_0", "f", "Tokyo is large"), _follow("g_0", "g", "Jazz began")]
    pairs, drops, repeated = followups.follow_up_pairs(group)
    assert repeated == 1 and len(pairs) == followups.MAX_PER_FINAL
    for a, b in pairs:
        assert a.conversation != b.conversation and a.context != b.context
    assert drops["multi_turn:same_conversation"] >= 1 and drops["multi_turn:same_earlier_turns"] >= 1
    assert drops["multi_turn:cap_per_final"] >= 1
    c = followups.candidate(*pairs[0])
    assert c.domain == "multi_turn" and c.label == "ADVERSARIAL" and c.context_a != c.context_b
    assert c.query_a == c.query_b == "continue" and c.construction_method == "real_traffic_mined"
    assert verify(c).passed and c.provenance.operator_params["context_a"]["kept_turns"] == 2


def _cand(method: str, k: int, label: str = "ADVERSARIAL") -> Candidate:
    return Candidate("conversational", "x", label, f"q{method}{k}", f"r{method}{k}", "a", "b", "r", "rubric", {},
                     method, "s", "g", Provenance("g", "1"))


def test_selection_fills_a_cell_with_mined_rows_first():
    from pipeline.stages.selection import select_cell

    mix = {"real_traffic_mined": 520, "lm_generated": 490, "adversarial_perturbation": 473, "curated": 1}
    cands = [_cand("real_traffic_mined", k) for k in range(7)] + [_cand("adversarial_perturbation", k) for k in range(20)] \
        + [_cand("curated", k) for k in range(20)]
    chosen, used = select_cell("conversational", "ADVERSARIAL", 10, cands, mix)
    assert used["real_traffic_mined"] == 7 and len(chosen) == 10
    chosen, used = select_cell("conversational", "ADVERSARIAL", 5, cands, mix)
    assert used == Counter({"real_traffic_mined": 5, "adversarial_perturbation": 0, "curated": 0})
    # without mined rows the mix shares the cell as before
    chosen, used = select_cell("conversational", "ADVERSARIAL", 10, cands[7:], mix)
    assert used["adversarial_perturbation"] == 10
