"""Dagster resources: the build's settings (profile, output folder, datasets dir, cache folder).

The build resource is an entry point: its fields are the flags of `pipeline.core.settings.resolve`,
resolved once when a run (or a step in its own process) starts, never at import, and its assets
take what they need from `build.settings`."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from pipeline.core.settings import Settings, llm_db, resolve, use_cache_root
from pipeline.core.paths import OUTPUTS, PROJECT_ROOT


class BuildSettings(ConfigurableResource):
    """What to build (profile) and where (out_dir: runs launched from the UI write into build/ui-outputs/
    unless set here; `cacheeval build` into outputs/). Other empty strings mean the defaults named on
    each field."""

    profile: str = Field(default="v1.1", description=(
        "Sampling profile of configs/sampling.yaml: v1.1, lifted40 or smoke."))
    out_dir: str = Field(default="", description=(
        "Output folder the build writes into (relative: from the project root). Empty: the project's "
        "committed outputs/."))
    datasets_dir: str = Field(default="", description=(
        "Folder of upstream corpora. Empty: $CACHEEVAL_DATASETS_DIR, else none (the embedded default)."))
    cache_dir: str = Field(default="", description=(
        "Root of every cache. Empty: $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."))
    commercial_only: bool = Field(default=False, description=(
        "Drop candidates whose corpus licence forbids commercial use."))
    llm_mode: str = Field(default="", description=(
        "LLM response cache mode (off|read|write|both|replay); none = no LM rows. Empty: "
        "$CACHEEVAL_LLM_CACHE_MODE, else cache.mode of configs/llm.yaml."))
    _resolved: Settings | None = PrivateAttr(default=None)

    @contextmanager
    def yield_for_execution(self, context: InitResourceContext) -> Iterator["BuildSettings"]:
        """While a run (in process) or a step (in its own process) uses these settings, `cache_dir`
        is the process's cache root, so caches reached without the settings in hand (the sandbox
        verdicts behind a verifier) land in the same folder as the rest. The settings are resolved
        here, once for the run or step."""
        with use_cache_root(self.cache_dir or None):
            self._resolved = self._resolve()
            yield self

    def _resolve(self) -> Settings:
        return resolve(datasets_dir=self.datasets_dir, cache_dir=self.cache_dir, profile=self.profile)

    @property
    def settings(self) -> Settings:
        """The settings of the run: these fields over the environment over the defaults (resolved
        when the run or step started; outside a run, such as in a test, now)."""
        return self._resolved or self._resolve()

    @property
    def outputs(self) -> Path:
        """`out_dir` (a relative one from the project root, never the working directory), else the
        project's outputs/."""
        return PROJECT_ROOT / self.out_dir if self.out_dir else OUTPUTS

    @property
    def caches(self) -> Path:
        """The cache root: `cache_dir`, else $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."""
        return self.settings.cache_root

    @property
    def datasets_path(self) -> Path | None:
        """`datasets_dir`, else $CACHEEVAL_DATASETS_DIR, else None (the embedded default)."""
        return self.settings.datasets_dir

    def datasets(self):
        """The DatasetsDir for real corpora, or None for the embedded default."""
        path = self.datasets_path
        if path is None:
            return None
        from sources.datasets_dir import DatasetsDir

        return DatasetsDir(path, self.settings.hf_datasets_cache)

    def llm(self):
        """The language model for LM-generated rows behind the response cache, or None (llm_mode "none").

        In replay mode (the embedded default) it answers only from the committed
        sources/curated/llm_replay.jsonl and needs no model; other modes use the store under the
        cache root (llm_cache.sqlite, or PostgreSQL when its URL variable is set) and reach the
        model on a miss."""
        mode = self.llm_mode or None
        if mode == "none":
            return None
        from pipeline.core.errors import warn
        from pipeline.services.llm.cached_provider import resolve_mode
        from pipeline.services.llm.stores import open_store
        from pipeline.services.llm.providers import load_llm_config, open_llm
        from pipeline.services.llm.replay import REPLAY_FILE, replay_llm

        config, resolved = load_llm_config(), self.settings
        effective = resolve_mode(mode, config.mode, resolved)
        if effective == "replay":
            if not REPLAY_FILE.is_file():  # nothing recorded yet: the build goes on without LM rows
                warn(f"{REPLAY_FILE.name} not found: no LM-generated rows. Record it with "
                     f"`python -m domains.lm.record`")
                return None
            return replay_llm()
        # like every cache, the SQLite store lives under the cache root (PostgreSQL when its URL is set)
        store = None if effective == "off" else open_store(llm_db(self.caches), config.postgres_url(resolved))
        return open_llm(effective, store=store, resolved=resolved)


class EvolveSettings(ConfigurableResource):
    """Where the quarterly adversarial slice reads the main benchmark and writes its files, and the
    cache it attacks (empty: configs/evolving.yaml's target)."""

    bench: str = Field(default="outputs/cachebench.jsonl", description=(
        "The main benchmark (relative: from the project root); its splits/ beside it train the verified cache."))
    out_dir: str = Field(default="outputs/evolving", description=(
        "Folder of the quarterly slices (relative: from the project root): <quarter>.jsonl, <quarter>.md, "
        "manifest.json. Earlier quarters found there are never duplicated."))
    target: str = Field(default="", description=(
        "The cache to attack: a reference name (cacheeval references) or module:<file.py>[:<Class>]. Empty: "
        "target of configs/evolving.yaml (verified)."))
    made_with_code: str = Field(default="", description=(
        "The sha256 of the target's code recorded when this quarter's slice was made (`cacheeval check` passes "
        "the manifest's). The slice records it as made; the rows themselves depend only on the target's "
        "behaviour (name, protocol, model snapshots, settings). Empty: the target's current code."))

    @property
    def bench_path(self) -> Path:
        return PROJECT_ROOT / self.bench

    @property
    def out_path(self) -> Path:
        return PROJECT_ROOT / self.out_dir
