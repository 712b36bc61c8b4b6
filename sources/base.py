"""Record types every corpus loader yields, the `Loader` description, and the error helper.

Records are frozen dataclasses. Each carries `corpus`, `split`, `record_id` (unique per
(corpus, split)), `source_file` (path relative to the corpus folder) and `licence`. Nested JSON
(BFCL schemas, ground truth) is kept as plain Python objects: the record cannot be rebound, but
such a record is not hashable.

Standard library only: importing `sources` must stay light (Hugging Face `datasets` is imported
inside `sources.read` when a corpus is actually read).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from pipeline.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from sources.read import Reader


@dataclass(frozen=True)
class Record:
    """Fields shared by every record."""

    corpus: str
    split: str
    record_id: str
    source_file: str
    licence: str


@dataclass(frozen=True)
class IntentRecord(Record):
    """An utterance with its intent (BANKING77, MASSIVE). `slots` keeps every `(slot, value)` in
    utterance order (MASSIVE repeats a slot in ~3% of utterances, e.g. two `place_name`s)."""

    text: str
    intent: str
    slots: tuple[tuple[str, str], ...] = ()
    locale: str = "en-US"
    parallel_id: str | None = None
    scenario: str | None = None

    def canonical(self) -> tuple[str, dict[str, str | tuple[str, ...]]]:
        """The canonical frame `(intent, {slot: value})`; a slot that occurs more than once maps
        to the tuple of its values in utterance order."""
        values: dict[str, list[str]] = {}
        for slot, value in self.slots:
            values.setdefault(slot, []).append(value)
        frame = {s: (v[0] if len(v) == 1 else tuple(v)) for s, v in sorted(values.items())}
        return self.intent, frame


@dataclass(frozen=True)
class PairRecord(Record):
    """A sentence pair with an integer label (1 = paraphrase / duplicate)."""

    text_a: str
    text_b: str
    label: int
    language: str = "en"


@dataclass(frozen=True)
class QARecord(Record):
    """A question with its accepted answers. `qa_pairs` holds AmbigQA's disambiguated
    (question, answers) pairs; `parallel_id` links XQuAD questions across languages."""

    question: str
    answers: tuple[str, ...]
    qa_pairs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    language: str = "en"
    parallel_id: str | None = None
    context: str | None = None

    @property
    def ambiguous(self) -> bool:
        return bool(self.qa_pairs)


@dataclass(frozen=True)
class ToolRecord(Record):
    """A BFCL entry: the question turns (each a tuple of `{role, content}` messages), the function
    schemas offered, and the `possible_answer` ground truth (None where BFCL has none, e.g. the
    irrelevance categories, whose right answer is to call nothing)."""

    text: str
    question: tuple[tuple[dict[str, str], ...], ...]
    functions: tuple[dict[str, Any], ...]
    ground_truth: Any = None
    involved_classes: tuple[str, ...] = ()
    format_sensitivity: bool = False


@dataclass(frozen=True)
class PromptRecord(Record):
    """A real user prompt: `text` is the first user turn; `conversation` every (role, content)."""

    text: str
    conversation: tuple[tuple[str, str], ...] = ()
    language: str | None = None
    category: str | None = None
    subcategory: str | None = None
    model: str | None = None
    timestamp: str | None = None
    turn: int | None = None
    toxic: bool | None = None
    redacted: bool | None = None


@dataclass(frozen=True)
class Loader:
    """One upstream corpus: its folder name under the datasets dir, its licence, how to find its
    files (relative paths, sorted) and how to read them into records.

    `commercial` and `real_traffic` are declared by each loader (keyword-only, no default):
    `commercial` says whether its licence allows commercial use (`--commercial-only` keeps only
    such rows; domains.corpora.licences derives its table from it), `real_traffic` whether it holds
    real user prompts (the corpora domains.corpora.mining mines)."""

    name: str
    title: str
    licence: str
    layout: str  # one line: which files the folder holds, in upstream names
    files: Callable[[Path], list[str]]
    read: Callable[["Reader"], Iterable[Record]]
    commercial: bool = field(kw_only=True)
    real_traffic: bool = field(kw_only=True)

    def load(self, reader: "Reader") -> Iterator[Record]:
        """Every record of the corpus, sorted by (split, natural record id); duplicate ids are an
        error."""
        records = list(self.read(reader))
        records.sort(key=lambda r: (r.split, natural_key(r.record_id)))
        for prev, cur in zip(records, records[1:]):
            if (prev.split, prev.record_id) == (cur.split, cur.record_id):
                raise bad(reader.root / cur.source_file, "record " + cur.record_id,
                          f"duplicate id '{cur.record_id}' in split '{cur.split}'",
                          "Each record id must be unique within its split; remove the repeated record")
        return iter(records)


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders `x_2` before `x_10`; digit runs compare as numbers."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _DIGITS.split(text) if p)


def bad(path: Path | str, where: str, problem: str, fix: str) -> InputError:
    """The one-line input error `<file>:<line N | record R | file>: <problem>. <how to fix>`."""
    problem = " ".join(str(problem).split())
    return InputError(f"{path}:{where}: {problem.rstrip('.')}. {fix.rstrip('.')}.")
