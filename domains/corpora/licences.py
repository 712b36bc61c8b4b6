"""Corpus licences and the `--commercial-only` filter.

Every corpus row carries its corpus's licence string (set by the loader in sources/, copied into
Candidate.licence); `source` names the corpus. LICENCES says, per source, the licence as stated and
whether it allows commercial use. For a corpus both come from its loader (`Loader.licence`,
`Loader.commercial`): the loader is the one place they are written. Unknown sources count as
non-commercial: a row is only kept under `--commercial-only` when every source it names is known
to allow it.
"""
from __future__ import annotations

import re
from dataclasses import fields

from domains.base import Candidate
from sources.registry import LOADERS

# The team's own seed material: its licence is the one a Candidate carries unless a corpus sets another.
CURATED_LICENCE: str = next(f.default for f in fields(Candidate) if f.name == "licence")
# source -> (licence as stated, commercial use allowed)
LICENCES: dict[str, tuple[str, bool]] = {
    "curated": (CURATED_LICENCE, True),
    **{name: (LOADERS[name].licence, LOADERS[name].commercial) for name in LOADERS},
}
# An LM-generated row's source is "lm:<model>": its text is the model's output on seeds whose licence
# the row's `licence` field carries. model -> (licence of its outputs, commercial use allowed)
MODEL_LICENCES: dict[str, tuple[str, bool]] = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": ("Apache-2.0", True),
}
_SPLIT = re.compile(r"[^a-z0-9_]+")


def sources_of(c: Candidate) -> list[str]:
    """The corpus names a candidate's `source` holds (a mined row may name several, e.g. 'a+b')."""
    return [s for s in _SPLIT.split(c.source.lower()) if s]


def commercial_ok(c: Candidate) -> bool:
    """True when every source of the candidate is known to allow commercial use. For an LM row: the
    model's licence allows it and the seeds' licence (the row's `licence`) is one that does."""
    if c.source.startswith("lm:"):
        model_ok = MODEL_LICENCES.get(c.source[3:], ("", False))[1]
        return model_ok and any(ok and c.licence == text for text, ok in LICENCES.values())
    names = sources_of(c)
    return bool(names) and all(LICENCES.get(n, ("", False))[1] for n in names)
