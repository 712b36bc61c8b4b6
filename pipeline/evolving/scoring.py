"""Scoring the quarter's verified candidates: the target cache, every reference cache, and the
difficulty of each candidate on the main benchmark's scale.

- The target is a reference name (built on the main benchmark, so the verified cache trains on its
  train split and picks its threshold on dev, exactly as in the build) or `module:<file.py or dotted
  module>[:<Class>]`, a user's pair cache or store/lookup cache (run under the isolated protocol).
  Its identity (its name, protocol, model snapshots, threshold, the sha256 of its declared settings
  and of its code closure) is what the slice records. What decides its behaviour (name, protocol,
  model snapshots, settings: `behaviour_sha256`) seeds the slice's order: another target is another
  slice, while moving or re-wrapping the same cache's code changes no row.
- Every score goes through `score_chosen`, the one path that scores a chosen cache through the
  evaluation-result cache, so a rerun of the same quarter re-scores nothing.
- Difficulty: the five ensemble members decide each candidate at the thresholds the main build
  calibrates (F1-optimal on its train split, pipeline/stages/difficulty.py), votes counted as there.
  A candidate's grade depends on its own two requests only, so it is graded only when it fooled the
  target (the only candidates a slice may hold): the caches score the candidates file under the
  scoring contract, without a difficulty (assets/evolving.py). Grading every candidate cost a cold
  check about a seventh of its CPU time, in e5, L3 and WordLlama vectors no other step reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.core.errors import InputError
from pipeline.core.hashing import canonical_json, sha256_text

MODULE_PREFIX = "module:"
# The reference caches a report scores (the isolated GPTCache settings of the build's table, the verified cache).
REPORTED = ("gptcache-minilm@0.80", "gptcache-minilm@0.85", "gptcache-mpnet@0.80", "verified")


@dataclass
class Target:
    """A cache to score: what `score_chosen` needs, and the identity the slice records."""

    chosen: Any                 # pipeline.harness.scoring.Chosen
    identity: dict              # name, protocol, behaviour_sha256, code_sha256, model_snapshot, threshold


def check_target(name: str) -> None:
    """Refuse, before any work, a target that cannot be resolved: an unknown reference name, or a
    module:<file.py or dotted module> that is not there. One line naming --target (a quick check: the
    cache itself is built later, by `resolve`)."""
    if name.startswith(MODULE_PREFIX):
        import importlib.util

        spec = name[len(MODULE_PREFIX):].partition(":")[0]
        if not spec:
            raise InputError(f"--target {name}: no module. Write module:<file.py or dotted module>[:<Class>]")
        if spec.endswith(".py"):
            if not Path(spec).is_file():
                raise InputError(f"--target {name}: file {spec} not found. Pass an existing .py file or a dotted module")
            return
        try:
            found = importlib.util.find_spec(spec)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise InputError(f"--target {name}: no module named {spec!r}. Pass a .py file or a dotted module "
                             "importable from the current directory")
        return
    from pipeline.core.registry import UnknownNameError
    from pipeline.references import get_reference

    try:
        get_reference(name)
    except UnknownNameError as exc:
        raise InputError(f"--target: {exc}. Or name a user cache as module:<file.py>[:<Class>]") from None


def resolve(name: str, bench: Path) -> Target:
    """The cache `name` names, built against the main benchmark `bench` (see the module docstring)."""
    from pipeline.harness.scoring import Chosen
    from pipeline.harness.stateful import is_store_lookup

    if name.startswith(MODULE_PREFIX):
        from pipeline.harness.user_cache import load_cache

        spec, _, cls = name[len(MODULE_PREFIX):].partition(":")
        if not spec:
            raise InputError(f"target {name!r}: no module. Write module:<file.py or dotted module>[:<Class>]")
        subject, _ = load_cache(spec, cls or None)
        protocol = "isolated" if is_store_lookup(subject) else "pair"
        chosen = Chosen(name, protocol, subject)
    else:
        from pipeline.core.registry import UnknownNameError
        from pipeline.references import get_reference

        try:
            spec = get_reference(name)
        except UnknownNameError as exc:
            raise InputError(f"target: {exc}. Or name a user cache as module:<file.py>[:<Class>]") from None
        subject = spec.build(Path(bench))
        protocol = "isolated" if is_store_lookup(subject) else "pair"
        chosen = Chosen(name, protocol, subject, name)
    return Target(chosen, identity_of(name, protocol, subject))


def identity_of(name: str, protocol: str, subject: Any) -> dict:
    """name, protocol, the sha256 of what decides its behaviour (name, protocol, declared model
    snapshot and settings), the sha256 of the cache's code closure (the evaluation-result cache's
    view; provenance only), its declared model snapshot and its threshold (None when it declares none)."""
    from pipeline.harness.cache import implementation_identity

    impl = implementation_identity(subject)
    settings = impl.get("settings") if isinstance(impl.get("settings"), dict) else {}
    threshold = settings.get("threshold", settings.get("similarity_threshold"))
    behaviour = {"name": name, "protocol": protocol, "model_snapshot": impl.get("model_snapshot"),
                 "settings": impl.get("settings")}
    return {"name": name, "protocol": protocol, "behaviour_sha256": sha256_text(canonical_json(behaviour)),
            "code_sha256": sha256_text(canonical_json(impl["code"])),
            "model_snapshot": impl.get("model_snapshot"),
            "threshold": None if threshold is None else round(float(threshold), 6)}


def decisions(target: Target, bench_file: Path, store: Any = None,
              strict: bool = True) -> dict[str, tuple[bool, float | None]]:
    """id -> (HIT?, confidence) of the target on every row of `bench_file`, through the result cache;
    `strict=False`: `bench_file` is held to the scoring contract (the candidates file: see `difficulty`)."""
    from pipeline.harness.scoring import score_chosen

    data, _ = score_chosen(target.chosen, bench_file, store=store, strict=strict)
    return {d["id"]: (d["decision"] == "HIT", d["confidence"]) for d in data["decisions"]}


def reference_decisions(bench: Path, bench_file: Path, built: Mapping[str, Target] | None = None,
                        store: Any = None, strict: bool = True) -> dict[str, dict[str, tuple[bool, float | None]]]:
    """Every REPORTED reference's decisions on `bench_file` (those in `built` are not built again)."""
    out = {}
    for name in REPORTED:
        target = (built or {}).get(name) or resolve(name, bench)
        out[name] = decisions(target, bench_file, store, strict)
    return out


