"""The `datasets` cache of the corpus reader: under the one cache root, and checked before it serves.

Each case reads small fixture corpora (JSON Lines, JSON arrays, TSV, CSV, Parquet) once, damages
every cache folder the read made, and reads again: each damaged folder is one warning line, and the
records equal those of the clean read.
"""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from pipeline.core import settings
from pipeline.core.paths import FIXTURES
from sources.datasets_dir import DatasetsDir
from sources.hf_cache import RECORD

CORPORA = ("massive", "ambigqa", "mrpc", "banking77", "wildchat")  # jsonl, json array, tsv, csv, parquet


@pytest.fixture
def corpora(tmp_path, monkeypatch) -> Path:
    """A datasets dir of fixture corpora, and a cache root of this test's own."""
    root = tmp_path / "datasets"
    for name in CORPORA:
        shutil.copytree(FIXTURES / name, root / name)
    monkeypatch.delenv(settings.HF_DATASETS_CACHE, raising=False)
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "cache"))
    return root


def read_all(root: Path) -> dict[str, list]:
    ddir = DatasetsDir(root)
    return {name: list(ddir.load(name)) for name in CORPORA}


def cache_folders(cache: Path) -> list[Path]:
    """The folders `datasets` made (each holds its dataset_info.json)."""
    return sorted(p.parent for p in cache.rglob("dataset_info.json"))


def datasets_warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "datasets cache" in line]


def test_the_cache_lives_under_the_cache_root_unless_hf_datasets_cache_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv(settings.HF_DATASETS_CACHE, raising=False)
    monkeypatch.setenv(settings.HF_HOME, str(tmp_path / "hf-home"))  # the hub's home, not the corpora's cache
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "root"))
    assert settings.hf_datasets_cache() == tmp_path / "root" / "hf-datasets"
    assert settings.hf_datasets_cache(tmp_path / "chosen") == tmp_path / "chosen" / "hf-datasets"  # --cache-dir
    monkeypatch.setenv(settings.HF_DATASETS_CACHE, str(tmp_path / "own"))
    assert settings.hf_datasets_cache(tmp_path / "chosen") == tmp_path / "own"


def test_a_clean_cache_is_served_quietly_and_records_what_made_it(corpora, tmp_path, capsys):
    clean = read_all(corpora)
    folders = cache_folders(tmp_path / "cache" / "hf-datasets")
    assert len(folders) >= len(CORPORA)  # every table-like file went through datasets, into the cache root
    assert all((folder / RECORD).is_file() for folder in folders)
    capsys.readouterr()
    assert read_all(corpora) == clean and capsys.readouterr().err == ""
    assert cache_folders(tmp_path / "cache" / "hf-datasets") == folders  # served, not remade


