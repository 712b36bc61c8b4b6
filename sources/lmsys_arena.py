"""Chatbot Arena prompts as curated by Arena-Hard: `arena-hard-<version>_question.jsonl`, rows
{uid, category, cluster (v0.1) or subcategory (v2.0), prompt}. Split = the version (`v0.1`)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from sources.base import Loader, PromptRecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "Apache-2.0"
_NAME = re.compile(r"^arena-hard-(v[\d.]+)_question\.jsonl$")


def files(root: Path) -> list[str]:
    return [f for f in files_matching(root, ["*.jsonl"]) if _NAME.match(f)]


def read(reader: Reader) -> Iterator[PromptRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no arena-hard-<version>_question.jsonl file", "Copy the Arena-Hard question files in")
    for rel in present:
        version = _NAME.match(rel).group(1)
        path = reader.path(rel)
        for where, row in reader.jsonl(rel):
            prompt = field(path, where, row, "prompt", nonempty=True)
            sub = field(path, where, row, "subcategory", required=False)
            yield PromptRecord("lmsys_arena", version, field(path, where, row, "uid", nonempty=True), rel, LICENCE,
                               text=prompt, conversation=(("user", prompt),),
                               category=field(path, where, row, "category", nonempty=True),
                               subcategory=sub if sub is not None else field(path, where, row, "cluster", required=False))


LOADER = Loader("lmsys_arena", "Chatbot Arena (Arena-Hard prompts)", LICENCE,
                "arena-hard-<version>_question.jsonl", files, read,
                commercial=True, real_traffic=True)
