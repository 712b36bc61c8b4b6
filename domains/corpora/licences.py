"""Corpus licences and the `--commercial-only` filter.

Every corpus row carries its corpus's licence string (set by the loader in sources/, copied into
Candidate.licence); `source` names the corpus. COMMERCIAL says, per source, whether its licence
allows commercial use. Unknown sources count as non-commercial: a row is only kept under
`--commercial-only` when every source it names is known to allow it.
"""
from __future__ import annotations

import re

from domains.base import Candidate

# source -> (licence as stated, commercial use allowed)
LICENCES: dict[str, tuple[str, bool]] = {
    "curated": ("CC-BY-4.0 (CacheEval curated)", True),
    "banking77": ("CC-BY-4.0", True),
    "massive": ("CC-BY-4.0", True),
    "bfcl": ("Apache-2.0", True),
    "paws": ("PAWS (Google): free for any use, acknowledge Google LLC", True),
    "paws_x": ("PAWS-X (Google): free for any use, acknowledge Google LLC", True),
    "ambigqa": ("CC-BY-SA-3.0", True),
    "xquad": ("CC-BY-SA-4.0", True),
    "lmsys_arena": ("Apache-2.0", True),
    "wildchat": ("ODC-BY-1.0", True),
    "qqp": ("Quora's release terms (non-commercial, not an open licence)", False),
    "mrpc": ("Microsoft Research terms (not an open licence)", False),
    "sharegpt": ("none stated (scraped ChatGPT conversations)", False),
    "triviaqa": ("TriviaQA terms (research use)", False),
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
