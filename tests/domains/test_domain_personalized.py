"""personalized: same-user pairs verify by rubric; cross-user pairs are forced to MISS by policy."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domains import personalized as pz
from domains.verify import verify

from domain_helpers import assert_family_rule, assert_input_error, assert_quota, assert_rebuild_same, built

PERSONAS = pz.personas()
TASKS = sorted(pz._seed()["tasks"])


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_meets_quota(profile):
    rep = assert_quota("personalized", profile)
    assert all(c.construction_method == "adversarial_perturbation" for c in rep.kept["ADVERSARIAL"])


def test_at_least_60_identities():
    assert len({p["name"] for p in PERSONAS}) >= 60
    cands = built(pz)
    assert len({c.system_prompt_a for c in cands} | {c.system_prompt_b for c in cands}) >= 60


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PERSONAS), st.sampled_from(TASKS))
def test_identity_swap_changes_the_answer(persona, task):
    out = pz.OPERATORS["identity_swap"].apply((persona, task))
    assert out is not None
    new, field, value = out
    assert new[field] == value != persona[field]
    assert pz.system_prompt(new, 0) != pz.system_prompt(persona, 0)
    v = pz._seed()["tasks"][task]["values"][0]
    assert pz._criteria(task, new, v) != pz._criteria(task, persona, v)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(TASKS), st.integers(0, 3))
def test_slot_swap_changes_the_answer(task, i):
    values = pz._seed()["tasks"][task]["values"]
    v = values[i % len(values)]
    new = pz.OPERATORS["request_slot_swap"].apply((task, v))
    assert new != v
    assert pz._criteria(task, PERSONAS[0], new) != pz._criteria(task, PERSONAS[0], v)


def test_policy_forces_miss_across_users_only():
    cands = built(pz)
    cross = [c for c in cands if c.system_prompt_a != c.system_prompt_b]
    same = [c for c in cands if c.system_prompt_a == c.system_prompt_b]
    assert cross and same
    assert all(c.verification_method == "policy_no_cache" and c.binary_label == "MISS" and pz.policy(c) == "cross_user"
               for c in cross)
    assert all(c.verification_method == "rubric" and pz.policy(c) is None for c in same)
    assert all(c.binary_label == "HIT" for c in same if c.label in ("EQUIV", "PARA_SAFE"))
    # A same-user row cannot claim the cross-user policy.
    hit = next(c for c in same if c.label == "EQUIV")
    claim = hit.with_(verification_method="policy_no_cache", verification_payload={"policy": "cross_user"})
    assert not verify(claim).passed


def test_verifier_accepts_hits_and_rejects_flipped_labels():
    cands = built(pz)
    hit = next(c for c in cands if c.label == "PARA_SAFE")
    assert verify(hit).passed
    assert not verify(hit.with_(label="ADVERSARIAL")).passed
    for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"):
        for c in [c for c in cands if c.label == lab][:10]:
            assert verify(c).passed
            assert not verify(c.with_(label="EQUIV")).passed, (lab, c.query_a)


def test_split_rule_and_distinct_pairs():
    assert_family_rule(built(pz),
                       sides_differ=lambda c: c.query_a != c.query_b or c.system_prompt_a != c.system_prompt_b)


def test_deterministic():
    assert_rebuild_same(lambda: built(pz), pz._build, pz._seed)


def test_bad_persona_is_one_line_input_error(tmp_path, monkeypatch):
    bad = tmp_path / "personalized.yaml"
    bad.write_text("personas: [[Ann, nurse]]\nsystem_prompts: []\ngreetings: []\ntasks: {}\n", encoding="utf-8")
    assert_input_error(monkeypatch, pz, "SOURCE_FILE", bad, pz._seed, r"personas\[0\]: expected")


def _task_pair(c) -> tuple[str, str] | None:
    """The two tasks of a same-user row built from two different tasks, else None."""
    tasks = c.subcategory.removeprefix("same_user_").split("+")
    return (tasks[0], tasks[1]) if c.subcategory.startswith("same_user_") and len(tasks) == 2 else None


def test_related_vs_unrelated_follows_the_topic_rule():
    """One rule for every pair of tasks: the same topic -> RELATED_UNSAFE, else UNRELATED. The audit
    found gift+activity and out_of_office+bio labelled RELATED while activity+restaurant and
    bio+activity were UNRELATED (cb-personalized-0064/0074/0080)."""
    topic = {name: t["topic"] for name, t in pz._seed()["tasks"].items()}
    labels: dict[frozenset, set[str]] = {}
    for c in built(pz):
        pair = _task_pair(c)
        if pair is None:
            continue
        want = "RELATED_UNSAFE" if topic[pair[0]] == topic[pair[1]] else "UNRELATED"
        assert c.label == want, (c.label, pair)
        labels.setdefault(frozenset(pair), set()).add(c.label)
    assert all(len(v) == 1 for v in labels.values())
    assert {"RELATED_UNSAFE", "UNRELATED"} <= set().union(*labels.values())
    # The flagged pairs are different tasks, never RELATED.
    for a, b in (("gift", "activity"), ("out_of_office", "bio")):
        assert not pz.related(a, b) and not pz.related(b, a)
    assert pz.related("meal", "groceries") and pz.related("day_trip", "activity") and not pz.related("meal", "meal")


@pytest.mark.parametrize("text, want", [
    ("Hi! Write a two-line bio for my LinkedIn profile.", ("two line",)),
    ("I need a two-sentence bio for my conference badge.", ("two sentence",)),
    ("Can you write me a brief bio for my team web page?", ()),
    ("Any ideas for a lunch I can make in 20 minutes?", ("20 minutes",)),
    ("What could I treat myself to for roughly 100 euros?", ("100 euros",)),
])
def test_explicit_constraints(text, want):
    assert pz.explicit_constraints(text) == want


def test_paraphrases_keep_the_same_explicit_constraints():
    """cb-personalized-0033/0050/0053/0058 paired a two-sentence or two-line bio with a short one."""
    rows = [c for c in built(pz) if c.label in ("EQUIV", "PARA_SAFE")]
    assert rows
    bad = [(c.query_a, c.query_b) for c in rows if pz.explicit_constraints(c.query_a) != pz.explicit_constraints(c.query_b)]
    assert not bad, bad[:3]


def test_phrasings_with_different_limits_are_one_line_input_error(tmp_path, monkeypatch):
    text = pz.SOURCE_FILE.read_text(encoding="utf-8").replace('"Write a short bio for my {platform}."',
                                                              '"Write a two-line bio for my {platform}."')
    assert "two-line" in text
    bad = tmp_path / "personalized.yaml"
    bad.write_text(text, encoding="utf-8")
    assert_input_error(monkeypatch, pz, "SOURCE_FILE", bad, pz._seed, r"tasks\.bio\.phrasings\[1\]: states \[\]")


@pytest.mark.parametrize("raw, fixed", [
    ("You are assisting Ana, a accountant in Lima.", "You are assisting Ana, an accountant in Lima."),
    ("a urban planner", "an urban planner"), ("Write a acrostic poem", "Write an acrostic poem"),
    ("a university lecturer", "a university lecturer"), ("a one-day trip", "a one-day trip"),
    ("a haiku", "a haiku"), ("A orchestra", "An orchestra"),
])
def test_articles_agree_with_the_filled_value(raw, fixed):
    from domains.families import fix_articles

    assert fix_articles(raw) == fixed


def test_no_generated_text_says_a_before_a_vowel_sound():
    # Templates say "a {role}"; "a accountant" came out until the filled text was fixed.
    from domains.families import fix_articles

    for c in [c for pool in pz._pools(None).values() for c in pool]:
        for text in (c.query_a, c.query_b, c.system_prompt_a, c.system_prompt_b, c.expected_answer_a):
            assert text is None or fix_articles(text) == text, text


def test_paraphrase_pairs_take_the_phrasing_that_shares_fewest_words():
    # issue 17 item 5: a phrasing is paired with its least-overlapping rewording (hard for embedders)
    from domains.families import template_words

    para = [c for c in built(pz) if c.label == "PARA_SAFE" and c.verification_method == "rubric"]
    assert para and all(verify(c).passed for c in para)
    phrasings = pz._seed()["tasks"]["meal"]["phrasings"]
    j = pz.far_rotation(phrasings, 0) % len(phrasings)
    mine = template_words(phrasings[0])
    jac = [len(mine & template_words(p)) / len(mine | template_words(p)) for p in phrasings]
    assert jac[j] == min(jac[1:])