def difficulty(pairs: Sequence[tuple[str, str]], bench_dir: Path, cache_root: Path,
               progress=None, workers: int | None = None) -> list[tuple[str, dict[str, bool]]]:
    """(difficulty, votes) of MISS pairs (query_a, query_b) on the main build's scale: the five
    members' thresholds calibrated on the main benchmark's train split. `workers`: the processes
    that embed the texts the cache lacks (default: the process's settings)."""
    import numpy as np

    from pipeline.stages.difficulty import difficulty_from_votes, f1_threshold
    from pipeline.services.embed_cache import EmbeddingCache, embed_many
    from pipeline.services.embedders import load_embedders_config
    from pipeline.evolving.slicing import read_rows

    train = read_rows(bench_dir / "splits" / "train.jsonl")
    cfg = load_embedders_config()
    texts = ([r["query_a"] for r in train] + [a for a, _ in pairs] + [r["query_b"] for r in train]
             + [b for _, b in pairs])
    cache = EmbeddingCache(cache_root / "embeddings.sqlite")
    try:
        vecs, _ = embed_many({m: texts for m in cfg.members}, cfg.specs, cache, cache_root, progress=progress,
                             workers=workers)
    finally:
        cache.close()
    half = len(train) + len(pairs)
    gold = [r["binary_label"] == "HIT" for r in train]
    votes = [dict() for _ in pairs]
    for m in cfg.members:
        sims = [round(float(x), 6) for x in np.sum(vecs[m][:half] * vecs[m][half:], axis=1)]
        t = f1_threshold(sims[:len(train)], gold)["threshold"]
        for i, s in enumerate(sims[len(train):]):
            votes[i][m] = not s >= t   # every candidate is a MISS: a member is right when it misses
    return [(difficulty_from_votes(sum(v.values())), dict(sorted(v.items()))) for v in votes]


def grade(rows: Sequence[Mapping[str, Any]], bench_dir: Path, cache_root: Path, progress=None,
          workers: int | None = None) -> list[dict]:
    """Copies of candidate rows (difficulty None) with their difficulty and the members' votes filled
    in, as `difficulty` grades them; every key stays where the row had it, so a graded row has the
    bytes of one assembled with its grade."""
    grades = difficulty([(r["query_a"], r["query_b"]) for r in rows], bench_dir, cache_root, progress, workers)
    return [{**r, "difficulty": d, "provenance": {**r["provenance"], "difficulty_votes": votes}}
            for r, (d, votes) in zip(rows, grades)]
