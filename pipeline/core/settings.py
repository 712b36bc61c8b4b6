"""Every environment variable the project reads, the one resolver of the project's settings, and
the one cache root with its named places.

This is the only module that reads or writes `os.environ`. An entry point (a `cacheeval` command,
the build's Dagster resource) calls `resolve()` once, with its flags: it returns one frozen
`Settings` (flag, else environment, else default; an empty value counts as unset), and the entry
point hands it, or the values it needs, down. Code that is handed nothing (a library call, a test,
a child process such as the sandbox, which finds the cache root through $CACHEEVAL_CACHE_DIR)
falls back on the functions below, which read the environment when called, never at import.
Writing the environment is left to three functions here: `ensure_offline` (before a Hugging Face
library is imported), `single_thread` (in a worker process) and `use_cache_root` (for the
processes a step starts); `child_environment` is the environment a child process is handed.

Every cache lives under one root, `cache_root()`: the explicit folder (`--cache-dir`, the build
resource's `cache_dir`), else $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval. The functions
below name each cache inside it, so no module spells a cache path of its own.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

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
TEST_ONLY = (TEST_PG_URL, TEST_REQUIRE_PG, TEST_HF_CACHE)  # no result depends on them (the step cache's key skips them)
# --- other tools' variables the project reads or sets
DAGSTER_HOME = "DAGSTER_HOME"                  # Dagster's instance folder for `cacheeval ui`
HF_HOME = "HF_HOME"                            # Hugging Face home (hub files; never the corpora's datasets cache)
HF_DATASETS_CACHE = "HF_DATASETS_CACHE"        # the corpora's datasets cache, over <cache root>/hf-datasets
HF_HUB_OFFLINE = "HF_HUB_OFFLINE"              # "1": the hub is never contacted (set by the build)
HF_DATASETS_OFFLINE = "HF_DATASETS_OFFLINE"    # "1": datasets never downloads (set by the build)
PYTHON_WARNINGS = "PYTHONWARNINGS"             # warning filters; `cacheeval ui` adds one for `dagster dev`
# set in each embedding worker process: one thread per process (pipeline/services/embed_pool.py)
THREAD_VARIABLES = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                    "TOKENIZERS_PARALLELISM": "false"}

ALL = (CACHE_DIR, DATASETS_DIR, EVAL_CACHE_DIR, LLM_CACHE_MODE, LLM_CACHE_URL, WORKERS, UI_PROFILE, UI_OUT_DIR,
       *TEST_ONLY, DAGSTER_HOME, HF_HOME, HF_DATASETS_CACHE, HF_HUB_OFFLINE,
       HF_DATASETS_OFFLINE, PYTHON_WARNINGS)

DEFAULT_PROFILE = "v1.1"  # the sampling profile a build uses unless --profile names another


def env(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable's value now (in `environ` when given), or None when it is unset or empty."""
    return (os.environ if environ is None else environ).get(name) or None


