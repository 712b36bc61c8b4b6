"""Byte-stable writer: plain types only, schema key order, sorted ids, atomic files with the modes
open() would give."""
import json
import os
import stat

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


def test_atomic_write_gives_a_new_file_the_mode_open_would(tmp_path):
    # mkstemp creates 0600; a written output must be readable like any file the user creates
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.jsonl", b"x\n")
        os.umask(0o077)
        atomic_write(tmp_path / "private.jsonl", b"x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.jsonl").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "private.jsonl").stat().st_mode) == 0o600


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_folder_that_cannot_take_files_is_named_with_the_reason(tmp_path):
    from pipeline.core.writer import folder_problem

    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert folder_problem(tmp_path / "new" / "deeper", 1) is None and not (tmp_path / "new").exists()
    assert folder_problem(tmp_path / "file", 1) == "is a file, not a folder"
    assert folder_problem(tmp_path / "file" / "sub", 1) == f"{tmp_path / 'file'} is a file, not a folder"
    assert folder_problem(tmp_path, 10**9).startswith("has ") and "under the 1000000000 MB this needs" in \
        folder_problem(tmp_path, 10**9)
    assert list(tmp_path.iterdir()) == [tmp_path / "file"]  # the probe leaves nothing behind
