"""AmbigNQ light: `<split>_light.json`, a JSON array of {id, question, annotations}; each
annotation is {type: singleAnswer, answer: [...]} or {type: multipleQAs, qaPairs: [{question,
answer: [...]}]}. `answers` unions the single-answer annotations; `qa_pairs` keeps the
disambiguated questions."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from sources.base import Loader, QARecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "CC-BY-SA-3.0"
SPLITS = ("train", "dev")


def files(root: Path) -> list[str]:
    return files_matching(root, [f"{s}_light.json" for s in SPLITS])


def _strings(path: Path, where: str, value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad(path, where, f"'{name}' must be a list of strings", "Use the upstream file unchanged")
    return tuple(value)


def read(reader: Reader) -> Iterator[QARecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no train_light.json or dev_light.json", "Copy the AmbigNQ light files in")
    for rel in present:
        split = rel.split("_")[0]
        path = reader.path(rel)
        for i, row in enumerate(reader.json_records(rel)):
            where = f"record {i}"
            rid = field(path, where, row, "id", nonempty=True)
            answers: list[str] = []
            pairs: list[tuple[str, tuple[str, ...]]] = []
            for ann in field(path, where, row, "annotations", list):
                kind = ann.get("type") if isinstance(ann, dict) else None
                if kind == "singleAnswer":
                    answers += [a for a in _strings(path, where, ann.get("answer"), "answer") if a not in answers]
                elif kind == "multipleQAs":
                    for qa in ann.get("qaPairs") or []:
                        q = field(path, where, qa, "question", nonempty=True)
                        pairs.append((q, _strings(path, where, qa.get("answer"), "qaPairs.answer")))
                else:
                    raise bad(path, where, f"unknown annotation type {kind!r}", "Use singleAnswer or multipleQAs")
            yield QARecord("ambigqa", split, rid, rel, LICENCE, question=field(path, where, row, "question", nonempty=True),
                           answers=tuple(answers), qa_pairs=tuple(pairs))


LOADER = Loader("ambigqa", "AmbigNQ (light)", LICENCE, "{train,dev}_light.json (JSON array)", files, read,
                commercial=True, real_traffic=False)
