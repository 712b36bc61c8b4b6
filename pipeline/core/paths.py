"""Project paths, resolved from this file and never from the working directory."""
from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIGS = PROJECT_ROOT / "configs"
OUTPUTS = PROJECT_ROOT / "outputs"
SOURCES = PROJECT_ROOT / "sources"
CURATED = SOURCES / "curated"
FIXTURES = SOURCES / "fixtures"
EXTRACT = SOURCES / "extract" / "pairs.jsonl"   # the corpora's verified pairs (domains.corpora.extract)
ROW_SCHEMA = CONFIGS / "row.schema.json"
