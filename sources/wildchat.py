"""WildChat-1M: parquet shards (`train-*.parquet`, optionally under `data/`) with the upstream
schema conversation_hash, model, timestamp, conversation [{role, content, ...}], turn, language,
toxic, redacted, ... Tested on fixtures only (the raw corpus is not in ../shared/datasets)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from sources.base import Loader, PromptRecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "ODC-BY-1.0 (WildChat-1M, AI2)"
COLUMNS = ("conversation_hash", "model", "timestamp", "conversation", "turn", "language", "toxic", "redacted")
ROLES = ("user", "assistant")


def files(root: Path) -> list[str]:
    return files_matching(root, ["*.parquet", "data/*.parquet"])


def _iso(path: Path, where: str, value: object) -> str:
    if not isinstance(value, datetime):
        raise bad(path, where, f"'timestamp' is {type(value).__name__}, expected a timestamp", "Use the upstream schema")
    # Naive timestamps are UTC upstream; render one fixed form whatever the machine's time zone.
    value = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()


def read(reader: Reader) -> Iterator[PromptRecord]:
    present = files(reader.root)
    if not present:
        raise bad(reader.root, "file", "no *.parquet shard", "Copy WildChat-1M data/train-*.parquet in")
    for rel in present:
        path = reader.path(rel)
        split = Path(rel).name.split("-")[0]
        for i, row in enumerate(reader.parquet(rel, COLUMNS)):
            where = f"record {i}"
            turns = []
            for m in field(path, where, row, "conversation", list):
                if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
                    raise bad(path, where, f"a conversation turn has role {m.get('role') if isinstance(m, dict) else m!r}",
                              "Turns are {role: user|assistant, content}")
                turns.append((m["role"], m["content"]))
            text = next((c for r, c in turns if r == "user"), None)
            if text is None:
                raise bad(path, where, "conversation has no user turn", "Each WildChat conversation starts with a user turn")
            yield PromptRecord("wildchat", split, field(path, where, row, "conversation_hash", nonempty=True), rel,
                               LICENCE, text=text, conversation=tuple(turns), language=field(path, where, row, "language"),
                               model=field(path, where, row, "model"), timestamp=_iso(path, where, row.get("timestamp")),
                               turn=field(path, where, row, "turn", int), toxic=field(path, where, row, "toxic", bool),
                               redacted=field(path, where, row, "redacted", bool))


LOADER = Loader("wildchat", "WildChat-1M", LICENCE, "train-*.parquet (upstream schema)", files, read,
                commercial=True, real_traffic=True)
