"""MASSIVE 1.1 (Amazon): one JSON Lines file per locale, `<locale>.jsonl` (full) or
`<locale>.partial.jsonl` (a subset), rows parallel across locales by `id`. `annot_utt` marks slots
as `[slot : value]`; we parse it into the canonical `(intent, {slot: value})` and check that
removing the marks gives back `utt`. The `de-DE_superGLEBer/` re-split (no ids, integer intent
labels) is a different format and is not read."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from sources.base import IntentRecord, Loader, bad
from sources.read import Reader, field, files_matching

LICENCE = "CC-BY-4.0"
PARTITIONS = ("train", "dev", "test")
_SLOT = re.compile(r"\[([^\[\]:]+?) : ([^\[\]]*?)\]")
_LOCALE = re.compile(r"^[a-z]{2,3}-[A-Z]{2}$")


def files(root: Path) -> list[str]:
    return files_matching(root, ["*.jsonl"])


def parse_annot(annot: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """`wake me at [time : five am]` -> (`wake me at five am`, (("time", "five am"),))."""
    slots = tuple((m.group(1).strip(), m.group(2).strip()) for m in _SLOT.finditer(annot))
    return _SLOT.sub(lambda m: m.group(2), annot), slots


def read(reader: Reader) -> Iterator[IntentRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no <locale>.jsonl file", "Copy upstream 1.1/data/<locale>.jsonl files in")
    for rel in present:
        locale = rel.split(".")[0]
        path = reader.path(rel)
        if not _LOCALE.match(locale):
            raise bad(path, "file", f"file name does not start with a locale like en-US", "Name files <locale>.jsonl")
        for where, row in reader.jsonl(rel):
            rid = field(path, where, row, "id", nonempty=True)
            if field(path, where, row, "locale") != locale:
                raise bad(path, where, f"locale {row['locale']!r} in a file named for {locale}", "Keep one locale per file")
            part = field(path, where, row, "partition")
            if part not in PARTITIONS:
                raise bad(path, where, f"unknown partition value {part!r}", "Use train, dev or test")
            utt = field(path, where, row, "utt", nonempty=True)
            annot = field(path, where, row, "annot_utt", nonempty=True)
            plain, slots = parse_annot(annot)
            if plain != utt or "[" in plain or "]" in plain:
                raise bad(path, where, f"annot_utt {annot!r} does not match utt {utt!r}",
                          "Mark slots as [slot : value] around the exact words of utt")
            yield IntentRecord("massive", part, f"{locale}/{rid}", rel, LICENCE, text=utt,
                               intent=field(path, where, row, "intent", nonempty=True), slots=slots,
                               locale=locale, parallel_id=rid, scenario=field(path, where, row, "scenario"))


LOADER = Loader("massive", "MASSIVE 1.1", LICENCE, "<locale>.jsonl or <locale>.partial.jsonl (upstream 1.1/data rows)",
                files, read,
                commercial=True, real_traffic=False)
