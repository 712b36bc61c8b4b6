"""The datasets dir resource: one folder per corpus, named as in `../shared/datasets`
(`banking77/`, `massive/`, ...), holding the corpus's files under their upstream names.

A corpus whose folder is absent yields nothing; a folder that is present but malformed raises
`InputError`. Every file read is hashed into `manifest()`, so two builds can be compared by their
inputs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from pipeline.core.errors import InputError
from pipeline.core.settings import DATASETS_DIR
from sources.base import Record, bad
from sources.read import Reader
from sources.registry import LOADERS


class DatasetsDir:
    """Read upstream corpora from `root` (one sub-folder per corpus, upstream file names).
    `datasets_cache`: the Hugging Face datasets cache of the tables read (default: the one the
    process's settings name, see `pipeline.core.settings.hf_datasets_cache`)."""

    def __init__(self, root: str | os.PathLike[str], datasets_cache: Path | None = None) -> None:
        self.root = Path(root)
        self.datasets_cache = datasets_cache
        self._manifest: dict[str, dict[str, Any]] = {}

    @classmethod
    def chosen(cls, root: str | os.PathLike[str] | None, datasets_cache: Path | None = None) -> "DatasetsDir":
        """The datasets dir the settings chose (`--datasets-dir`, else $CACHEEVAL_DATASETS_DIR); there
        must be one, and the folder must exist."""
        if not root:
            raise InputError(f"no datasets dir given. Pass --datasets-dir DIR or set {DATASETS_DIR}.")
        root = Path(root)
        if not root.is_dir():
            raise InputError(f"{root}:file: datasets dir not found or not a folder. Pass an existing folder.")
        return cls(root, datasets_cache)

    def folder(self, corpus: str) -> Path:
        return self.root / LOADERS[corpus].name

    def found(self) -> list[str]:
        """Known corpora whose folder is present, sorted. A file where a folder should be is an
        error, not an absence."""
        out = []
        for name in LOADERS.names():
            path = self.root / name
            if path.is_dir():
                out.append(name)
            elif path.exists() or path.is_symlink():
                raise bad(path, "file", "is not a folder", f"Put the {name} files in a folder named {name}/")
        return out

    def files(self, corpus: str) -> list[str]:
        """The corpus's input files, relative to its folder, sorted ([] when absent)."""
        folder = self.folder(corpus)
        return LOADERS[corpus].files(folder) if folder.is_dir() else []

    def load(self, corpus: str) -> Iterator[Record]:
        """The corpus's records in a stable order; nothing when its folder is absent. Reads the
        whole corpus before yielding, so a malformed file fails before any record is used."""
        loader = LOADERS[corpus]
        folder = self.root / corpus
        if corpus not in self.found():
            return iter(())
        return loader.load(Reader(corpus, folder, self._manifest, self.datasets_cache))

    def inventory(self, corpora: Any = None) -> list[dict[str, Any]]:
        """sha256 and size of every input file of the corpora present (of `corpora` only, when
        given), read or not, sorted by path relative to the root (`<corpus>/<file>`): what a build
        over this folder depends on. A file is hashed once per process per (path, size, mtime): the
        build asks for every slot's corpus, the extract and the manifest."""
        from pipeline.core.hashing import memo_file_sha256

        out = []
        for corpus in self.found():
            if corpora is not None and corpus not in corpora:
                continue
            for rel in self.files(corpus):
                path = self.folder(corpus) / rel
                out.append({"path": f"{corpus}/{rel}", "sha256": memo_file_sha256(path), "size": path.stat().st_size})
        return sorted(out, key=lambda e: e["path"])

    def manifest(self) -> list[dict[str, Any]]:
        """sha256 and size of every input file read so far, sorted by path relative to the root."""
        return [{"path": p, **self._manifest[p]} for p in sorted(self._manifest)]
