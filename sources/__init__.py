"""Loaders for the upstream corpora, read offline from a datasets dir (see sources/README.md).

`LOADERS` maps each corpus name (its folder name in the datasets dir) to its `Loader`;
`DatasetsDir` is the resource the pipeline reads them through. Importing this package is light:
Hugging Face `datasets` is imported only when a corpus is read.
"""
from __future__ import annotations

from sources.base import IntentRecord, Loader, PairRecord, PromptRecord, QARecord, Record, ToolRecord
from sources.datasets_dir import DatasetsDir
from sources.registry import LOADERS

__all__ = ["LOADERS", "DatasetsDir", "Loader", "Record", "IntentRecord", "PairRecord", "QARecord",
           "ToolRecord", "PromptRecord"]
