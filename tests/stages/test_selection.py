"""Selection, apportionment and splits: pure functions, hand-checked expectations."""
from collections import Counter

import pytest

from domains.base import Candidate, Outcome, Provenance
from pipeline.core.config import Profile
from pipeline.stages.selection import apportion, assign_splits, group_key, request_key, select, select_cell

MIX = {"real_traffic_mined": 520, "lm_generated": 490, "adversarial_perturbation": 473, "intent_bottom_up": 338,
       "existing_benchmark": 179, "curated": 1}


def cand(i: int, label: str = "EQUIV", method: str = "curated", domain: str = "math", qa: str | None = None) -> Candidate:
    return Candidate(domain=domain, subcategory="s", label=label, query_a=qa or f"question {i} a", query_b=f"question {i} b",
                     expected_answer_a="1", expected_answer_b="1", rationale="r", verification_method="rubric",
                     verification_payload={}, construction_method=method, source="curated",
                     real_world_grounding="g", provenance=Provenance("t", "1"))


def test_apportion_largest_remainder_and_caps():
    assert apportion(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert apportion(10, {"a": 3, "b": 1}, {"a": 2, "b": 100}) == {"a": 2, "b": 8}
    assert apportion(5, {"a": 1}, {"a": 3}) == {"a": 3}  # not enough anywhere: a short cell


def test_select_cell_follows_mix_and_is_order_independent():
    cands = [cand(i, method="curated") for i in range(10)] + [cand(100 + i, method="adversarial_perturbation") for i in range(10)]
    chosen, used = select_cell("math", "ADVERSARIAL", 6, cands, MIX)
    assert used["adversarial_perturbation"] == 6 and used["curated"] == 0  # weight 473 vs 1
    again, _ = select_cell("math", "ADVERSARIAL", 6, list(reversed(cands)), MIX)
    assert [c.key for c in chosen] == [c.key for c in again]
    small, _ = select_cell("math", "ADVERSARIAL", 3, cands, MIX)
    assert [c.key for c in small] == [c.key for c in chosen][:3]  # a smaller profile takes a prefix


def test_select_cell_fills_from_other_methods_when_one_runs_out():
    cands = [cand(i, method="curated") for i in range(10)] + [cand(100, method="lm_generated")]
    chosen, used = select_cell("math", "EQUIV", 5, cands, MIX)
    assert len(chosen) == 5 and used["lm_generated"] == 1 and used["curated"] == 4


def profile(cells: dict, splits: dict) -> Profile:
    return Profile("t", "t", ("EQUIV", "PARA_SAFE", "RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"), cells, splits, MIX)


def test_select_reports_shortfall_per_cell():
    verified = {"math": [(cand(i), Outcome("deterministic", True, "ok")) for i in range(3)]}
    sel = select(profile({"math": {"EQUIV": 5}}, {"train": 3, "dev": 1, "test": 1}), verified)
    assert sel.shortfalls == {("math", "EQUIV"): 2}
    assert sel.rows == []


def test_splits_keep_test_queries_out_of_train_dev():
    items = []
    for g in range(40):  # 40 families of 3 rows sharing query_a, plus singletons; 8 template families
        for k, lab in enumerate(["EQUIV", "PARA_SAFE", "ADVERSARIAL"]):
            items.append(cand(g * 10 + k, label=lab, qa=f"family {g}").with_(subcategory=f"t{g % 8}"))
    items += [cand(1000 + i, label="UNRELATED").with_(subcategory=f"t{i % 8}") for i in range(40)]
    splits = assign_splits(items, {"train": 80, "dev": 40, "test": 40})
    got = Counter(splits)
    assert got["dev"] == 40 and abs(got["test"] - 40) <= 3 and sum(got.values()) == 160
    test_keys = {request_key(c.query_a, None, None) for c, s in zip(items, splits) if s == "test"}
    other = {request_key(c.query_a, None, None) for c, s in zip(items, splits) if s != "test"}
    assert not test_keys & other
    assert splits == assign_splits(list(items), {"train": 80, "dev": 40, "test": 40})


def test_select_numbers_rows_per_domain():
    verified = {"math": [(cand(i, label=lab), Outcome("deterministic", True, "ok"))
                         for i, lab in enumerate(["EQUIV"] * 4 + ["UNRELATED"] * 4)]}
    sel = select(profile({"math": {"EQUIV": 2, "UNRELATED": 2}}, {"train": 2, "dev": 1, "test": 1}), verified)
    assert [r.id for r in sel.rows] == ["cb-math-0001", "cb-math-0002", "cb-math-0003", "cb-math-0004"]
    assert [r.candidate.label for r in sel.rows] == ["EQUIV", "EQUIV", "UNRELATED", "UNRELATED"]


def test_split_sizes_must_add_up():
    with pytest.raises(ValueError):
        assign_splits([cand(1)], {"train": 1, "dev": 1, "test": 0})


def test_a_methods_hard_rewordings_come_first_so_lm_rows_displace_the_easy_ones():
    def curated(i: int, template: str) -> Candidate:
        c = cand(i, label="PARA_SAFE", domain="conversational")
        return c.with_(provenance=Provenance("t", "1", template_id=template))

    cands = ([curated(i, "rewording") for i in range(6)] + [curated(10 + i, "hard_rewording") for i in range(4)]
             + [cand(100 + i, label="PARA_SAFE", method="lm_generated", domain="conversational") for i in range(3)])
    chosen, used = select_cell("conversational", "PARA_SAFE", 7, cands, MIX)
    assert used["lm_generated"] == 3 and used["curated"] == 4
    assert [c.provenance.template_id for c in chosen if c.construction_method == "curated"] == ["hard_rewording"] * 4
    more, _ = select_cell("conversational", "PARA_SAFE", 9, cands, MIX)   # then the others, in their shuffled order
    assert sum(c.provenance.template_id == "rewording" for c in more) == 2


def test_hard_rewordings_fill_the_cell_after_mined_rows_and_before_the_mix():
    def curated(i: int, template: str) -> Candidate:
        c = cand(i, label="PARA_SAFE", domain="qa_open")
        return c.with_(provenance=Provenance("t", "1", template_id=template))

    cands = ([curated(i, "hard_rewording") for i in range(5)] + [curated(10 + i, "rewording") for i in range(5)]
             + [cand(100 + i, label="PARA_SAFE", method="existing_benchmark", domain="qa_open") for i in range(20)]
             + [cand(200 + i, label="PARA_SAFE", method="intent_bottom_up", domain="qa_open") for i in range(20)]
             + [cand(300 + i, label="PARA_SAFE", method="real_traffic_mined", domain="qa_open") for i in range(2)])
    chosen, used = select_cell("qa_open", "PARA_SAFE", 12, cands, MIX)
    assert used["real_traffic_mined"] == 2 and used["curated"] == 5    # every hard rewording, no other curated row
    assert sum(c.provenance.template_id == "hard_rewording" for c in chosen) == 5
    assert used["existing_benchmark"] + used["intent_bottom_up"] == 5 and len(chosen) == 12
    few, used = select_cell("qa_open", "PARA_SAFE", 4, cands, MIX)     # a small cell: mined, then hard rewordings
    assert used["real_traffic_mined"] == 2 and used["curated"] == 2 and len(few) == 4


def test_rewordings_of_real_requests_come_before_the_curated_hard_rewordings():
    def curated(i: int, template: str) -> Candidate:
        c = cand(i, label="PARA_SAFE", domain="conversational")
        return c.with_(provenance=Provenance("t", "1", template_id=template))

    cands = ([curated(i, "hard_rewording") for i in range(6)] + [curated(10 + i, "real_rewording") for i in range(4)]
             + [curated(20 + i, "rewording") for i in range(6)])
    chosen, used = select_cell("conversational", "PARA_SAFE", 7, cands, MIX)
    assert [c.provenance.template_id for c in chosen] == ["real_rewording"] * 4 + ["hard_rewording"] * 3
    few, _ = select_cell("conversational", "PARA_SAFE", 3, cands, MIX)   # at most 3/5 of a cell: 1 of 3
    assert [c.provenance.template_id for c in few] == ["real_rewording"] + ["hard_rewording"] * 2


def test_real_rewordings_fill_at_most_three_fifths_of_a_cell():
    def curated(i: int, template: str) -> Candidate:
        c = cand(i, label="PARA_SAFE", domain="qa_open")
        return c.with_(provenance=Provenance("t", "1", template_id=template))

    cands = [curated(i, "real_rewording") for i in range(20)] + [curated(100 + i, "rewording") for i in range(20)]
    chosen, _ = select_cell("qa_open", "PARA_SAFE", 10, cands, MIX)
    assert sum(c.provenance.template_id == "real_rewording" for c in chosen) == 6 and len(chosen) == 10


def test_real_rewordings_group_with_their_corpus():
    c = cand(1, label="PARA_SAFE", domain="qa_open").with_(source="qqp", provenance=Provenance("t", "1", template_id="real_rewording"))
    other = cand(2, label="PARA_SAFE", domain="qa_open", method="existing_benchmark").with_(source="qqp")
    assert group_key(c) == group_key(other) == "corpus:qqp"


def test_real_rewordings_never_displace_lm_rows():
    def curated(i: int, template: str) -> Candidate:
        c = cand(i, label="PARA_SAFE", domain="qa_factual")
        return c.with_(provenance=Provenance("t", "1", template_id=template))

    others = ([curated(100 + i, "rewording") for i in range(10)]
              + [cand(200 + i, label="PARA_SAFE", method="lm_generated", domain="qa_factual") for i in range(10)]
              + [cand(300 + i, label="PARA_SAFE", method="existing_benchmark", domain="qa_factual") for i in range(10)])
    _, before = select_cell("qa_factual", "PARA_SAFE", 10, others, MIX)
    real = [curated(i, "real_rewording") for i in range(6)]
    chosen, after = select_cell("qa_factual", "PARA_SAFE", 10, real + others, MIX)
    assert after["lm_generated"] == before["lm_generated"] > 0 and len(chosen) == 10
    assert sum(c.provenance.template_id == "real_rewording" for c in chosen) == 10 - before["lm_generated"]
