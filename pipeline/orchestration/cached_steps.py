"""The build's expensive steps through the step cache (pipeline/orchestration/step_cache.py): what
each one's key holds besides the code, and the step run for real on any miss.

- `generate`: one domain's generators (domains.check.generate) on a generation context: the domain,
  the context's fields (profile, need, mined pairs) and the language model's identity (replay: its
  provider, model snapshot and the replay file's sha256; none). A datasets dir, or a language model
  that answers from a live store, is not cached (its contents are not in the key): it runs.
- `verify`: candidates through their verifiers (domains.check.verify_candidates): the candidates.
  Both also hold what runs a candidate's code (`sandbox_identity`: Node and the jail).
- `prepared_shard`: one real-traffic shard scrubbed, signed and MiniLM-embedded (mining's first
  step): the shard's name and the sha256 of every file of its corpus (a loader reads the whole
  corpus; a record's id can depend on its other files), with the models.
- `pair_shards`: mining's second step (domains.corpora.mining.pair: duplicates, MinHash/LSH, ANN,
  follow-ups, rules, routes and guard over every shard): the prepared shards themselves, in order
  (their fingerprint holds every turn, signature and vector), with the models.
- `corpus_extract`: the extract a datasets dir makes (assets/sources.py: extract_from): the mined
  pairs and the sha256 of every file of every corpus present, with the models.
- `embedded`: a step whose result depends on embeddings (similarities, reports that score the
  reference caches, the slice's scoring): its inputs plus every configured model's snapshot.
"""
from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from pipeline.orchestration.step_cache import StepCache, fingerprint, model_snapshots

T = TypeVar("T")


def llm_identity(llm: Any) -> dict | None:
    """What a generator's language model answers from, or None when that is a live store (uncached)."""
    if llm is None:
        return {"mode": "none"}
    if getattr(llm, "mode", None) != "replay":
        return None
    from pipeline.core.hashing import file_sha256
    from pipeline.services.llm.replay import REPLAY_FILE

    return {"mode": "replay", "provider": str(getattr(llm, "name", "")),
            "model_snapshot": fingerprint(getattr(llm, "model_snapshot", None)),
            "replay_sha256": file_sha256(REPLAY_FILE) if REPLAY_FILE.is_file() else None}


@functools.lru_cache(maxsize=1)
def sandbox_identity() -> dict[str, str]:
    """What runs a candidate's code besides the project (domains/verify/sandbox.py keys its verdicts on
    the same): Node's path and version, and the jail's (bwrap's version, the user mode)."""
    import os
    import shutil
    import subprocess

    from domains.verify import isolation

    node = shutil.which("node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout.strip() if node else ""
    return {"node": f"{os.path.realpath(node) if node else ''} {version}", "jail": isolation.identity()}


def generate(cache_root: Path, domain: str, ctx: Any) -> tuple[list, Counter]:
    """domains.check.generate(domain, ctx), from the step cache where its key allows (see above);
    the domain's LM yield records (metadata) are kept with the result and restored on a hit."""
    from domains.check import generate as run
    from domains.lm import yields

    llm = llm_identity(ctx.llm)
    if ctx.datasets is not None or llm is None:
        return run(domain, ctx)

    def compute():
        made, drops = run(domain, ctx)
        return list(made), dict(drops), yields.of(domain)

    made, drops, lm = StepCache(cache_root).run(
        "generate", lambda: {"domain": domain, "context": fingerprint(dataclasses.replace(ctx, llm=None, extract=getattr(ctx.extract, "sha256", None))), "llm": llm,
                           "sandbox": sandbox_identity()},
        compute)
    for task, rec in lm.items():
        yields.record(domain, task, rec["model"], seeds=rec["seeds"], sent=rec["sent"], outputs=rec["outputs"],
                      kept=rec["kept"], drops=rec["drops"])
    return list(made), Counter(drops)


def verify(cache_root: Path, candidates: list) -> tuple[list, Counter]:
    """domains.check.verify_candidates(candidates), from the step cache when the same candidates
    were verified by the same code."""
    from domains.check import verify_candidates

    def compute():
        kept, drops = verify_candidates(list(candidates))
        return kept, dict(drops)

    kept, drops = StepCache(cache_root).run("verify", lambda: {"candidates": fingerprint(list(candidates)),
                                                                "sandbox": sandbox_identity()}, compute)
    return kept, Counter(drops)


def embedded(cache_root: Path, step: str, inputs: Callable[[], Mapping[str, Any]], compute: Callable[[], T]) -> T:
    """`compute()` through the step cache, keyed on `inputs()` and every configured model's snapshot."""
    return StepCache(cache_root).run(step, lambda: {**inputs(), "models": model_snapshots(cache_root)}, compute)


def prepared_shard(cache_root: Path, datasets: Any, shard: str) -> Any:
    """domains.corpora.mining.prepare_shard(datasets, shard), from the step cache when the shard's
    corpus files are the same bytes (see above)."""
    from domains.corpora.mining import prepare_shard

    corpus = shard.partition("/")[0]
    return embedded(cache_root, "prepare_shard", lambda: {"shard": shard, "corpus_files": datasets.inventory([corpus])},
                    lambda: prepare_shard(datasets, shard, cache_dir=cache_root))


def paired_shards(cache_root: Path, parts: list) -> Any:
    """domains.corpora.mining.pair(parts), from the step cache when the prepared shards are the same
    values in the same order (see above)."""
    from domains.corpora.mining import pair

    return embedded(cache_root, "pair_shards", lambda: {"parts": fingerprint(parts)}, lambda: pair(parts))


def corpus_extract(cache_root: Path, datasets: Any, mined: Any, compute: Callable[[], T]) -> T:
    """compute() (the extract a datasets dir makes from it and its mined pairs), from the step cache
    when the mined pairs and every corpus file are the same."""
    return embedded(cache_root, "corpus_extract", lambda: {"mined": fingerprint(mined), "corpus_files": datasets.inventory()},
                    compute)
