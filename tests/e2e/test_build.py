"""The asset graph end to end: definitions load, the smoke profile materialises in process with
real models, rebuilds are byte-identical under environment perturbations, failures name the cell,
and `cacheeval check` catches a one-byte change."""
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.app.cli.materialize import compare_outputs, run_build
from pipeline.harness.contract import validate_file
from pipeline.core.errors import BuildError

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "pipeline.app.cli"]


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def cache_dir(smoke_cache) -> Path:
    return smoke_cache


@pytest.fixture(scope="module")
def cold(tmp_path_factory, cache_dir) -> SimpleNamespace:
    """The module's one cold build (test_byte_identical_with_cold_cache reads it): the smoke profile
    by the CLI, every vector computed, through a damaged embedding cache, with one embedding worker,
    under hash seed 0 and another time zone. It goes into the session's smoke cache, which is empty
    when this module is the first to build the smoke profile (as in CI), so the in-process build of
    `smoke` and the other tests of the `smoke` group (tests/conftest.py) then run warm from it; if
    another test filled that cache first, the cold build gets a folder of its own. The folder is
    named by --cache-dir alone (no CACHEEVAL_CACHE_DIR), and every cache goes there."""
    cache = cache_dir if not any(cache_dir.iterdir()) else tmp_path_factory.mktemp("cold-cache")
    out = tmp_path_factory.mktemp("cold")
    damaged = cache / "embeddings.sqlite"
    damaged.write_bytes(random.Random(11).randbytes(1 << 16))
    env = {k: v for k, v in os.environ.items() if k != "CACHEEVAL_CACHE_DIR"}
    proc = subprocess.run([*CLI, "build", "--profile", "smoke", "--out", str(out), "--cache-dir", str(cache)], cwd=ROOT,
                          env={**env, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0", "TZ": "America/Los_Angeles",
                               "CACHEEVAL_WORKERS": "1"}, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return SimpleNamespace(out=out, cache=cache, damaged=damaged, stderr=proc.stderr)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, cache_dir, cold) -> Path:
    """The smoke profile built in this process (Dagster in process), after `cold` filled the cache."""
    out = tmp_path_factory.mktemp("smoke")
    run_build("smoke", out, None, cache_dir)
    return out


