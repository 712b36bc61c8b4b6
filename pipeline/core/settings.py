"""Every environment variable the project reads, and the one cache root with its named places.

Each variable is named here once, with what it means. Values are read when a function is called,
never at import, so a test or a build can set them after the project is imported. An empty value
counts as unset.

Every cache lives under one root, `cache_root()`: the explicit folder (`--cache-dir`, the build
resource's `cache_dir`), else $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval. The functions
below name each cache inside it, so no module spells a cache path of its own.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from pipeline.core.paths import PROJECT_ROOT

# --- the project's own variables
CACHE_DIR = "CACHEEVAL_CACHE_DIR"              # root of every cache (embeddings, LLM, sandbox, eval, models, datasets)
DATASETS_DIR = "CACHEEVAL_DATASETS_DIR"        # folder of upstream corpora; unset = the embedded default
EVAL_CACHE_DIR = "CACHEEVAL_EVAL_CACHE_DIR"    # evaluation-result folder, instead of <cache root>/eval
LLM_CACHE_MODE = "CACHEEVAL_LLM_CACHE_MODE"    # off|read|write|both|replay, over configs/llm.yaml's cache.mode
LLM_CACHE_URL = "CACHEEVAL_LLM_CACHE_URL"      # PostgreSQL URL for the LLM store (named by cache.postgres_url_env)
WORKERS = "CACHEEVAL_WORKERS"                  # processes that embed texts (default: the CPU count; 1 = in process)
UI_PROFILE = "CACHEEVAL_UI_PROFILE"            # the Dagster UI's build_dataset default profile (v1.1)
UI_OUT_DIR = "CACHEEVAL_UI_OUT_DIR"            # the Dagster UI's build_dataset default output folder (build/ui-outputs)
# --- read by tests only
TEST_PG_URL = "CACHEEVAL_TEST_PG_URL"          # a throw-away PostgreSQL for the LLM store's tests
TEST_REQUIRE_PG = "CACHEEVAL_TEST_REQUIRE_PG"  # "1" (set by .ci/test): the PostgreSQL tests fail, not skip, without it
TEST_HF_CACHE = "CACHEEVAL_TEST_HF_CACHE"      # a Hugging Face datasets cache the source tests may reuse
# --- other tools' variables the project reads or sets
DAGSTER_HOME = "DAGSTER_HOME"                  # Dagster's instance folder for `cacheeval ui`
HF_HOME = "HF_HOME"                            # Hugging Face home (hub files; never the corpora's datasets cache)
HF_DATASETS_CACHE = "HF_DATASETS_CACHE"        # the corpora's datasets cache, over <cache root>/hf-datasets
HF_HUB_OFFLINE = "HF_HUB_OFFLINE"              # "1": the hub is never contacted (set by the build)
HF_DATASETS_OFFLINE = "HF_DATASETS_OFFLINE"    # "1": datasets never downloads (set by the build)

ALL = (CACHE_DIR, DATASETS_DIR, EVAL_CACHE_DIR, LLM_CACHE_MODE, LLM_CACHE_URL, WORKERS, UI_PROFILE, UI_OUT_DIR,
       TEST_PG_URL, TEST_REQUIRE_PG, TEST_HF_CACHE, DAGSTER_HOME, HF_HOME, HF_DATASETS_CACHE, HF_HUB_OFFLINE, HF_DATASETS_OFFLINE)


def env(name: str) -> str | None:
    """The variable's value now, or None when it is unset or empty."""
    return os.environ.get(name) or None


def env_path(name: str) -> Path | None:
    """The variable as a path, or None when it is unset or empty."""
    value = env(name)
    return Path(value) if value else None


# --- the cache root and the places inside it

def cache_root(explicit: str | Path | None = None) -> Path:
    """`explicit`, else $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."""
    if explicit:
        return Path(explicit)
    return env_path(CACHE_DIR) or PROJECT_ROOT / ".cache" / "cacheeval"


def embeddings_db(root: str | Path | None = None) -> Path:
    """The embedding cache (one SQLite file; the build's difficulty stage and mining share it)."""
    return cache_root(root) / "embeddings.sqlite"


def llm_db(root: str | Path | None = None) -> Path:
    """The LLM response store when it is SQLite (PostgreSQL when $CACHEEVAL_LLM_CACHE_URL is set)."""
    return cache_root(root) / "llm_cache.sqlite"


def sandbox_db(root: str | Path | None = None) -> Path:
    """Sandbox verdicts (passed/failed) of reference code, shared across processes."""
    return cache_root(root) / "sandbox.sqlite"


def models_dir(root: str | Path | None = None) -> Path:
    """Model files unpacked from installed packages (e.g. split zips) before they are loaded."""
    return cache_root(root) / "models"


def logs_dir(root: str | Path | None = None) -> Path:
    """The Dagster logs of `cacheeval build` and `check` (one file per build; the newest kept)."""
    return cache_root(root) / "logs"


def eval_dir(root: str | Path | None = None) -> Path:
    """Evaluation results of `cacheeval eval`: $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval."""
    return env_path(EVAL_CACHE_DIR) or cache_root(root) / "eval"


@contextmanager
def use_cache_root(root: str | Path | None) -> Iterator[Path]:
    """Make `root` the cache root of this process (and of the processes it starts) for the block.

    A step that is not handed the build's settings (the sandbox behind a verifier, say) finds its
    cache through $CACHEEVAL_CACHE_DIR; this sets it, absolute, and restores the old value after.
    `None` or "" leaves the root as it is."""
    if not root:
        yield cache_root()
        return
    resolved = Path(root).resolve()
    before = os.environ.get(CACHE_DIR)
    os.environ[CACHE_DIR] = str(resolved)
    try:
        yield resolved
    finally:
        if before is None:
            os.environ.pop(CACHE_DIR, None)
        else:
            os.environ[CACHE_DIR] = before


# --- the rest

def datasets_dir() -> Path | None:
    """$CACHEEVAL_DATASETS_DIR, or None (the embedded default)."""
    return env_path(DATASETS_DIR)


def dagster_home() -> Path:
    """$DAGSTER_HOME, else <project>/.dagster_home."""
    return env_path(DAGSTER_HOME) or PROJECT_ROOT / ".dagster_home"


def hf_datasets_cache(root: str | Path | None = None) -> Path:
    """Where `datasets` keeps the Arrow files of the corpora it parsed (checked before use, see
    sources.hf_cache): $HF_DATASETS_CACHE when it is set, else <cache root>/hf-datasets."""
    return env_path(HF_DATASETS_CACHE) or cache_root(root) / "hf-datasets"


def ensure_offline() -> None:
    """Keep Hugging Face libraries off the network unless the caller chose otherwise."""
    os.environ.setdefault(HF_HUB_OFFLINE, "1")
    os.environ.setdefault(HF_DATASETS_OFFLINE, "1")
