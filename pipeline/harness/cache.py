"""Evaluation-result cache for `cacheeval eval`: a score is reused only if nothing that can change
it has changed.

The key is the sha256 of the canonical JSON of an identity: the benchmark file's sha256; the cache
implementation (module, class, sha256 of every project/user module in its class hierarchy, and its
optional `model_snapshot` and `settings` attributes); the harness (HARNESS_VERSION and the sha256
of every .py file of pipeline/harness/, by path) and its config (thresholds, metric set, on_error);
and `SCHEMA`.

Each entry is one readable JSON file holding the identity it was made from, the report and a
checksum. Before serving, the stored identity must equal the current one and the checksum must hold;
any mismatch, read error or corruption re-runs the evaluation (and overwrites the entry).

Wiring for `cacheeval eval` (``--no-cache`` forces a run, whose result still refreshes the entry)::

    ec = EvalCache()                                   # <cache root>/eval, or $CACHEEVAL_EVAL_CACHE_DIR
    ident = ec.identity(benchmark_path, cache_obj, {"thresholds": [...], "metrics": [...], "on_error": "skip"})
    report, from_cache = ec.cached_run(ident, lambda: harness.evaluate(...), use_cache=not args.no_cache)
"""
from __future__ import annotations

import inspect
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from pipeline.core.errors import warn
from pipeline.core.hashing import canonical_json, file_sha256, sha256_text
from pipeline.core import settings
from pipeline.harness.interface import HARNESS_VERSION

SCHEMA = 1
HARNESS_DIR = Path(__file__).resolve().parent


def harness_code(root: Path | None = None) -> dict[str, str]:
    """sha256 of every .py file of the harness package (default: this one), by path relative to
    it, sorted. A score can change with any module (loading, the loop, a metric, the report), so
    the whole package is the code version, not one file."""
    root = Path(root) if root is not None else HARNESS_DIR
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in files}


def harness_identity() -> dict:
    """HARNESS_VERSION and the code of the harness package (see harness_code)."""
    return {"version": HARNESS_VERSION, "code": harness_code()}


def implementation_identity(cache_obj: Any) -> dict:
    """Class (or function), code version (module file hashes along the class hierarchy), model snapshot,
    settings. A bound method counts as its function; a callable instance as its class."""
    if inspect.isfunction(cache_obj) or inspect.ismethod(cache_obj):
        # a plain `cache(row) -> verdict` callable: its code version is its module's file
        chain = [inspect.unwrap(cache_obj)]
    else:
        chain = [k for k in (cache_obj if isinstance(cache_obj, type) else type(cache_obj)).__mro__ if k is not object]
    modules = []
    for part in chain:
        try:
            source = inspect.getsourcefile(part)
        except TypeError:  # a builtin or C extension class: no source to hash
            source = None
        modules.append({"class": f"{part.__module__}.{part.__qualname__}",
                        "module_sha256": file_sha256(source) if source and os.path.isfile(source) else None})
    return {
        "class": modules[0]["class"],
        "code": modules,
        "model_snapshot": getattr(cache_obj, "model_snapshot", None),
        "settings": getattr(cache_obj, "settings", None),
    }


class EvalCache:
    """A folder of evaluation results keyed by everything that can change a score."""

    def __init__(self, path: str | Path | None = None, clock: Callable[[], float] = time.time) -> None:
        # default read now, not at import: $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval
        self.path = Path(path) if path is not None else settings.eval_dir()
        self.clock = clock

    def identity(self, benchmark_path: str | Path, cache_obj: Any, harness_config: Mapping[str, Any]) -> dict:
        """The full identity of one evaluation (see the module docstring)."""
        return {
            "schema": SCHEMA,
            "benchmark_sha256": file_sha256(benchmark_path),
            "implementation": implementation_identity(cache_obj),
            "harness": {**harness_identity(), "config": dict(harness_config)},
        }

    def _file(self, key: str) -> Path:
        return self.path / key[:2] / f"{key}.json"

    def cached_run(self, identity: Mapping[str, Any], run: Callable[[], dict],
                   use_cache: bool = True) -> tuple[dict, bool]:
        """(report, served_from_cache): the stored report when its identity matches, else run() (stored)."""
        try:
            key = sha256_text(canonical_json(identity))
        except (TypeError, ValueError) as exc:
            warn(f"evaluation identity is not JSON-serialisable ({exc}); evaluating without the cache")
            return run(), False
        if identity_uncacheable := self._uncacheable(identity):
            warn(f"evaluation not cached: {identity_uncacheable}")
            return run(), False
        if use_cache:
            report = self._load(key, identity)
            if report is not None:
                return report, True
        report = run()
        self._store(key, identity, report)
        return report, False

    @staticmethod
    def _uncacheable(identity: Mapping[str, Any]) -> str | None:
        """Fail closed when a code version is unknown: no hash, no reuse."""
        impl = identity.get("implementation") or {}
        if any(m.get("module_sha256") is None for m in impl.get("code", [])[:1]):
            return f"the source file of {impl.get('class')} is unknown, so its code version cannot be checked"
        if not (identity.get("harness") or {}).get("code"):
            return "the harness source files were not found, so its code version cannot be checked"
        return None

    def _load(self, key: str, identity: Mapping[str, Any]) -> dict | None:
        path = self._file(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            warn(f"{path}: unreadable evaluation cache entry ({type(exc).__name__}); evaluating again")
            return None
        problem = None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("key") != key:
            problem = "has another schema or key"
        elif data.get("identity") != json.loads(canonical_json(identity)):
            problem = "was made from another identity"
        elif data.get("checksum") != _checksum(data.get("identity"), data.get("report")):
            problem = "fails its checksum"
        elif not isinstance(data.get("report"), dict):
            problem = "holds no report"
        if problem:
            warn(f"{path}: evaluation cache entry {problem}; evaluating again")
            return None
        return data["report"]

    def _store(self, key: str, identity: Mapping[str, Any], report: dict) -> None:
        try:
            text = canonical_json(report)
        except (TypeError, ValueError) as exc:
            warn(f"evaluation report is not JSON-serialisable ({exc}); not cached")
            return
        if json.loads(text) != report:  # e.g. tuples or int keys: a reload would not equal the real result
            warn("evaluation report does not survive a JSON round trip unchanged; not cached")
            return
        ident = json.loads(canonical_json(identity))
        entry = {"schema": SCHEMA, "key": key, "created_at": int(self.clock()), "identity": ident,
                 # the report keeps its own key order, so a served report renders exactly like a fresh one
                 "report": report, "checksum": _checksum(ident, report)}
        path = self._file(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # write then rename: a reader never sees half a file, and concurrent writers do not interleave
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:12]}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
            os.replace(tmp, path)
        except OSError as exc:
            warn(f"{path}: could not write the evaluation cache entry ({exc}); continuing without it")


def _checksum(identity: Any, report: Any) -> str:
    return sha256_text(canonical_json({"identity": identity, "report": report}))
