"""outputs/hf/: Parquet per split with declared Arrow types, byte-stable, loadable offline with
`datasets`, and a card whose YAML header the Hub reads. Built here from the committed benchmark
(the build writes the same files: `cacheeval check` compares them byte for byte)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from pipeline.core.config import load_profile
from pipeline.stages.assembly import TEST_PUBLIC_FIELDS
from pipeline.stages.hf_dataset import SPLIT_FILES, hf_files, hf_licence

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "outputs"


def _inputs() -> tuple:
    from domains import domain_names

    rows = [json.loads(x) for x in (OUT / "cachebench.jsonl").read_text(encoding="utf-8").splitlines()]
    splits = {s: [r for r in rows if r["provenance"]["split"] == s] for s in ("train", "dev", "test")}
    baselines = {"always_hit": {"f1": 0.5, "fhr": 1.0, "precision": 0.3, "recall": 1.0}}
    refs = [{"configuration": "x (isolated)", "n": len(rows), "f1": 0.6, "fhr": 0.6, "precision": 0.4, "recall": 0.9}]
    return rows, splits, load_profile("v1.1").labels, domain_names(), {"profile": "v1.1", "kappa": "0.700"}, baselines, refs


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return hf_files(*_inputs())


def test_byte_stable_whatever_the_row_order(files):
    rows, splits, *rest = _inputs()
    shuffled = {k: list(reversed(v)) for k, v in splits.items()}
    assert hf_files(list(reversed(rows)), shuffled, *rest) == files


def test_declared_types_and_no_labels_in_the_public_test_split(files):
    import pyarrow.parquet as pq

    for rel in files:
        if rel.endswith(".parquet"):
            schema = pq.read_schema(io.BytesIO(files[rel]))
            assert {str(t) for t in schema.types} == {"string"}, rel
    test = pq.read_table(io.BytesIO(files[f"hf/{SPLIT_FILES['test']}"]))
    assert test.column_names == list(TEST_PUBLIC_FIELDS)
    labels = pq.read_table(io.BytesIO(files[f"hf/{SPLIT_FILES['test_labels']}"]))
    assert "label" in labels.column_names and labels.column("id").to_pylist() == test.column("id").to_pylist()
    train = pq.read_table(io.BytesIO(files[f"hf/{SPLIT_FILES['train']}"])).to_pylist()
    with_context = next(r for r in train if r["context_a"] is not None)
    assert isinstance(json.loads(with_context["context_a"]), list)        # JSON text, loads back


def test_the_card_header_is_what_the_hub_reads(files):
    text = files["hf/README.md"].decode("utf-8")
    assert text.startswith("---\n")
    header = yaml.safe_load(text.split("---\n")[1])
    rows = _inputs()[0]
    licences = hf_licence(sorted({r["licence"] for r in rows}))   # every licence the rows carry, none dropped
    assert header["license"] == (licences[0] if len(licences) == 1 else licences) and header["pretty_name"] == "CacheEval"
    if any("ShareGPT" in r["licence"] or "none stated" in r["licence"] for r in rows):
        assert "other" in header["license"]                          # no Hub identifier for "none stated"
    assert "commercial use" in text and "--commercial-only" in text
    assert {c["config_name"] for c in header["configs"]} == {"default", "test", "test_labels"}
    assert {"task_categories", "size_categories", "language", "dataset_info"} <= set(header)
    default = next(c for c in header["dataset_info"] if c["config_name"] == "default")
    assert [f["name"] for f in default["features"]][:3] == ["id", "domain", "subcategory"]
    for part in ("False-Hit Rate", "answer-determining", "Sampling matrix", "verification method", "kappa",
                 "x (isolated)", "--commercial-only", "load_dataset", "cacheeval eval", "@misc"):
        assert part in text, part


def test_licences_map_to_hub_identifiers():
    assert hf_licence(["CC-BY-4.0 (CacheEval curated)", "MIT (ShareGPT)"]) == ["cc-by-4.0", "mit"]
    assert hf_licence(["Some custom terms"]) == ["other"]


@pytest.mark.slow
def test_datasets_loads_it_offline(files, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    from datasets import load_dataset

    folder = str(tmp_path / "hf")
    # a cache of this test's own: HF_HOME is read when datasets is first imported, which another test of the
    # process may have done, and the default cache keeps an earlier build of a folder with the same layout
    cache = str(tmp_path / "hf-cache")
    bench = load_dataset(folder, cache_dir=cache)
    _, splits, *_ = _inputs()   # split sizes: the profile's within the whole-group tolerance (pipeline/stages/groups.py)
    n = {k: len(v) for k, v in splits.items()}
    assert set(bench) == {"train", "validation"} and len(bench["train"]) == n["train"] and len(bench["validation"]) == n["dev"]
    assert bench["train"].features["label"].dtype == "string"
    test = load_dataset(folder, "test", cache_dir=cache)["test"]
    assert len(test) == n["test"] and "label" not in test.column_names
    assert len(load_dataset(folder, "test_labels", cache_dir=cache)["test"]) == n["test"]
    direct = load_dataset("parquet", data_files={"train": str(tmp_path / "hf" / SPLIT_FILES["train"])}, cache_dir=cache)
    assert direct["train"]["id"] == bench["train"]["id"]
