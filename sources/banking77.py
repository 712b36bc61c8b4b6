"""BANKING77 (PolyAI): `train.csv` and `test.csv` with header `text,category` (quoted fields may
hold newlines, CRLF line ends), and `categories.json`, the list of the 77 intent names."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from sources.base import IntentRecord, Loader, bad
from sources.read import Reader, field, files_matching

LICENCE = "CC-BY-4.0"
SPLITS = ("train", "test")


def files(root: Path) -> list[str]:
    return files_matching(root, [f"{s}.csv" for s in SPLITS] + ["categories.json"])


def read(reader: Reader) -> Iterator[IntentRecord]:
    present = files(reader.root)
    if not any(f.endswith(".csv") for f in present):
        raise bad(reader.root, "file", "no train.csv or test.csv", "Copy the upstream banking_data/*.csv files in")
    intents: set[str] | None = None
    if "categories.json" in present:
        cats = reader.json_value("categories.json")
        if not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
            raise bad(reader.path("categories.json"), "file", "wrong JSON type: expected an array of intent names",
                      "Use the upstream categories.json")
        intents = set(cats)
    for split in SPLITS:
        rel = f"{split}.csv"
        if rel not in present:
            continue
        path = reader.path(rel)
        for n, (where, row) in enumerate(reader.table(rel, ("text", "category"), sep=",", header=True, quoted=True), 1):
            text = field(path, where, row, "text", nonempty=True)
            intent = field(path, where, row, "category", nonempty=True)
            if intents is not None and intent not in intents:
                raise bad(path, where, f"unknown label value {intent!r} (not in categories.json)",
                          "Use one of the 77 upstream intent names")
            # Upstream rows have no id: the 1-based record number within the split is stable.
            yield IntentRecord("banking77", split, f"{split}-{n}", rel, LICENCE, text=text, intent=intent)


LOADER = Loader("banking77", "BANKING77", LICENCE, "train.csv, test.csv (header text,category), categories.json",
                files, read,
                commercial=True, real_traffic=False)
