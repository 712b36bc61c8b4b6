"""`cacheeval sources`: found/absent corpora, files with sha256, counts per split, licence."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from pipeline.app.cli import main
from pipeline.core.paths import FIXTURES, PROJECT_ROOT
from sources.registry import LOADERS

REAL = PROJECT_ROOT.parent / "shared" / "datasets"


@pytest.fixture(autouse=True)
def _hf_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.getbasetemp() / "hf-cli"))


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_report_on_fixtures(capsys):
    code, out, err = run(["sources", "--datasets-dir", str(FIXTURES), "--json"], capsys)
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert [c["corpus"] for c in report["corpora"]] == LOADERS.names()
    by = {c["corpus"]: c for c in report["corpora"]}
    assert all(c["found"] for c in by.values())
    assert by["paws"]["splits"] == {"dev": 6, "test": 6} and by["paws"]["records"] == 12
    assert by["xquad"]["splits"] == {"de": 10, "en": 10}
    assert by["banking77"]["licence"] == "CC-BY-4.0"
    for c in by.values():
        assert c["files"], c["corpus"]
        for f in c["files"]:
            data = (FIXTURES / c["corpus"] / f["path"]).read_bytes()
            assert (f["sha256"], f["size"]) == (hashlib.sha256(data).hexdigest(), len(data))
    paths = [m["path"] for m in report["manifest"]]
    assert paths == sorted(paths) and len(paths) == sum(len(c["files"]) for c in by.values())


def test_text_report_and_env_default(tmp_path, capsys, monkeypatch):
    shutil.copytree(FIXTURES / "mrpc", tmp_path / "mrpc")
    monkeypatch.setenv("CACHEEVAL_DATASETS_DIR", str(tmp_path))
    code, out, err = run(["sources"], capsys)
    assert (code, err) == (0, "")
    assert "+ mrpc: 10 records (test 4, train 6); licence: MRPC" in out
    assert "- banking77: not found (expected banking77/:" in out
    sha = hashlib.sha256((tmp_path / "mrpc" / "msr_paraphrase_test.txt").read_bytes()).hexdigest()
    assert f"    {sha}" in out and out.rstrip().endswith("1 of 13 corpora found: mrpc")


def test_empty_dir_finds_nothing(tmp_path, capsys):
    code, out, err = run(["sources", "--datasets-dir", str(tmp_path), "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and not any(c["found"] for c in report["corpora"]) and report["manifest"] == []


def test_same_bytes_twice(capsys):
    first = run(["sources", "--datasets-dir", str(FIXTURES), "--json"], capsys)
    assert run(["sources", "--datasets-dir", str(FIXTURES), "--json"], capsys) == first


@pytest.mark.corpora
def test_real_datasets_dir(capsys):
    if not REAL.is_dir():
        pytest.skip(f"{REAL} is absent: the real-corpus CLI check needs ../shared/datasets")
    code, out, err = run(["sources", "--datasets-dir", str(REAL), "--json"], capsys)
    assert (code, err) == (0, "")
    by = {c["corpus"]: c for c in json.loads(out)["corpora"]}
    assert not by["wildchat"]["found"]
    assert by["banking77"]["splits"] == {"test": 3080, "train": 10003}
    assert by["mrpc"]["splits"] == {"test": 1725, "train": 4076}
    shipped = dict(l.split("  ./")[::-1] for l in (REAL / "MANIFEST.sha256").read_text().splitlines() if l)
    for c in by.values():
        for f in c["files"]:
            assert shipped[f"{c['corpus']}/{f['path']}"] == f["sha256"]
