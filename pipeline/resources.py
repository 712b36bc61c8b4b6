"""Dagster resources: the build's settings (profile, output folder, datasets dir, cache folder).

Environment variables are read when a resource is used, never at import."""
from __future__ import annotations

import os
from pathlib import Path

from dagster import ConfigurableResource

from pipeline.core.paths import OUTPUTS, PROJECT_ROOT


class BuildSettings(ConfigurableResource):
    """What to build and where. Empty strings mean the defaults documented on each property."""

    profile: str = "v1.1"
    out_dir: str = ""
    datasets_dir: str = ""
    cache_dir: str = ""
    commercial_only: bool = False  # drop candidates whose corpus licence forbids commercial use
    llm_mode: str = ""   # "" = $CACHEEVAL_LLM_CACHE_MODE, else cache.mode of configs/llm.yaml; "none" = no LM rows

    @property
    def outputs(self) -> Path:
        """`out_dir`, else the project's outputs/."""
        return Path(self.out_dir) if self.out_dir else OUTPUTS

    @property
    def caches(self) -> Path:
        """`cache_dir`, else $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."""
        return Path(self.cache_dir or os.environ.get("CACHEEVAL_CACHE_DIR") or PROJECT_ROOT / ".cache" / "cacheeval")

    @property
    def datasets_path(self) -> Path | None:
        """`datasets_dir`, else $CACHEEVAL_DATASETS_DIR, else None (the embedded default)."""
        raw = self.datasets_dir or os.environ.get("CACHEEVAL_DATASETS_DIR", "")
        return Path(raw) if raw else None

    def datasets(self):
        """The DatasetsDir for real corpora, or None for the embedded default."""
        path = self.datasets_path
        if path is None:
            return None
        from sources.datasets_dir import DatasetsDir

        return DatasetsDir(path)

    def llm(self):
        """The language model for LM-generated rows behind the response cache, or None (llm_mode "none").

        In replay mode (the embedded default) it answers only from the committed
        sources/curated/llm_replay.jsonl and needs no model; other modes use the configured store
        and reach the model on a miss."""
        mode = self.llm_mode or None
        if mode == "none":
            return None
        from pipeline.llm.cache import resolve_mode, warn
        from pipeline.llm.providers import load_llm_config, open_llm
        from pipeline.llm.replay import REPLAY_FILE, replay_llm

        if resolve_mode(mode, load_llm_config().mode) == "replay":
            if not REPLAY_FILE.is_file():  # nothing recorded yet: the build goes on without LM rows
                warn(f"{REPLAY_FILE.name} not found: no LM-generated rows. Record it with "
                     f"`python -m pipeline.llm.replay record`")
                return None
            return replay_llm()
        return open_llm(mode)
