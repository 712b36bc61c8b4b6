"""The yield of the LM generation tasks run in this process, per domain, for the build's asset
metadata (assets/generation.py attaches it to each domain's candidate_rows partition).

Each task records, when it ran: the model snapshot, seeds tried, prompts sent, non-empty outputs,
candidates kept and drops by reason. `clear(domain)` before a domain's generators run, `of(domain)`
after: {task: record}. A task that did not run (no model, not in the build yet) records nothing.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping

_RUNS: dict[str, dict[str, dict]] = {}


def record(domain: str, task: str, model: str, *, seeds: int, sent: int, outputs: int, kept: int,
           drops: Mapping[str, int]) -> None:
    """Keep what one task did for one domain (the last run of each task wins)."""
    _RUNS.setdefault(domain, {})[task] = {"model": model, "seeds": seeds, "sent": sent, "outputs": outputs,
                                          "kept": kept, "drops": dict(sorted(Counter(drops).items()))}


def clear(domain: str) -> None:
    """Forget the domain's records (before its generators run again)."""
    _RUNS.pop(domain, None)


def of(domain: str) -> dict[str, dict]:
    """The domain's records by task; empty when no LM task ran for it."""
    return {task: dict(rec) for task, rec in sorted(_RUNS.get(domain, {}).items())}
