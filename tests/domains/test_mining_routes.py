"""Mined pairs routed to every cell they belong in (examples written for the tests, patterned on
what real traffic asks): explanatory and how-to questions go to qa_open, and the same follow-up at
two points of one conversation is a multi_turn RELATED_UNSAFE pair."""

import pytest
from domain_helpers import Conversation

from domains.base import normalize_text
from domains.corpora.mining import context, engine, followups, near
from domains.corpora.mining.rules import decide
from domains.corpora.mining.single import candidate, explanatory
from domains.corpora.mining.turns import conversation_turns
from domains.verify import verify


@pytest.mark.parametrize("text, expected", [
    ("Explain the Nyquist theorem and where it is used", True),
    ("What is the difference between TCP and UDP?", True),
    ("How do I install Pandas with pip", True),
    ("Why does ice float on water?", True),
    ("Define Scrum Model with a short explanation", True),
    ("can you explain the Krebs cycle simply", True),
    ("What's a monad in Haskell?", True),
    ("Write a sonnet about the sea", False),          # a creative request
    ("explain 4", False),                             # too short to name a subject
    ("why did you stop writing the list", False),     # asks about the assistant's own answer
    ("What is 17 * 23?", False),                      # a sum to compute
    ("How do I fix print(Items) failing", False),     # code to fix
    ("Give me ten names for a bakery", False),
])
def test_explanatory_questions(text, expected):
    assert explanatory(text) is expected


def _single(record_id: str, text: str):
    return next(t for t in conversation_turns("sharegpt", Conversation(record_id, (("user", text),)))
                if not isinstance(t, str))


def test_a_pair_of_explanatory_questions_goes_to_qa_open():
    a, b = _single("a_0", "Explain the Gini coefficient and when it is useful"), \
        _single("b_0", "Explain the Atkinson coefficient and when it is useful")
    d = decide(a.query, b.query)
    assert (d.label, d.rule) == ("ADVERSARIAL", "entity_change")
    c = candidate(a, b, d)
    assert c.domain == "qa_open" and c.verification_method == "rubric" and verify(c).passed
    # a discourse "Now" is no live request (conversational), but qa_open's policy would call it a time word
    a3, b3 = _single("e_0", "Explain the Doppler effect. Now give an example"), \
        _single("f_0", "Explain the Stark effect. Now give an example")
    assert candidate(a3, b3, decide(a3.query, b3.query)).domain == "conversational"
    # other requests stay conversational
    a2, b2 = _single("c_0", "Give me 5 names for a bakery"), _single("d_0", "Give me 6 names for a bakery")
    c2 = candidate(a2, b2, decide(a2.query, b2.query))
    assert c2.domain == "conversational" and c2.label == "ADVERSARIAL" and verify(c2).passed


def _conv(rid: str, topic: str, finals: list[str]) -> Conversation:
    turns = [("user", f"Write a long story about {topic}")]
    for k, final in enumerate(finals):
        turns += [("assistant", f"Part {k + 1} of the story about {topic} goes on here."), ("user", final)]
    return Conversation(rid, tuple(turns))


def _turns(records):
    return [t for r in records for t in conversation_turns("sharegpt", r) if not isinstance(t, str)]


def test_the_same_follow_up_twice_in_one_conversation_is_related_unsafe():
    ts = _turns([_conv("a_0", "a lighthouse", ["continue", "make it shorter", "continue", "continue"])])
    pairs, drops = followups.repeat_pairs(ts)
    assert [(a.index, b.index) for a, b in pairs] == [(2, 6)]  # the first two occurrences, one pair
    c = followups.candidate(*pairs[0], "RELATED_UNSAFE")
    assert c.label == "RELATED_UNSAFE" and c.domain == "multi_turn" and c.query_a == c.query_b == "continue"
    assert c.context_a != c.context_b and c.subcategory == "real_repeat_in_conversation_continuation"
    assert verify(c).passed
    # a turn an ADVERSARIAL pair took is not used again: the next two occurrences pair instead
    pairs2, _ = followups.repeat_pairs(ts, [pairs[0][0]])
    assert [(a.index, b.index) for a, b in pairs2] == [(6, 8)]


