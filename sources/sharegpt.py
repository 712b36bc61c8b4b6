"""ShareGPT in FastChat format: `*.json`, a JSON array [{id, conversations: [{from, value}]}].
`text` is the first human turn ("" when there is none: 21 of the 3,478 upstream rows hold only
a system or gpt turn, or an empty one; consumers skip empty texts). Split = the file stem."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from sources.base import Loader, PromptRecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "none stated (scraped user-shared ChatGPT conversations; non-commercial research use)"
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bing": "assistant",
         "bard": "assistant", "assistant": "assistant", "system": "system"}


def files(root: Path) -> list[str]:
    return files_matching(root, ["*.json"])


def read(reader: Reader) -> Iterator[PromptRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no ShareGPT *.json file", "Copy the ShareGPT JSON file(s) in")
    for rel in present:
        path = reader.path(rel)
        for i, row in enumerate(reader.json_records(rel)):
            where = f"record {i}"
            turns = []
            for m in field(path, where, row, "conversations", list):
                if not isinstance(m, dict) or not isinstance(m.get("value"), str):
                    raise bad(path, where, "a turn lacks a string 'value'", "Turns are {from, value}")
                if m.get("from") not in ROLES:
                    raise bad(path, where, f"unknown turn role {m.get('from')!r}", f"Use one of {', '.join(sorted(ROLES))}")
                turns.append((ROLES[m["from"]], m["value"]))
            text = next((v for r, v in turns if r == "user"), "")
            yield PromptRecord("sharegpt", rel[:-len(".json")], field(path, where, row, "id", nonempty=True), rel,
                               LICENCE, text=text, conversation=tuple(turns))


LOADER = Loader("sharegpt", "ShareGPT (FastChat format)", LICENCE, "*.json (array of {id, conversations})", files, read)
