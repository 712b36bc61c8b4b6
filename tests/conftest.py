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
