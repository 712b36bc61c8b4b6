"""Shared reading for the headerless/headed TSV pair corpora (PAWS, PAWS-X)."""
from __future__ import annotations

from typing import Iterator

from sources.base import PairRecord, bad
from sources.read import Reader, field, label01

PAWS_COLUMNS = ("id", "sentence1", "sentence2", "label")


def read_paws_tsv(reader: Reader, rel: str, corpus: str, licence: str, split: str, language: str,
                  header: bool) -> Iterator[PairRecord]:
    """Rows `id, sentence1, sentence2, label` of one PAWS/PAWS-X TSV (quotes are text)."""
    path = reader.path(rel)
    for where, row in reader.table(rel, PAWS_COLUMNS, sep="\t", header=header, quoted=False):
        rid = field(path, where, row, "id", nonempty=True)
        if not rid.strip().isdigit():
            raise bad(path, where, f"id {rid!r} is not a number",
                      "Columns are id, sentence1, sentence2, label" + ("" if header else " with no header row"))
        yield PairRecord(corpus, split, rid.strip(), rel, licence,
                         text_a=field(path, where, row, "sentence1", nonempty=True),
                         text_b=field(path, where, row, "sentence2", nonempty=True),
                         label=label01(path, where, row["label"]), language=language)
