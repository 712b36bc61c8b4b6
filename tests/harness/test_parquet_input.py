"""`cacheeval eval --bench` reads the published Parquet form (a split, or the outputs/hf folder) as
the same rows as the JSONL form."""
from pathlib import Path

import pytest

from pipeline.harness import load_bench
from pipeline.harness.load import BenchmarkInvalid

OUT = Path(__file__).resolve().parents[2] / "outputs"


def test_the_folder_is_the_whole_benchmark():
    assert [r.to_dict() for r in load_bench(OUT / "hf")] == [r.to_dict() for r in load_bench(OUT / "cachebench.jsonl")]


def test_a_split_with_its_labels_is_the_labelled_split():
    parquet = load_bench(OUT / "hf/data/test.parquet", OUT / "hf/data/test_labels.parquet")
    jsonl = load_bench(OUT / "splits/test.jsonl", OUT / "splits/test_labels.jsonl")
    assert [r.to_dict() for r in parquet] == [r.to_dict() for r in jsonl]
    with pytest.raises(BenchmarkInvalid, match="published without labels"):
        load_bench(OUT / "hf/data/test.parquet")


def test_a_damaged_parquet_file_is_one_line(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(Exception, match=r"x.parquet: not a readable Parquet file"):
        load_bench(bad)
