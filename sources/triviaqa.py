"""TriviaQA question files in JSON Lines, `triviaqa_<split>*.jsonl`, rows {id (QuestionId),
question, answers: [aliases], question_id}."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from sources.base import Loader, QARecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "TriviaQA terms (data not relicensed by the hosting repo; research use)"
_NAME = re.compile(r"^triviaqa_(train|dev|test)[^/]*\.jsonl$")


def files(root: Path) -> list[str]:
    return [f for f in files_matching(root, ["*.jsonl"]) if _NAME.match(f)]


def read(reader: Reader) -> Iterator[QARecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no triviaqa_<split>*.jsonl file", "Copy the TriviaQA JSONL file in")
    for rel in present:
        split = _NAME.match(rel).group(1)
        path = reader.path(rel)
        for where, row in reader.jsonl(rel):
            aliases = field(path, where, row, "answers", list)
            if not aliases or not all(isinstance(a, str) for a in aliases):
                raise bad(path, where, "'answers' must be a non-empty list of strings", "Use the upstream file unchanged")
            yield QARecord("triviaqa", split, field(path, where, row, "id", nonempty=True), rel, LICENCE,
                           question=field(path, where, row, "question", nonempty=True), answers=tuple(aliases))


LOADER = Loader("triviaqa", "TriviaQA", LICENCE, "triviaqa_<split>*.jsonl ({id, question, answers, question_id})",
                files, read,
                commercial=False, real_traffic=False)
