"""Berkeley Function Calling Leaderboard v4.

Layout (upstream `bfcl_eval/data/`): `BFCL_v4_<category>.json` question files,
`possible_answer/BFCL_v4_<category>.json` ground truth, `multi_turn_func_doc/<api>.json` function
docs for the multi-turn/agentic categories. Despite the `.json` suffix these are JSON Lines,
except `BFCL_v4_format_sensitivity.json`, ONE JSON object {category: [ids]} naming entries reused
by the format-sensitivity test: it is read with the json module (`datasets` would make it a single
row) and marks those records `format_sensitivity=True`. Split = category.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from sources.base import Loader, ToolRecord, bad
from sources.read import Reader, field, files_matching

LICENCE = "Apache-2.0"
FORMAT_FILE = "BFCL_v4_format_sensitivity.json"
_QUESTION = re.compile(r"^BFCL_v4_(\w+)\.json$")
# Which function-doc file serves each involved class (upstream MULTI_TURN_FUNC_DOC_FILE_MAPPING;
# MemoryAPI has three backends upstream, we document the key-value one).
FUNC_DOCS = {
    "GorillaFileSystem": "gorilla_file_system.json", "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json", "TwitterAPI": "posting_api.json", "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json", "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json", "WebSearchAPI": "web_search.json",
    "MemoryAPI": "memory_kv.json",
}


def files(root: Path) -> list[str]:
    """Question, ground-truth and the function-doc files we read (the other memory backends'
    docs, memory_vector.json and memory_rec_sum.json, are not inputs)."""
    docs = [f"multi_turn_func_doc/{name}" for name in sorted(set(FUNC_DOCS.values()))]
    return files_matching(root, ["BFCL_v4_*.json", "possible_answer/BFCL_v4_*.json", *docs])


def _docs(reader: Reader, present: list[str], classes: tuple[str, ...], path: Path, where: str) -> list[dict]:
    out: list[dict] = []
    for cls in classes:
        rel = f"multi_turn_func_doc/{FUNC_DOCS.get(cls, '?')}"
        if cls not in FUNC_DOCS or rel not in present:
            raise bad(path, where, f"involved class {cls!r} has no function doc ({rel})",
                      "Copy the upstream multi_turn_func_doc/ folder in")
        out += [row for _, row in _cached_jsonl(reader, rel)]
    return out


def _cached_jsonl(reader: Reader, rel: str) -> list[tuple[str, dict]]:
    cache = reader.__dict__.setdefault("_bfcl_docs", {})
    if rel not in cache:
        cache[rel] = reader.jsonl(rel)
    return cache[rel]


def _turns(path: Path, where: str, question: Any) -> tuple[tuple[dict[str, str], ...], ...]:
    if not isinstance(question, list) or not all(isinstance(t, list) for t in question):
        raise bad(path, where, "'question' must be a list of turns, each a list of {role, content}",
                  "Use the upstream file unchanged")
    turns = []
    for turn in question:
        msgs = []
        for m in turn:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                raise bad(path, where, "a question message lacks string 'role' and 'content'", "Use the upstream file unchanged")
            msgs.append({"role": m["role"], "content": m["content"]})
        turns.append(tuple(msgs))
    return tuple(turns)


def _ground_truth(reader: Reader, rel: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    path = reader.path(rel)
    for where, row in reader.jsonl(rel):
        rid = field(path, where, row, "id", nonempty=True)
        if rid in out:
            raise bad(path, where, f"duplicate id '{rid}'", "Each id must appear once")
        if "ground_truth" not in row:
            raise bad(path, where, "missing field 'ground_truth'", "Every possible_answer row needs 'ground_truth'")
        out[rid] = row["ground_truth"]
    return out


def _format_ids(reader: Reader) -> set[str]:
    path = reader.path(FORMAT_FILE)
    data = reader.json_value(FORMAT_FILE)
    if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(i, str) for i in v)
                                             for v in data.values()):
        raise bad(path, "file", "wrong JSON type: expected ONE object {category: [ids]}",
                  "This file is a single JSON object, not JSON Lines; use the upstream file")
    return {i for ids in data.values() for i in ids}


def read(reader: Reader) -> Iterator[ToolRecord]:
    present = files(reader.root)
    questions = [f for f in present if "/" not in f and f != FORMAT_FILE]
    if not questions:
        raise bad(reader.root, "file", "no BFCL_v4_<category>.json question file", "Copy bfcl_eval/data/ in")
    fmt_ids = _format_ids(reader) if FORMAT_FILE in present else set()
    seen: set[str] = set()
    for rel in questions:
        category = _QUESTION.match(rel).group(1)
        path = reader.path(rel)
        answer_rel = f"possible_answer/{rel}"
        truth = _ground_truth(reader, answer_rel) if answer_rel in present else None
        for where, row in reader.jsonl(rel):
            rid = field(path, where, row, "id", nonempty=True)
            turns = _turns(path, where, row.get("question"))
            classes = tuple(field(path, where, row, "involved_classes", list, required=False) or ())
            functions = field(path, where, row, "function", list, required=False)
            if functions is None:
                excluded = set(row.get("excluded_function") or ())
                functions = [f for f in _docs(reader, present, classes, path, where) if f.get("name") not in excluded]
            for f in functions:
                if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not isinstance(f.get("parameters"), dict):
                    raise bad(path, where, "a function schema lacks 'name' or 'parameters'", "Use the upstream file unchanged")
            if truth is not None and rid not in truth:
                raise bad(path, where, f"id '{rid}' has no entry in {answer_rel}", "Restore the matching possible_answer file")
            seen.add(rid)
            first_user = next((m["content"] for t in turns for m in t if m["role"] == "user"), "")
            yield ToolRecord("bfcl", category, rid, rel, LICENCE, text=first_user, question=turns,
                             functions=tuple(functions), ground_truth=None if truth is None else truth[rid],
                             involved_classes=classes, format_sensitivity=rid in fmt_ids)


LOADER = Loader("bfcl", "Berkeley Function Calling Leaderboard v4", LICENCE,
                "BFCL_v4_<category>.json (JSON Lines), possible_answer/, multi_turn_func_doc/, "
                "BFCL_v4_format_sensitivity.json (one object)", files, read,
                commercial=True, real_traffic=False)
