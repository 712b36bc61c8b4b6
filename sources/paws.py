"""PAWS-Wiki labeled final (English): `en_final_<split>.tsv`, NO header, CRLF line ends, columns
id, sentence1, sentence2, label. Read with `datasets` csv (pandas C parser treats CRLF as a line
end, so labels never carry a stray "\\r")."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from sources._pairs import read_paws_tsv
from sources.base import Loader, PairRecord, bad
from sources.read import Reader, files_matching

LICENCE = "PAWS (Google): free for any use, acknowledge Google LLC"
SPLITS = ("train", "dev", "test")


def files(root: Path) -> list[str]:
    return files_matching(root, [f"en_final_{s}.tsv" for s in SPLITS])


def read(reader: Reader) -> Iterator[PairRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no en_final_<split>.tsv file", "Copy upstream final/{dev,test}.tsv in as en_final_<split>.tsv")
    for rel in present:
        split = rel[len("en_final_"):-len(".tsv")]
        yield from read_paws_tsv(reader, rel, "paws", LICENCE, split, "en", header=False)


LOADER = Loader("paws", "PAWS-Wiki (English)", LICENCE, "en_final_{train,dev,test}.tsv (no header, CRLF)", files, read,
                commercial=True, real_traffic=False)
