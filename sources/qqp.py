"""Quora Question Pairs in two upstream forms:
- `glue_pretrain_QQP_<split>.json`: ONE JSON object keyed by string index, values
  {text_a, text_b, label}. `datasets` cannot read this shape as a table (it makes one row with a
  column per key), so it is read with the json module;
- GLUE TSV `<name>.tsv` with header id, qid1, qid2, question1, question2, is_duplicate
  (split = the file stem, e.g. `kshot_16-42_dev`)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from sources.base import Loader, PairRecord, bad
from sources.read import Reader, field, files_matching, label01

LICENCE = "QQP: Quora's release terms (non-commercial, not an open licence)"
GLUE_COLUMNS = ("id", "qid1", "qid2", "question1", "question2", "is_duplicate")
_JSON = re.compile(r"^glue_pretrain_QQP_(\w+)\.json$")


def files(root: Path) -> list[str]:
    return [f for f in files_matching(root, ["*.json", "*.tsv"]) if f.endswith(".tsv") or _JSON.match(f)]


def _read_json(reader: Reader, rel: str) -> Iterator[PairRecord]:
    path = reader.path(rel)
    split = _JSON.match(rel).group(1)
    data = reader.json_value(rel)
    if not isinstance(data, dict):
        raise bad(path, "file", f"wrong JSON type: expected one object keyed by index, got {type(data).__name__}",
                  "Use the upstream glue_pretrain file unchanged")
    for key, row in data.items():
        where = f"record {key}"
        if not isinstance(row, dict):
            raise bad(path, where, "wrong JSON type: expected an object {text_a, text_b, label}", "Use the upstream file unchanged")
        label = field(path, where, row, "label", (str, int))
        yield PairRecord("qqp", split, key, rel, LICENCE, text_a=field(path, where, row, "text_a", nonempty=True),
                         text_b=field(path, where, row, "text_b", nonempty=True), label=label01(path, where, str(label)))


def _read_tsv(reader: Reader, rel: str) -> Iterator[PairRecord]:
    path = reader.path(rel)
    for where, row in reader.table(rel, GLUE_COLUMNS, sep="\t", header=True, quoted=False):
        yield PairRecord("qqp", rel[:-len(".tsv")], field(path, where, row, "id", nonempty=True), rel, LICENCE,
                         text_a=field(path, where, row, "question1", nonempty=True),
                         text_b=field(path, where, row, "question2", nonempty=True),
                         label=label01(path, where, row["is_duplicate"]))


def read(reader: Reader) -> Iterator[PairRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no glue_pretrain_QQP_<split>.json or GLUE .tsv file", "Copy the QQP files in")
    for rel in present:
        yield from (_read_tsv if rel.endswith(".tsv") else _read_json)(reader, rel)


LOADER = Loader("qqp", "Quora Question Pairs (GLUE)", LICENCE,
                "glue_pretrain_QQP_<split>.json (object keyed by index) and/or GLUE-format *.tsv", files, read,
                commercial=False, real_traffic=False)
