"""XQuAD: `xquad.<lang>.json`, SQuAD 1.1 JSON {version, data: [{title, paragraphs: [{context, qas:
[{id, question, answers: [{text, answer_start}]}]}]}]}, question ids parallel across languages.
Split = language code (XQuAD is one evaluation set per language)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from sources.base import Loader, QARecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "CC-BY-SA-4.0"
_NAME = re.compile(r"^xquad\.([a-z]{2})\.json$")


def files(root: Path) -> list[str]:
    return [f for f in files_matching(root, ["xquad.*.json"]) if _NAME.match(f)]


def read(reader: Reader) -> Iterator[QARecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no xquad.<lang>.json file", "Copy the upstream xquad.<lang>.json files in")
    for rel in present:
        lang = _NAME.match(rel).group(1)
        path = reader.path(rel)
        for a, article in enumerate(reader.json_records(rel, field="data")):
            for p, para in enumerate(field(path, f"record data[{a}]", article, "paragraphs", list)):
                where = f"record data[{a}].paragraphs[{p}]"
                context = field(path, where, para, "context", nonempty=True)
                for qa in field(path, where, para, "qas", list):
                    qid = field(path, where, qa, "id", nonempty=True)
                    texts = [ans.get("text") for ans in field(path, f"{where} qa {qid}", qa, "answers", list)
                             if isinstance(ans, dict)]
                    if not texts or not all(isinstance(t, str) and t for t in texts):
                        raise bad(path, f"{where} qa {qid}", "answers must be [{text, answer_start}, ...]",
                                  "Use the upstream file unchanged")
                    yield QARecord("xquad", lang, qid, rel, LICENCE,
                                   question=field(path, f"{where} qa {qid}", qa, "question", nonempty=True),
                                   answers=tuple(dict.fromkeys(texts)), language=lang, parallel_id=qid, context=context)


LOADER = Loader("xquad", "XQuAD", LICENCE, "xquad.<lang>.json (SQuAD 1.1 JSON)", files, read,
                commercial=True, real_traffic=False)
