"""Byte-stable writer: plain types only, schema key order, sorted ids, atomic files."""
import json

import numpy as np
import pytest

from pipeline.harness import ROW_FIELDS
from pipeline.core.writer import atomic_write, jsonl_bytes
from pipeline.stages.assembly import ordered_row


def row(i: str) -> dict:
    r = {k: "x" for k in ROW_FIELDS}
    r.update(id=i, context_a=None, verification_payload={"b": 1, "a": "é"})
    return r


def test_rows_sorted_and_fixed_format():
    data = jsonl_bytes([row("cb-math-0002"), row("cb-math-0001")])
    lines = data.decode().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["cb-math-0001", "cb-math-0002"]
    assert '"a":"é"' in lines[0] and ": " not in lines[0]


def test_numpy_scalars_refused():
    r = row("cb-math-0001")
    r["verification_payload"] = {"t": np.float32(0.1)}
    with pytest.raises(TypeError):
        jsonl_bytes([r])


def test_ordered_row_puts_schema_fields_first():
    r = {"licence": "x", **row("cb-math-0001")}
    assert list(ordered_row(r))[:22] == list(ROW_FIELDS) and list(ordered_row(r))[-1] == "licence"


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old")

    class Boom(bytes):
        pass

    with pytest.raises(TypeError):
        atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
