"""Threshold calibration, votes, kappa: hand-computed expectations."""
import pytest

from pipeline.stages.difficulty import assign, cohen_kappa, difficulty_from_votes, f1_threshold


def test_f1_threshold_picks_the_best_cut():
    sims = [0.9, 0.8, 0.7, 0.6, 0.5]
    hit = [True, True, False, True, False]
    best = f1_threshold(sims, hit)
    # cut at 0.6: tp 3, fp 1, fn 0 -> F1 = 6/7; cut at 0.8: tp 2, fn 1 -> F1 = 0.8
    assert best["threshold"] == 0.6 and best["f1"] == pytest.approx(6 / 7)


def test_difficulty_bands():
    assert [difficulty_from_votes(k) for k in range(6)] == ["hard", "hard", "medium", "medium", "easy", "easy"]


def test_kappa_known_values():
    assert cohen_kappa(["a", "b", "a", "b"], ["a", "b", "a", "b"]) == 1.0
    # po = 0.5, pe = 0.5 -> 0
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "a", "b"]) == 0.0
    # classic 2x2: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_assign_counts_members_right():
    members = ["m1", "m2", "m3", "m4", "m5"]
    sims = {m: [0.9, 0.1, 0.9, 0.1] for m in members}
    sims["m5"] = [0.1, 0.9, 0.1, 0.9]  # always wrong
    sims["h"] = [0.9, 0.1, 0.9, 0.1]
    res = assign(sims, members, "h", [True, False, True, False], ["train", "train", "dev", "test"])
    assert res.difficulty == ["easy"] * 4
    # m5's F1-optimal train threshold is 0.1 (call everything HIT): right on HIT rows only
    assert [v["m5"] for v in res.votes] == [True, False, True, False]
    assert res.thresholds["m5"]["threshold"] == 0.1