def test_definitions_load_and_validate():
    from pipeline.app.definitions import defs

    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"candidate_rows", "verified_rows", "selected_rows", "row_similarities", "row_difficulty", "cachebench",
            "benchmark_files", "calibration_report", "baseline_reports", "build_manifest", "source_manifest",
            "mined_pairs"} <= keys
    from pipeline.app.definitions import BUILD_JOBS

    assert [j.name for j in BUILD_JOBS] == ["sources_job", "domain_job", "outputs_job"]  # the CLI's build
    assert {j.name for j in defs.jobs} >= {"build_dataset", "evolving_job"}  # the UI's
    env = {**os.environ, "DAGSTER_HOME": str(ROOT / ".dagster_home")}
    os.makedirs(env["DAGSTER_HOME"], exist_ok=True)
    proc = subprocess.run([str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.models
def test_smoke_build_is_complete_and_valid(smoke):
    rows = [json.loads(x) for x in (smoke / "cachebench.jsonl").read_text().splitlines()]
    assert len(rows) == 250
    assert validate_file(smoke / "cachebench.jsonl") == []
    manifest = json.loads((smoke / "manifest.json").read_text())
    assert manifest["profile"] == "smoke" and set(manifest["models"]) >= {"minilm_l6", "use_multilingual_v3"}
    for rel, sha in manifest["outputs"].items():
        assert hashlib.sha256((smoke / rel).read_bytes()).hexdigest() == sha
    test_public = [json.loads(x) for x in (smoke / "splits/test.jsonl").read_text().splitlines()]
    assert test_public and all("label" not in r and "binary_label" not in r for r in test_public)
    assert (smoke / "reports/calibration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "kappa" in (smoke / "reports/calibration.md").read_text()


def _cli_build(out: Path, cache: Path, cwd: Path, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "CACHEEVAL_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run([*CLI, "build", "--profile", "smoke", "--out", str(out)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.models
def test_byte_identical_under_seed_timezone_locale_cwd(smoke, cache_dir, tmp_path):
    out = tmp_path / "b"
    _cli_build(out, cache_dir, tmp_path, PYTHONHASHSEED="12345", TZ="Pacific/Kiritimati", LC_ALL="C",
               DAGSTER_HOME=str(tmp_path / "dh"), HF_HOME=str(tmp_path / "hf"))
    assert digest(out) == digest(smoke)


@pytest.mark.slow
@pytest.mark.models
def test_byte_identical_with_cold_cache(cold, smoke):
    # Cold (every vector computed, through a damaged embedding cache, one embedding worker) and warm
    # (every step served from what the cold build cached, in process, another hash seed and time zone):
    # the same bytes. The damaged file (random bytes where the embeddings' SQLite file belongs) is set
    # aside with one warning. That a vector does not depend on how the texts are split over workers is
    # tests/services/test_embed_runtime.py's, bit for bit.
    assert digest(cold.out) == digest(smoke)
    assert len([line for line in cold.stderr.splitlines() if line.startswith(f"warning: {cold.damaged}")]) == 1
    assert (cold.cache / "embeddings.sqlite.corrupt-1").read_bytes() == random.Random(11).randbytes(1 << 16)
    assert {p.name for p in cold.cache.iterdir()} >= {"embeddings.sqlite", "sandbox.sqlite", "build_times.json"}
    # Progress: a line per domain, per stage, and per embedder (its counts, rate and time left).
    assert "[10/10] multilingual: generated and verified" in cold.stderr
    # The outputs job's steps, counted: build_manifest among them, and the last one numbered N/N.
    assert re.search(r"\[\d+/\d+\] build_manifest done", cold.stderr)
    assert re.search(r"\[(\d+)/\1\] \w+ done", cold.stderr)
    assert re.search(r"embed mpnet_base: \d+/\d+ texts, \d+/s, \d+s elapsed, ~\d+s left", cold.stderr)
    times = json.loads((cold.cache / "build_times.json").read_text())
    assert times["smoke"]["row_similarities"] > 0


def test_quota_shortfall_fails_naming_the_cell(tmp_path, monkeypatch, cache_dir):
    import pipeline.core.config as config

    real = config.load_profile("smoke")
    matrix = {d: dict(c) for d, c in real.matrix.items()}
    # personalized's curated pool cannot supply 50,000 EQUIV pairs, whatever the need asks for
    need = 50_000
    matrix["personalized"]["EQUIV"] = need
    huge = config.Profile("smoke", real.description, real.labels, matrix,
                          {"train": real.total + need - 5 - 124, "dev": 62, "test": 62}, real.method_mix)
    monkeypatch.setattr(config, "load_profile", lambda name: huge)
    for mod in ("assets.selection", "assets.generation", "assets.assembly", "pipeline.app.cli.materialize"):
        if hasattr(sys.modules.get(mod), "load_profile"):
            monkeypatch.setattr(sys.modules[mod], "load_profile", lambda name: huge)
    out = tmp_path / "out"
    out.mkdir()
    (out / "cachebench.jsonl").write_text("committed\n")
    with pytest.raises(BuildError) as err:
        run_build("smoke", out, None, cache_dir)
    short = re.search(r"personalized/EQUIV short by (\d+)", str(err.value))
    assert "quota_personalized" in str(err.value) and short and 0 < int(short.group(1)) < need
    assert (out / "cachebench.jsonl").read_text() == "committed\n"  # nothing lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # and the build's work folder is gone


@pytest.mark.parametrize("damage, where", [
    ("empty", "triviaqa/triviaqa_test.selfrag_ctrla.jsonl:file: file is empty"),
    ("bad_line", "lmsys_arena/arena-hard-v0.1_question.jsonl:line 2: invalid JSON"),
])
def test_a_bad_corpus_stops_the_build_before_dagster_in_one_line(tmp_path, damage, where):
    # Every corpus the build will read is loaded first, as `cacheeval sources` does: one line on
    # stderr naming the file and record, exit 1, the output folder untouched, no Dagster run.
    datasets = tmp_path / "datasets"
    shutil.copytree(ROOT / "sources" / "fixtures", datasets, ignore=shutil.ignore_patterns("*.py"))
    if damage == "empty":
        (datasets / "triviaqa" / "triviaqa_test.selfrag_ctrla.jsonl").write_bytes(b"")
    else:
        f = datasets / "lmsys_arena" / "arena-hard-v0.1_question.jsonl"
        lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
        f.write_text(lines[0] + '{"uid": broken\n' + "".join(lines[2:]), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "cachebench.jsonl").write_text("committed\n")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf")}
    proc = subprocess.run([*CLI, "build", "--profile", "smoke", "--datasets-dir", str(datasets), "--out", str(out),
                           "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {datasets / where.split(':')[0]}:"), proc.stderr
    assert where in lines[0]
    assert (out / "cachebench.jsonl").read_text() == "committed\n"
    assert not (tmp_path / "cache" / "logs").exists()  # Dagster never started


@pytest.mark.slow
@pytest.mark.models
def test_check_catches_a_one_byte_change(smoke, cache_dir, tmp_path):
    committed = tmp_path / "committed"
    shutil.copytree(smoke, committed)
    path = committed / "cachebench.jsonl"
    data = bytearray(path.read_bytes())
    first = json.loads(data.split(b"\n")[0])
    i = data.index(b'"query_b":"') + len(b'"query_b":"')
    data[i] = ord("Z") if data[i] != ord("Z") else ord("Y")
    path.write_bytes(bytes(data))
    diffs = compare_outputs(committed, smoke)
    assert [d.file for d in diffs] == ["cachebench.jsonl"]
    assert diffs[0].detail == f"row {first['id']}: field query_b differs"
    env = {**os.environ, "CACHEEVAL_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run([*CLI, "check", "--outputs", str(committed)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 1
    assert f"cachebench.jsonl: row {first['id']}: field query_b differs" in proc.stderr


@pytest.mark.parametrize("argv, message", [
    (["--out", "{file}"], "error: --out {file}: is a file, not a folder. Choose a writable folder with room\n"),
    (["--cache-dir", "{file}"], "error: --cache-dir {file}: is a file, not a folder. Choose a writable folder with room\n"),
])
def test_an_unusable_out_or_cache_dir_is_one_line_before_any_work(tmp_path, capsys, argv, message):
    # Before: a 21-line traceback after the whole build, or "running without it" and a failure 50 s later.
    from pipeline.app.cli import main

    file = tmp_path / "a-file"
    file.write_text("keep", encoding="utf-8")
    code = main(["build", "--profile", "smoke", *[a.format(file=file) for a in argv]])
    assert (code, capsys.readouterr().err) == (1, message.format(file=file))
    assert file.read_text(encoding="utf-8") == "keep" and sorted(tmp_path.iterdir()) == [file]


def test_evolve_resolves_its_target_before_any_work(capsys):
    from pipeline.app.cli import main

    code = main(["evolve", "--quarter", "2026-Q4", "--target", "module:/missing.py"])
    assert (code, capsys.readouterr().err) == (
        1, "error: --target module:/missing.py: file /missing.py not found. Pass an existing .py file or a dotted module\n")
    code = main(["evolve", "--quarter", "2026-Q4", "--target", "garbage"])
    assert code == 1 and capsys.readouterr().err.startswith("error: --target: Unknown reference 'garbage'.")