def _damage(folder: Path, how: str) -> None:
    arrows = sorted(folder.glob("*.arrow"))
    assert arrows
    for arrow in arrows:
        data = arrow.read_bytes()
        if how == "random_bytes":
            arrow.write_bytes(random.Random(5).randbytes(len(data)))
        elif how == "bytes_in_the_middle":  # the Arrow framing intact: rows would change without an error
            middle = len(data) // 2
            arrow.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 16]) + data[middle + 16:])
        elif how == "truncated":
            arrow.write_bytes(data[: len(data) // 2])
        elif how == "directory":
            arrow.unlink()
            arrow.mkdir()
        elif how == "removed":
            arrow.unlink()
    if how == "info_random_bytes":  # read by datasets while it makes the builder, before any Arrow file
        info = folder / "dataset_info.json"
        info.write_bytes(random.Random(6).randbytes(info.stat().st_size))
    elif how == "no_record":  # a folder made by an older version, or by a read killed before its record
        (folder / RECORD).unlink()


@pytest.mark.parametrize("how", ["random_bytes", "bytes_in_the_middle", "truncated", "directory", "removed",
                                 "info_random_bytes", "no_record"])
def test_a_damaged_cache_folder_is_one_warning_and_the_rows_of_a_clean_read(corpora, tmp_path, capsys, how):
    clean = read_all(corpora)
    folders = cache_folders(tmp_path / "cache" / "hf-datasets")
    assert len(folders) >= len(CORPORA)
    for folder in folders:
        _damage(folder, how)
    capsys.readouterr()
    again = read_all(corpora)
    warnings = datasets_warnings(capsys.readouterr().err)
    assert again == clean
    assert len(warnings) == len(folders), warnings
    assert all(w.startswith("warning: ") and "deleted it and read" in w for w in warnings)
    assert read_all(corpora) == clean and capsys.readouterr().err == ""  # the remade folders serve quietly


def test_a_source_changed_under_the_same_time_and_size_is_read_again(corpora, tmp_path, monkeypatch, capsys):
    # datasets keys a local file on its path and modification time; the record holds its sha256
    first = read_all(corpora)["mrpc"]
    path = corpora / "mrpc" / "msr_paraphrase_train.txt"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"The mayor said", b"The MAYOR said", 1))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    capsys.readouterr()
    again = list(DatasetsDir(corpora).load("mrpc"))
    assert "was made from other bytes of its source file" in capsys.readouterr().err
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "fresh-cache"))
    assert again == list(DatasetsDir(corpora).load("mrpc")) != first  # the edited text, as a cold read gives it


def test_a_file_in_place_of_the_cache_root_is_moved_aside(corpora, tmp_path, capsys):
    clean = read_all(corpora)
    cache = tmp_path / "cache" / "hf-datasets"
    shutil.rmtree(cache)
    cache.write_bytes(b"not a folder")
    capsys.readouterr()
    assert read_all(corpora) == clean
    err = capsys.readouterr().err
    assert err.count("warning: ") == 1 and "moved it to hf-datasets.corrupt-1" in err
    assert cache.is_dir()


def test_the_build_reads_its_corpora_into_the_cache_dir_it_is_given(corpora, tmp_path, monkeypatch):
    # `cacheeval build --cache-dir C` checks the corpora before Dagster starts: their datasets cache
    # goes to C too, never to $CACHEEVAL_CACHE_DIR. A broken corpus read last stops the build there.
    from pipeline.app.cli.materialize import run_build
    from pipeline.core.errors import InputError

    shutil.copytree(FIXTURES / "triviaqa", corpora / "triviaqa")  # read after the five corpora above
    next((corpora / "triviaqa").glob("*.jsonl")).write_bytes(b"")
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "elsewhere"))
    with pytest.raises(InputError, match="file is empty"):
        run_build("smoke", tmp_path / "out", corpora, tmp_path / "chosen")
    assert len(cache_folders(tmp_path / "chosen" / "hf-datasets")) >= len(CORPORA)
    assert not (tmp_path / "elsewhere").exists()


READER = """
import sys
from sources.datasets_dir import DatasetsDir
ddir = DatasetsDir(sys.argv[1])
print(sum(len(list(ddir.load(name))) for name in sys.argv[2:]))
"""


def test_two_processes_reading_a_cold_cache_at_once_agree_without_a_warning(corpora, tmp_path):
    # each folder is checked, made and recorded under a lock: neither process takes the other's
    # fresh, not yet recorded folder for damage
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), settings.CACHE_DIR: str(tmp_path / "shared-cache")}
    env.pop(settings.HF_DATASETS_CACHE, None)
    procs = [subprocess.Popen([sys.executable, "-c", READER, str(corpora), *CORPORA], cwd=root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    assert [r[2] for r in results] == [0, 0], results
    assert results[0][0] == results[1][0] and int(results[0][0]) > 0
    assert not datasets_warnings(results[0][1] + results[1][1])
    assert all((f / RECORD).is_file() for f in cache_folders(tmp_path / "shared-cache" / "hf-datasets"))
