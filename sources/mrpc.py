"""MRPC: `msr_paraphrase_<split>.txt`, TSV with a UTF-8 BOM and NO header; columns Quality, #1 ID,
#2 ID, #1 String, #2 String. Quotes are text (QUOTE_NONE)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from sources.base import Loader, PairRecord, bad
from sources.read import Reader, field, files_matching, label01

LICENCE = "MRPC: Microsoft Research terms (not an open licence)"
COLUMNS = ("quality", "id1", "id2", "string1", "string2")


def files(root: Path) -> list[str]:
    return files_matching(root, ["msr_paraphrase_train.txt", "msr_paraphrase_test.txt"])


def read(reader: Reader) -> Iterator[PairRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no msr_paraphrase_<split>.txt file", "Copy the upstream MRPC files in")
    for rel in present:
        split = rel[len("msr_paraphrase_"):-len(".txt")]
        path = reader.path(rel)
        for where, row in reader.table(rel, COLUMNS, sep="\t", header=False, quoted=False):
            label = label01(path, where, row["quality"])
            id1, id2 = (field(path, where, row, k, nonempty=True).strip() for k in ("id1", "id2"))
            yield PairRecord("mrpc", split, f"{id1}-{id2}", rel, LICENCE,
                             text_a=field(path, where, row, "string1", nonempty=True),
                             text_b=field(path, where, row, "string2", nonempty=True), label=label)


LOADER = Loader("mrpc", "Microsoft Research Paraphrase Corpus", LICENCE,
                "msr_paraphrase_{train,test}.txt (BOM, no header)", files, read,
                commercial=False, real_traffic=False)
