"""Difficulty from the embedder ensemble: pure functions over cosine similarities.

- Each embedder decides HIT when cosine(query_a, query_b) >= its threshold; the threshold is the
  F1-optimal one on the train split (ties: higher accuracy, then lower threshold).
- A row's difficulty is how many of the five members decide it correctly: easy >= 4,
  medium 2-3, hard <= 1.
- The held-out embedder gets a difficulty of its own from its margin to its threshold: within
  a band of half-width delta -> medium, outside it -> easy when right, hard when wrong. delta is
  set on the train split so that the held-out model's share of medium rows equals the ensemble's
  (so the two difficulty scales have the same middle). Cohen's kappa compares the two.
Similarities are rounded to 6 decimals before any decision, so the last bits of a float never
flip a vote.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

DIFFICULTIES = ("easy", "medium", "hard")


def f1_threshold(sims: Sequence[float], is_hit: Sequence[bool]) -> dict:
    """The F1-optimal threshold over the distinct similarity values (predict HIT when >= t)."""
    pairs = sorted(zip(sims, is_hit), key=lambda p: -p[0])
    pos = sum(1 for _, h in pairs if h)
    n = len(pairs)
    best = {"threshold": 1.000001, "f1": 0.0, "accuracy": (n - pos) / n if n else 0.0, "precision": 0.0, "recall": 0.0}
    tp = fp = 0
    i = 0
    while i < n:
        t = pairs[i][0]
        while i < n and pairs[i][0] == t:
            tp += pairs[i][1]
            fp += not pairs[i][1]
            i += 1
        fn = pos - tp
        tn = n - pos - fp
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        acc = (tp + tn) / n
        key = (round(f1, 12), round(acc, 12), -t)
        if key > (round(best["f1"], 12), round(best["accuracy"], 12), -best["threshold"]):
            best = {"threshold": t, "f1": f1, "accuracy": acc,
                    "precision": tp / (tp + fp) if tp + fp else 0.0, "recall": tp / pos if pos else 0.0}
    return best


def difficulty_from_votes(correct: int) -> str:
    return "easy" if correct >= 4 else "medium" if correct >= 2 else "hard"


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    n = len(a)
    if n == 0:
        return 0.0
    cats = sorted(set(a) | set(b))
    po = sum(1 for x, y in zip(a, b) if x == y) / n
    pe = sum((sum(1 for x in a if x == c) / n) * (sum(1 for y in b if y == c) / n) for c in cats)
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


def held_out_delta(margins: Sequence[float], medium_share: float) -> float:
    """The band half-width that puts `medium_share` of the train margins inside it."""
    mags = sorted(abs(m) for m in margins)
    if not mags or medium_share <= 0:
        return 0.0
    k = min(len(mags) - 1, max(0, int(round(medium_share * len(mags))) - 1))
    return mags[k] + 1e-9


@dataclass(frozen=True)
class DifficultyResult:
    difficulty: list[str]
    votes: list[dict[str, bool]]
    held_out: list[str]
    thresholds: dict[str, dict]
    delta: float
    kappa: float
    # the hard-paraphrase share (pipeline/stages/hard_paraphrases.py), set by the row_difficulty asset:
    # computed once, read by its metadata, the calibration report and the dataset card
    hard_paraphrases: dict = field(default_factory=dict)


def assign(sims: Mapping[str, Sequence[float]], members: Sequence[str], held_out: str,
           is_hit: Sequence[bool], splits: Sequence[str]) -> DifficultyResult:
    sims = {m: [round(float(s), 6) for s in v] for m, v in sims.items()}
    train = [i for i, s in enumerate(splits) if s == "train"]
    thresholds = {}
    for m in [*members, held_out]:
        thresholds[m] = f1_threshold([sims[m][i] for i in train], [is_hit[i] for i in train])
    n = len(is_hit)
    votes = [{m: (sims[m][i] >= thresholds[m]["threshold"]) == is_hit[i] for m in members} for i in range(n)]
    difficulty = [difficulty_from_votes(sum(v.values())) for v in votes]
    medium_share = sum(1 for i in train if difficulty[i] == "medium") / len(train) if train else 0.0
    t_h = thresholds[held_out]["threshold"]
    margins = [sims[held_out][i] - t_h for i in range(n)]
    delta = held_out_delta([margins[i] for i in train], medium_share)
    held = []
    for i in range(n):
        right = (sims[held_out][i] >= t_h) == is_hit[i]
        held.append("medium" if abs(margins[i]) < delta else ("easy" if right else "hard"))
    return DifficultyResult(difficulty, votes, held, thresholds, delta, cohen_kappa(difficulty, held))
