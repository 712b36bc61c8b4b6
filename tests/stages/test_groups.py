"""Splits by generating group (pipeline/stages/groups.py): hand-built candidates, checked rules."""
from collections import Counter

import pytest

from domains.base import Candidate, Provenance, request_key
from pipeline.stages.groups import assign_splits, components, group_key, size_tolerance

LABELS = ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")


def cand(i: int, *, method: str = "curated", sub: str = "s", label: str = "EQUIV", domain: str = "math",
         operator: str | None = None, template: str | None = None, source: str = "curated",
         qa: str | None = None) -> Candidate:
    return Candidate(domain=domain, subcategory=sub, label=label, query_a=qa or f"question {i} a",
                     query_b=f"question {i} b", expected_answer_a="1", expected_answer_b="1", rationale="r",
                     verification_method="rubric", verification_payload={}, construction_method=method, source=source,
                     real_world_grounding="g",
                     provenance=Provenance("t", "1", template_id=template, operator=operator))


def test_group_key_per_method():
    assert group_key(cand(1, sub="capital+river")) == "template:math/capital"
    assert group_key(cand(1, method="adversarial_perturbation", operator="polarity_swap")) == "operator:polarity_swap"
    assert group_key(cand(1, method="adversarial_perturbation", domain="code", operator="polarity_swap")) == \
        "operator:polarity_swap"                                              # an operator spans domains
    assert group_key(cand(1, method="real_traffic_mined", template="number_change", source="wildchat")) == \
        "mining:number_change"
    assert group_key(cand(1, method="existing_benchmark", source="paws")) == "corpus:paws"
    assert group_key(cand(1, method="intent_bottom_up", source="banking77")) == "corpus:banking77"
    assert group_key(cand(1, method="intent_bottom_up", sub="weather")) == "template:math/weather"
    assert group_key(cand(1, method="lm_generated", template="math.edit.v3", sub="derivative")) == \
        "lm:math.edit:math/derivative"
    assert group_key(cand(1, method="adversarial_perturbation", operator="brand_new_op")) == "operator:brand_new_op"
    assert group_key(cand(1, method="some_new_method", source="x")) == "some_new_method:x:math/s"


def bench() -> list[Candidate]:
    """Five template families x 5 labels x 8 rows, six operators of 6 rows, two corpora, and rows
    sharing a request across families (they must join)."""
    items, i = [], 0
    for fam in range(10):
        for lab in LABELS:
            if lab == "ADVERSARIAL":
                continue
            for k in range(6):
                items.append(cand(i, sub=f"fam{fam}", label=lab, domain=("math", "code")[fam % 2]))
                i += 1
    for op in range(8):
        for k in range(6):
            items.append(cand(i, method="adversarial_perturbation", operator=f"op{op}", label="ADVERSARIAL",
                              domain=("math", "code")[k % 2]))
            i += 1
    for corpus in ("paws", "qqp"):
        for k in range(10):
            items.append(cand(i, method="existing_benchmark", source=corpus, label=("EQUIV", "UNRELATED")[k % 2]))
            i += 1
    items.append(cand(i, sub="fam0", label="UNRELATED", qa="question 1 a"))          # joins fam0 with itself
    items.append(cand(i + 1, sub="fam3", label="UNRELATED", qa="question 300 a"))    # fam3 with fam<300's family
    return items


def sizes(n: int) -> dict:
    return {"train": n - n // 4 - n // 4, "dev": n // 4, "test": n // 4}


def test_groups_never_straddle_and_test_groups_are_unseen():
    items = bench()
    s = assign_splits(items, sizes(len(items)))
    keys = [group_key(c) for c in items]
    where: dict[str, set] = {}
    for k, x in zip(keys, s):
        where.setdefault(k, set()).add("test" if x == "test" else "seen")
    assert all(len(v) == 1 for v in where.values())                      # a group is all test or all train/dev
    assert {k for k, x in zip(keys, s) if x == "test"}
    train = {k for k, x in zip(keys, s) if x == "train"}
    assert {k for k, x in zip(keys, s) if x == "dev"} <= train         # dev holds groups train holds
    test_req = {request_key(c.query_a, None, None) for c, x in zip(items, s) if x == "test"}
    seen_req = {request_key(c.query_a, None, None) for c, x in zip(items, s) if x != "test"}
    assert not test_req & seen_req


def test_sizes_within_tolerance_and_deterministic():
    items = bench()
    want = sizes(len(items))
    s = assign_splits(items, want)
    got = Counter(s)
    assert got["dev"] == want["dev"]
    assert abs(got["test"] - want["test"]) <= size_tolerance(want["test"])
    assert got["train"] + got["dev"] + got["test"] == len(items)
    assert s == assign_splits(list(items), want)
    shuffled = list(reversed(items))
    again = dict(zip((c.key for c in shuffled), assign_splits(shuffled, want)))
    assert [again[c.key] for c in items] == s                          # input order does not matter


def test_a_group_too_large_for_the_test_split_is_an_error():
    items = [cand(i, sub="one") for i in range(40)]                     # one family: nothing can go to test
    with pytest.raises(ValueError, match="whole generating groups"):
        assign_splits(items, {"train": 20, "dev": 10, "test": 10})


def test_shared_requests_join_groups():
    items = [cand(1, sub="a"), cand(2, sub="b", qa="question 1 a"), cand(3, sub="c")]
    comps = sorted(components(items, [group_key(c) for c in items]))
    assert comps == [[0, 1], [2]]


def test_size_tolerance():
    assert size_tolerance(500) == 25 and size_tolerance(62) == 3 and size_tolerance(0) == 0