def env_path(name: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The variable as a path, or None when it is unset or empty."""
    value = env(name, environ)
    return Path(value) if value else None


# --- the settings of one entry point

@dataclass(frozen=True)
class Settings:
    """What the flags and the environment chose, resolved once by `resolve()` at an entry point and
    handed down. Paths are as given (a relative one is taken from the working directory)."""

    profile: str                    # sampling profile of configs/sampling.yaml
    cache_root: Path                # root of every cache
    datasets_dir: Path | None       # folder of upstream corpora; None = the embedded default
    eval_dir: Path                  # evaluation results of `cacheeval eval` and the reference reports
    hf_datasets_cache: Path         # the corpora's `datasets` cache
    dagster_home: Path              # Dagster's instance folder for `cacheeval ui`
    llm_cache_mode: str | None      # $CACHEEVAL_LLM_CACHE_MODE; a mode argument wins, configs/llm.yaml's is the default
    hf_hub_offline: str             # what `ensure_offline` gives the Hugging Face libraries: "1" unless
    hf_datasets_offline: str        # the environment chose otherwise
    worker_setting: int | str | None = None  # the flag's number or the variable's text (see `workers`)
    environ: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)  # as resolved

    @property
    def workers(self) -> int:
        """Processes that embed texts (1 = in process). Checked when asked for, so that only a
        command that embeds fails on a wrong $CACHEEVAL_WORKERS."""
        return worker_count(self.worker_setting)

    @property
    def llm_cache_url(self) -> str | None:
        """$CACHEEVAL_LLM_CACHE_URL: the PostgreSQL URL of the LLM store (the variable configs/llm.yaml names)."""
        return self.variable(LLM_CACHE_URL)

    def variable(self, name: str | None) -> str | None:
        """A variable a config file names (the LLM store's URL, an endpoint's API key) as it was when
        the settings were resolved; None when unset or empty, or when no name is configured."""
        return env(name, dict(self.environ)) if name else None


def resolve(*, datasets_dir: str | Path | None = None, cache_dir: str | Path | None = None,
            workers: int | None = None, profile: str | None = None,
            environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of an entry point: each flag given (None or "" is not given) over the environment
    (`environ`, by default this process's, read now) over the default."""
    environ = dict(os.environ if environ is None else environ)
    if workers is not None:
        worker_count(workers)  # a wrong number from code fails here, where it was given
    root = cache_root(cache_dir, environ)
    return Settings(
        profile=profile or DEFAULT_PROFILE,
        cache_root=root,
        datasets_dir=Path(datasets_dir) if datasets_dir else env_path(DATASETS_DIR, environ),
        eval_dir=eval_dir(root, environ),
        hf_datasets_cache=hf_datasets_cache(root, environ),
        dagster_home=env_path(DAGSTER_HOME, environ) or PROJECT_ROOT / ".dagster_home",
        llm_cache_mode=env(LLM_CACHE_MODE, environ),
        hf_hub_offline=env(HF_HUB_OFFLINE, environ) or "1",
        hf_datasets_offline=env(HF_DATASETS_OFFLINE, environ) or "1",
        worker_setting=workers if workers is not None else env(WORKERS, environ),
        environ=tuple(environ.items()),
    )


def worker_count(setting: int | str | None) -> int:
    """A worker setting as a number: None is the CPU count; anything but a positive integer is an
    InputError naming $CACHEEVAL_WORKERS."""
    if setting is None:
        return max(1, os.cpu_count() or 1)
    try:
        n = int(setting)
    except ValueError:
        n = 0
    if n < 1:
        from pipeline.core.errors import InputError

        raise InputError(f"${WORKERS}={setting!r}: not a positive integer. Set it to the number of "
                         "worker processes (e.g. 2) or unset it")
    return n


# --- the cache root and the places inside it

def cache_root(explicit: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """`explicit`, else $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."""
    if explicit:
        return Path(explicit)
    return env_path(CACHE_DIR, environ) or PROJECT_ROOT / ".cache" / "cacheeval"


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


def eval_dir(root: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Evaluation results of `cacheeval eval`: $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval."""
    return env_path(EVAL_CACHE_DIR, environ) or cache_root(root, environ) / "eval"


def hf_datasets_cache(root: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Where `datasets` keeps the Arrow files of the corpora it parsed (checked before use, see
    sources.hf_cache): $HF_DATASETS_CACHE when it is set, else <cache root>/hf-datasets."""
    return env_path(HF_DATASETS_CACHE, environ) or cache_root(root, environ) / "hf-datasets"


# --- the environment this process writes, and the one a child process gets

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


def ensure_offline(resolved: Settings | None = None) -> None:
    """Keep Hugging Face libraries off the network unless the environment chose otherwise. They read
    $HF_HUB_OFFLINE and $HF_DATASETS_OFFLINE when imported, so this runs first: each that is unset
    (or empty) gets the settings' value ("1"; `resolved`, else this process's settings)."""
    s = resolved or resolve()
    for name, value in ((HF_HUB_OFFLINE, s.hf_hub_offline), (HF_DATASETS_OFFLINE, s.hf_datasets_offline)):
        if env(name) is None:
            os.environ[name] = value


def single_thread() -> None:
    """One thread per process: the initializer of each worker process that embeds texts (or runs a
    reference), before any numeric library is loaded there (pipeline/services/embed_pool.py)."""
    os.environ.update(THREAD_VARIABLES)


def child_environment(resolved: Settings, values: Mapping[str, str]) -> dict[str, str]:
    """The environment a child process is started with: the one `resolved` was read from, with
    `values` over it."""
    return {**dict(resolved.environ), **values}


def untrusted_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a cache under test is started with (pipeline.harness.isolated): this process's,
    without the project's own variables (CACHEEVAL_*: cache roots, datasets, LLM store URL) or
    PYTHONPATH, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CACHEEVAL_") and k != "PYTHONPATH"}
    env.update(extra or {})
    return env


def prefixed(prefix: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every environment variable whose name starts with `prefix`, sorted by name (for a cache key
    that must hold the settings that can change a result)."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in sorted(source.items()) if k.startswith(prefix)}
