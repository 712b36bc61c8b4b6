import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = ROOT.parent / "shared" / "datasets"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"real corpora not present at {SHARED_DATASETS} (they sit beside the project in CI)")
    return SHARED_DATASETS


@pytest.fixture(autouse=True)
def _private_eval_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own evaluation-result cache, so no test is served another's result."""
    monkeypatch.setenv("CACHEEVAL_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("eval-cache")))


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory) -> Path:
    """One cache folder for the tests that build the smoke profile (in process, by the CLI, from the
    UI): the first builds it cold, the others run warm. A cache only makes a build faster, and the
    cold path has its own test (test_byte_identical_with_cold_cache, with a folder of its own)."""
    return tmp_path_factory.mktemp("smoke-cache")
