"""Content-addressed cache of the build's expensive steps (generation, verification, similarities,
the calibration plot, the reference and stream reports, the slice's scoring; over a datasets dir,
each shard's mining preparation and the extract), so that a warm
`cacheeval check` re-creates every output from stored step results and still writes and compares
every byte.

Key: the sha256 of the canonical JSON of an identity holding everything that can change a step's
result:

- `SCHEMA` and the step's name;
- the code: the sha256 of every file of the project's packages and configuration (`assets/`,
  `domains/`, `pipeline/`, `sources/`, `configs/`: modules, prompts, curated data, the LLM replay
  file), the Python version and every installed distribution with its version. This holds the
  step's import closure and more: the registries load the domain, verifier and source modules by
  computed names, which an import walk (pipeline.harness.closure) cannot see, so the whole tree is
  the code version;
- the step's inputs, given by the caller: `fingerprint` of each input value (a canonical walk of
  dataclasses, mappings in their order, sequences, sets sorted, floats exact), the sha256 of the
  files it reads, the settings it reads, and, for steps that embed, `model_snapshots` (the sha256 of
  every file of every configured embedder).

Each entry is `<cache root>/steps/<key[:2]>/<key>.step`: one JSON header line (schema, key, step,
signature) and the pickled result. The signature is an HMAC-SHA256 of the key and the result's bytes
under the installation's secret key (pipeline.core.secret, `<cache root>/secret.key`), as the
embedding and evaluation-result caches sign theirs, so a result written or re-signed by anyone
without the key is never loaded. A missing entry, a read error, a wrong schema, key or signature, a
result that cannot be loaded, or inputs that cannot be fingerprinted: the step runs for real (one
warning line where something was wrong) and its result replaces the entry. A step that runs for real
loads its models as before; a hit loads none. `CACHEEVAL_STEP_CACHE=off` turns the cache off.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import pickle
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from pipeline.core import settings
from pipeline.core.errors import warn
from pipeline.core.hashing import canonical_json, file_sha256, sha256_text
from pipeline.core.paths import PROJECT_ROOT

SCHEMA = 2   # 2: inputs fingerprinted by json's encoder (fingerprint)
FOLDER = "steps"
PACKAGES = ("assets", "domains", "pipeline", "sources", "configs")
SKIP_PARTS = {"__pycache__", ".pytest_cache"}
OFF = "CACHEEVAL_STEP_CACHE"
# where caches live, how many workers run, this cache's switch, the UI's defaults, and the variables
# only tests read: a test run's environment keys its steps as the user's shell does
NOT_INPUTS = {settings.CACHE_DIR, settings.EVAL_CACHE_DIR, settings.WORKERS, OFF, settings.UI_OUT_DIR,
              settings.UI_PROFILE, *settings.TEST_ONLY}
T = TypeVar("T")

# hits and misses of this process, by step (the CLI prints them)
STATS: dict[str, dict[str, int]] = {}


class Unfingerprintable(TypeError):
    """An input value of a type `fingerprint` does not know: the step is not cached."""


_FIELDS: dict[type, tuple[str, ...]] = {}   # a dataclass's field names, read once per class (_json_default)


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return ["i", str(v)] if abs(v) > 2 ** 53 else v
    if isinstance(v, float):
        return ["f", v.hex()]
    if isinstance(v, bytes):
        return ["b", hashlib.sha256(v).hexdigest()]
    if isinstance(v, enum.Enum):
        return ["e", type(v).__qualname__, _plain(v.value)]
    if isinstance(v, Path):
        return ["p", str(v)]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return ["dc", f"{type(v).__module__}.{type(v).__qualname__}",
                [[f.name, _plain(getattr(v, f.name))] for f in dataclasses.fields(v)]]
    if isinstance(v, Mapping):  # in its order: a step may depend on it
        return ["d", type(v).__name__, [[_plain(k), _plain(x)] for k, x in v.items()]]
    if isinstance(v, (list, tuple)):
        return ["l" if isinstance(v, list) else "t", [_plain(x) for x in v]]
    if isinstance(v, (set, frozenset)):
        return ["s", sorted((_plain(x) for x in v), key=canonical_json)]
    if type(v).__module__ == "numpy" or type(v).__module__.startswith("numpy."):
        import numpy as np

        a = np.ascontiguousarray(v)
        return ["np", str(a.dtype), list(a.shape), hashlib.sha256(a.tobytes()).hexdigest()]
    raise Unfingerprintable(f"no fingerprint for a {type(v).__module__}.{type(v).__qualname__}")


def _json_default(v: Any) -> Any:
    """What json's C encoder cannot write itself: a dataclass as its class name and fields in order,
    anything else (sets sorted, bytes, enums, paths, numpy arrays) as `_plain` writes it."""
    t = type(v)
    if t not in _FIELDS and dataclasses.is_dataclass(v) and not isinstance(v, type):
        _FIELDS[t] = tuple(f.name for f in dataclasses.fields(v))
    if t in _FIELDS:
        return ["dc", f"{t.__module__}.{t.__qualname__}", [[name, getattr(v, name)] for name in _FIELDS[t]]]
    return _plain(v)


def fingerprint(value: Any) -> str:
    """sha256 of a canonical form of `value` (see the module docstring); Unfingerprintable for a
    type it does not know (the caller then runs the step uncached). Written by json's C encoder
    (mappings in their order, floats by their exact repr), which turns to `_json_default` only for
    what it cannot write: a build's candidates are fingerprinted ~10x faster than by walking them
    in Python. A value json refuses (a mapping keyed by tuples) is walked by `_plain`."""
    try:
        text = json.dumps(value, default=_json_default, separators=(",", ":"), check_circular=False)
    except (TypeError, ValueError, RecursionError):
        text = canonical_json(_plain(value))
    return sha256_text(text)


def files_sha256(folder: Path, names: Any) -> dict[str, str | None]:
    """sha256 of each named file under `folder` (None: absent), for the files a step reads."""
    out = {}
    for name in sorted(names):
        p = Path(folder) / name
        out[str(name)] = file_sha256(p) if p.is_file() else None
    return out


@functools.lru_cache(maxsize=1)
def code_identity() -> dict:
    """The code version of every step (see the module docstring), computed once per process."""
    files = {}
    for package in PACKAGES:
        root = PROJECT_ROOT / package
        for dirpath, dirnames, names in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_PARTS)
            for name in sorted(names):
                if name.endswith((".pyc", ".pyo")):
                    continue
                p = Path(dirpath) / name
                files[p.relative_to(PROJECT_ROOT).as_posix()] = file_sha256(p)
    # every installed distribution by name and version: the *.dist-info / *.egg-info folder names of
    # the import path (what importlib.metadata reads, without parsing 170 METADATA files)
    dists = sorted({name for folder in sys.path if folder and os.path.isdir(folder) for name in os.listdir(folder)
                    if name.endswith((".dist-info", ".egg-info"))})
    return {"python": sys.version, "implementation": platform.python_implementation(), "files": files,
            "distributions": dists}


def environment() -> dict[str, str]:
    """The CACHEEVAL_* variables that can change a result (not NOT_INPUTS)."""
    return {k: v for k, v in settings.prefixed("CACHEEVAL_").items() if k not in NOT_INPUTS}


def model_snapshots(cache_root: Path) -> dict[str, str]:
    """Every configured embedder's snapshot: sha256 over (file name, sha256) of each file that
    defines it (pipeline.services.embedders.model_files). The bytes are hashed through a signed
    memo under the cache root (pipeline.orchestration.file_memo), so a warm process re-reads none."""
    from pipeline.orchestration.file_memo import FileMemo
    from pipeline.services.embedders import load_embedders_config, model_files

    memo = FileMemo(cache_root)
    out = {}
    for name, spec in sorted(load_embedders_config().specs.items()):
        h = hashlib.sha256()
        for p in model_files(spec):
            h.update(f"{p.name}\0{memo.sha256(p)}\n".encode())
        out[name] = h.hexdigest()
    memo.save()
    return out


class StepCache:
    """Step results by key under `<cache root>/steps/`."""

    def __init__(self, cache_root: Path, key: bytes | None = None) -> None:
        self.root = Path(cache_root)
        self.folder = self.root / FOLDER
        self._key = key

    @property
    def secret(self) -> bytes:
        if self._key is None:
            from pipeline.core.secret import installation_key

            self._key = installation_key(self.root)
        return self._key

    def key_of(self, step: str, inputs: Mapping[str, Any]) -> str:
        identity = {"schema": SCHEMA, "step": step, "code": code_identity(), "environment": environment(),
                    "inputs": dict(inputs)}
        return sha256_text(canonical_json(identity))

    def _file(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.step"

    def run(self, step: str, inputs: Callable[[], Mapping[str, Any]] | Mapping[str, Any],
            compute: Callable[[], T]) -> T:
        """The stored result of `step` on these inputs, else compute() (stored). `inputs` may be a
        callable, so that a value that cannot be fingerprinted runs the step uncached."""
        stats = STATS.setdefault(step, {"hit": 0, "miss": 0})
        if (settings.env(OFF) or "").lower() in ("off", "0", "no", "false"):
            stats["miss"] += 1
            return compute()
        try:
            key = self.key_of(step, inputs() if callable(inputs) else inputs)
            self.secret
        except (Unfingerprintable, TypeError, ValueError, OSError) as exc:
            warn(f"step {step} not cached ({exc})")
            stats["miss"] += 1
            return compute()
        found = self._load(key, step)
        if found is not None:
            stats["hit"] += 1
            return found[0]
        stats["miss"] += 1
        value = compute()
        self._store(key, step, value)
        return value

    def _signature(self, key: str, payload: bytes) -> str:
        from pipeline.core.secret import sign

        return sign(self.secret, key.encode("ascii") + b"\0" + payload)

    def _load(self, key: str, step: str) -> tuple[Any] | None:
        import hmac

        path = self._file(key)
        try:
            with open(path, "rb") as fh:
                header, payload = json.loads(fh.readline()), fh.read()
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            warn(f"{path}: unreadable step cache entry ({type(exc).__name__}); running step {step} again")
            return None
        sig = header.get("signature") if isinstance(header, dict) else None
        if not (isinstance(header, dict) and header.get("schema") == SCHEMA and header.get("key") == key
                and isinstance(sig, str) and hmac.compare_digest(sig, self._signature(key, payload))):
            warn(f"{path}: step cache entry has another schema, key or signature; running step {step} again")
            return None
        try:
            return (pickle.loads(payload),)
        except Exception as exc:  # noqa: BLE001 - a class that moved or changed: run the step
            warn(f"{path}: step cache entry cannot be loaded ({type(exc).__name__}); running step {step} again")
            return None

    def _store(self, key: str, step: str, value: Any) -> None:
        path = self._file(key)
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            header = {"schema": SCHEMA, "key": key, "step": step, "signature": self._signature(key, payload)}
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:12]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(json.dumps(header).encode("ascii") + b"\n" + payload)
            os.replace(tmp, path)
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            warn(f"{path}: could not store the result of step {step} ({exc}); continuing without it")


def summary() -> str:
    """'N of M steps from the step cache' for this process, or '' when no step was looked up."""
    hits = sum(s["hit"] for s in STATS.values())
    total = hits + sum(s["miss"] for s in STATS.values())
    if not total:
        return ""
    ran = sorted(k for k, s in STATS.items() if s["miss"])
    return f"{hits} of {total} cached steps served from the step cache" + (f" (ran: {', '.join(ran)})" if ran else "")
