"""The corpora build (not committed: its rows derive from corpora that are not ours) is complete,
valid, and byte-identical across two runs under a perturbed environment."""
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.harness.contract import validate_file

ROOT = Path(__file__).resolve().parents[2]


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def build(out: Path, datasets: Path, cwd: Path, **env) -> str:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run([sys.executable, "-m", "pipeline.app.cli", "build", "--profile", "v1.1", "--datasets-dir",
                           str(datasets), "--out", str(out)], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=3600)  # a hang guard, not a timing
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.corpora
def test_corpora_build_is_complete_valid_and_byte_identical(shared_datasets, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    printed = build(a, shared_datasets, ROOT)
    # The corpora make the committed extract (tests/domains/test_extract.py), so this build is the
    # committed benchmark byte for byte, all but the manifest (which names the corpora it read); the
    # committed slices were made on that benchmark, so the build fills their caches.
    made = {k: v for k, v in digest(a).items() if k != "manifest.json"}
    assert made == {k: v for k, v in digest(ROOT / "outputs").items() if k in made}
    assert "slices filled" in printed
    build(b, shared_datasets, tmp_path, PYTHONHASHSEED="777", TZ="Asia/Kolkata", LC_ALL="C",
          DAGSTER_HOME=str(tmp_path / "dh"))
    assert digest(a) == digest(b)
    assert validate_file(a / "cachebench.jsonl") == []
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["rows"] == 2000 and manifest["inputs"]["corpora"]
    # every file of every corpus present, with its sha256 (the build's inputs, whether a step read them or not)
    listed = {f["path"]: f["sha256"] for f in manifest["inputs"]["files"] if f["path"].startswith("datasets/")}
    assert {p.split("/")[1] for p in listed} == set(manifest["inputs"]["corpora"])
    assert "datasets/sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json" in listed
    assert all(re.fullmatch(r"[0-9a-f]{64}", sha) for sha in listed.values())
    methods = manifest["construction_methods"]
    assert methods.get("existing_benchmark", 0) > 0 and methods.get("intent_bottom_up", 0) > 0
    rows = [json.loads(x) for x in (a / "cachebench.jsonl").read_text().splitlines()]
    corpus_rows = [r for r in rows if r["source"] not in ("curated",) and not r["source"].startswith("lm:")]
    assert corpus_rows and all(r["licence"] != "CC-BY-4.0 (CacheEval curated)" for r in corpus_rows)