def test_repeat_pairs_are_capped_per_final_message_and_need_different_earlier_turns():
    convs = [_conv(f"{k}_0", f"topic {k}", ["yes", "yes"]) for k in "abcd"]
    pairs, drops = followups.repeat_pairs(_turns(convs))
    assert len(pairs) == followups.MAX_PER_FINAL and drops["multi_turn:related_cap_per_final"] == 2
    assert all(a.conversation == b.conversation for a, b in pairs)
    # a conversation going round in a circle: both "go on" turns keep the same last 4 earlier turns
    loop = (("user", "go on"), ("assistant", "Why did the chicken cross?"), ("user", "Tell me a joke"),
            ("assistant", "Why did the chicken cross?"))
    same = Conversation("s_0", loop + loop + (("user", "go on"),))
    pairs, drops = followups.repeat_pairs(_turns([same]))
    assert pairs == [] and drops["multi_turn:related_same_earlier_turns"] == 1


def test_pair_mines_both_multi_turn_labels():
    records = [_conv("a_0", "a lighthouse", ["continue", "continue"]),
               _conv("b_0", "a desert town", ["continue", "continue"]),
               _conv("c_0", "a moon base", ["continue", "continue"])]
    ts = _turns(records)
    texts = sorted({normalize_text(t.query) for t in ts if t.single})
    shard = engine.PreparedShard("sharegpt/t.json", tuple(ts), {}, len(ts), tuple(texts), near.signatures(texts))
    res = engine.pair([shard])
    labels = sorted(c.label for c in res.candidates if c.domain == "multi_turn")
    # across conversations: a#2-b#2 and a#4-b#4 (two per final message); then within c: c#2-c#4
    assert labels == ["ADVERSARIAL", "ADVERSARIAL", "RELATED_UNSAFE"]
    assert res.sources["repeat_in_conversation"] == 1


def test_only_messages_that_act_on_the_answer_just_before_repeat_as_related_unsafe():
    # a numbered part may be the same part of the same plan twice; a longer edit may hold its own subject
    for final in ("write chapter 3", "explain the second point", "rewrite the intro of this essay in French"):
        ts = _turns([_conv("a_0", "a lighthouse", [final, "continue", final])])
        assert context.follow_up_rule(final) in ("item_reference", "edit_previous")
        pairs, drops = followups.repeat_pairs(ts)
        assert [p[0].query for p in pairs] == [] and drops["multi_turn:related_undecided"] == 1, final
    for final in ("make it shorter", "10 more", "yes", "keep going"):
        pairs, _ = followups.repeat_pairs(_turns([_conv("a_0", "a lighthouse", [final, "continue", final])]))
        assert [p[0].query for p in pairs] == [final], final


def test_code_with_this_is_not_an_edit_of_the_previous_answer():
    assert context.follow_up_rule("explain promisify(this.client.del).bind(this.client);") is None
    assert context.follow_up_rule("explain this in simpler words") == "edit_previous"
    assert context.bare_edit("give me 5 more") and not context.bare_edit("rewrite this in French")


@pytest.mark.parametrize("a, b, label, rule", [
    ("How do I check if pandas runs on Jupyter?", "How do I check if pandas runs on Jyupyter?", None,
     "spelling_variant_undecided"),                                  # a letter inserted
    ("Plan a week in Germany with kids", "Plan a week in Germnay with kids", None, "spelling_variant_undecided"),
    ("Ask Mitchell about the budget", "Ask Michell about the budget", None, "spelling_variant_undecided"),
    # other names, though close in spelling
    ("Plan a week in Austria with kids", "Plan a week in Australia with kids", "ADVERSARIAL", "entity_change"),
    ("What is the capital of Iran today", "What is the capital of Iraq today", "ADVERSARIAL", "entity_change"),
    ("Write a letter to Lena about rent", "Write a letter to Leo about rent", "ADVERSARIAL", "entity_change"),
])
def test_a_misspelt_name_is_not_another_entity(a, b, label, rule):
    d = decide(a, b)
    assert (d.label, d.rule) == (label, rule)
