"""PAWS-X: `<lang>_<split>.tsv` with header id, sentence1, sentence2, label (German here)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from sources._pairs import read_paws_tsv
from sources.base import Loader, PairRecord, bad
from sources.read import Reader, files_matching

LICENCE = "PAWS-X (Google): free for any use, acknowledge Google LLC"
_NAME = re.compile(r"^([a-z]{2})_(train|dev|test)\.tsv$")


def files(root: Path) -> list[str]:
    return [f for f in files_matching(root, ["*.tsv"]) if _NAME.match(f)]


def read(reader: Reader) -> Iterator[PairRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no <lang>_<split>.tsv file", "Copy PAWS-X <lang>/{dev,test}.tsv in as <lang>_<split>.tsv")
    for rel in present:
        lang, split = _NAME.match(rel).groups()
        # Split is language-qualified so that de and fr dev ids (the same numbers) stay distinct.
        yield from read_paws_tsv(reader, rel, "paws_x", LICENCE, f"{lang}/{split}", lang, header=True)


LOADER = Loader("paws_x", "PAWS-X", LICENCE, "<lang>_{dev,test}.tsv (header id sentence1 sentence2 label)", files, read,
                commercial=True, real_traffic=False)
