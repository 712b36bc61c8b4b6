"""ShareGPT in FastChat format: `*.json`, a JSON array [{id, conversations: [{from, value}]}].
`text` is the first human turn ("" when there is none: 21 of the 3,478 upstream rows hold only
a system or gpt turn, or an empty one; consumers skip empty texts). Split = the file stem.

Two quirks of the upstream ShareGPT V3 file are handled by a fixed rule, counted per file in the
manifest (`cacheeval sources` and the build manifest report them), never dropped silently:
- a conversation with no turns at all carries nothing to mine: it is skipped and counted
  (`empty_conversation`; 126 in the shared 17,671-conversation file);
- an id repeated within a file, after empty conversations are skipped, names a different
  conversation: the first occurrence in file order keeps the id, the n-th becomes `<id>~n`
  (counted as `repeated_id_renamed`). In the shared file each of its 123 repeated ids pairs an
  empty conversation with a non-empty one, so the first rule already resolves them; the count
  `repeated_id_with_empty` says how many of the skipped conversations shared an id.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterator

from sources.base import Loader, PromptRecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "none stated (scraped user-shared ChatGPT conversations; non-commercial research use)"
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bing": "assistant",
         "bard": "assistant", "assistant": "assistant", "system": "system"}
RENAMED_SEP = "~"


def files(root: Path) -> list[str]:
    return files_matching(root, ["*.json"])


def read(reader: Reader) -> Iterator[PromptRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no ShareGPT *.json file", "Copy the ShareGPT JSON file(s) in")
    for rel in present:
        yield from _read_file(reader, rel)


def _read_file(reader: Reader, rel: str) -> Iterator[PromptRecord]:
    path = reader.path(rel)
    rows = reader.json_records(rel)
    ids = [field(path, f"record {i}", row, "id", nonempty=True) for i, row in enumerate(rows)]
    occurrences = Counter(ids)
    seen: Counter[str] = Counter()
    for i, (rid, row) in enumerate(zip(ids, rows)):
        where = f"record {i}"
        turns = []
        for m in field(path, where, row, "conversations", list):
            if not isinstance(m, dict) or not isinstance(m.get("value"), str):
                raise bad(path, where, "a turn lacks a string 'value'", "Turns are {from, value}")
            if m.get("from") not in ROLES:
                raise bad(path, where, f"unknown turn role {m.get('from')!r}", f"Use one of {', '.join(sorted(ROLES))}")
            turns.append((ROLES[m["from"]], m["value"]))
        if not turns:
            reader.count(rel, "empty_conversation")
            if occurrences[rid] > 1:
                reader.count(rel, "repeated_id_with_empty")
            continue
        seen[rid] += 1
        if seen[rid] > 1:
            reader.count(rel, "repeated_id_renamed")
            rid = f"{rid}{RENAMED_SEP}{seen[rid]}"
        text = next((v for r, v in turns if r == "user"), "")
        yield PromptRecord("sharegpt", rel[:-len(".json")], rid, rel, LICENCE, text=text, conversation=tuple(turns))


LOADER = Loader("sharegpt", "ShareGPT (FastChat format)", LICENCE, "*.json (array of {id, conversations})", files, read,
                commercial=False, real_traffic=True)
