"""Evaluation-result cache for `cacheeval eval`: a score is reused only if nothing that can change
it has changed.

The key is the sha256 of the canonical JSON of an identity: the benchmark file's sha256; the cache
implementation (its name; the code of its whole import closure: every module of the user's project
it imports, transitively, by file sha256, installed distributions by name and version, the Python
version; see pipeline.harness.closure; and its declared `model_snapshot` and `settings`, on the
object that decides, whether through `__call__`, `decide` or a store/lookup, and as module globals);
the harness (HARNESS_VERSION, the sha256 of every .py file of pipeline/harness/ by path, and the
closure of what it imports from outside) and its config (thresholds, metric set, on_error, ...);
and `SCHEMA`. A code version or declared value that cannot be read is never reused (fail closed).

Each entry is one readable JSON file holding the identity it was made from, the report and a
signature: an HMAC-SHA256 of both under the installation's secret key (pipeline.core.secret,
`<cache root>/secret.key`, 0600, never visible to a scored cache's worker). Before serving, the
entry must be a regular file, the stored identity must equal the current one and the signature must
hold, so an entry forged or re-signed without the key is never served; any mismatch, read error or
corruption is one warning line and re-runs the evaluation, whose result overwrites the entry (a
folder in its place included).

Beside the entries, `checked/` holds a signed record per benchmark (sha256, labels sha256, contract,
harness code) that passed the contract check: `cacheeval eval` then looks a rerun up before checking
the rows again (an entry keyed on those bytes can only have been made after that check), which is
what makes a rerun on a large benchmark cost a hash of the file rather than a parse of it.

Wiring for `cacheeval eval` (``--no-cache`` forces a run, whose result still refreshes the entry)::

    ec = EvalCache()                                   # <cache root>/eval, or $CACHEEVAL_EVAL_CACHE_DIR
    ident = ec.identity(benchmark_path, cache_obj, {"thresholds": [...], "metrics": [...], "on_error": "skip"})
    report, from_cache = ec.cached_run(ident, lambda: harness.evaluate(...), use_cache=not args.no_cache)
"""
from __future__ import annotations

import inspect
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from pipeline.core.errors import warn
from pipeline.core.hashing import canonical_json, file_sha256, sha256_text
from pipeline.core import secret, settings
from pipeline.harness.closure import ABSENT, STDLIB, UNKNOWN, classify, code_identity
from pipeline.harness.interface import HARNESS_VERSION

SCHEMA = 3  # 3: entries are signed (HMAC under the installation key), not checksummed
DECLARED = ("model_snapshot", "settings")
HARNESS_DIR = Path(__file__).resolve().parent


def harness_code(root: Path | None = None) -> dict[str, str]:
    """sha256 of every .py file of the harness package (default: this one), by path relative to
    it, sorted. A score can change with any module (loading, the loop, a metric, the report), so
    the whole package is the code version, not one file."""
    root = Path(root) if root is not None else HARNESS_DIR
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in files}


def harness_identity() -> dict:
    """HARNESS_VERSION, the code of the harness package (see harness_code) and of what its modules
    import from outside it (pipeline.core, installed distributions, the Python version)."""
    package = __name__.rpartition(".")[0]
    roots = sorted(f"{package}.{p.stem}" for p in HARNESS_DIR.glob("*.py") if p.stem != "__init__")
    support = code_identity([package, *roots])
    support["modules"] = {m: h for m, h in support["modules"].items()
                          if m != package and not m.startswith(package + ".")}
    return {"version": HARNESS_VERSION, "code": harness_code(), "imports": support}


_MISSING = object()


def _decision(cache_obj: Any) -> tuple[str, Any, list[str], str | None]:
    """(name, the object declaring model_snapshot/settings, the modules defining the cache, the module of
    the decision's own code) of a function, a bound method (e.g. `decide`), an instance or a class."""
    if inspect.ismethod(cache_obj):
        owner, func = cache_obj.__self__, inspect.unwrap(cache_obj.__func__)
        cls = owner if isinstance(owner, type) else type(owner)
        chain = [k.__module__ for k in cls.__mro__ if k is not object]
        own = getattr(func, "__module__", None)
        return f"{cls.__module__}.{cls.__qualname__}.{cache_obj.__name__}", owner, [own, *chain], cls.__module__
    if inspect.isfunction(cache_obj):
        wrappers = [cache_obj]
        while hasattr(wrappers[-1], "__wrapped__") and len(wrappers) < 100:
            wrappers.append(wrappers[-1].__wrapped__)
        func = wrappers[-1]
        modules = [getattr(f, "__module__", None) for f in wrappers]
        return f"{func.__module__}.{func.__qualname__}", cache_obj, modules, func.__module__
    cls = cache_obj if isinstance(cache_obj, type) else type(cache_obj)
    chain = [k.__module__ for k in cls.__mro__ if k is not object]
    return f"{cls.__module__}.{cls.__qualname__}", cache_obj, chain, cls.__module__


def implementation_identity(cache_obj: Any) -> dict:
    """What the scored cache is: its name, its code (the import closure of the modules defining
    it; see pipeline.harness.closure) and its declared `model_snapshot` and `settings`, read where
    the decision is made: on the object (instance or class attribute, or property; for a bound
    method such as `decide`, on the object it is bound to; for a function, a function attribute),
    and as module globals of the modules defining it. A value that cannot be read makes the
    evaluation uncacheable (`unknown`)."""
    name, owner, modules, own = _decision(cache_obj)
    roots = sorted({m for m in modules if isinstance(m, str)})
    code = code_identity(roots)
    unknown = [f"the code of {m}" for m in code["unknown"]]
    if own is None or classify(own)[0] in (STDLIB, ABSENT, UNKNOWN):
        unknown.insert(0, f"the source file of {name}")
    out: dict[str, Any] = {"class": name, "roots": roots, "code": code}
    for attr in DECLARED:
        try:
            value = getattr(owner, attr, None)
        except Exception as exc:  # noqa: BLE001 - a property that raises: the value is unknown
            unknown.append(f"{attr} of {name} ({type(exc).__name__})")
            value = None
        out[attr] = value
    declared = {}
    for m in roots:
        module_vars = vars(sys.modules[m]) if m in sys.modules else {}
        # a declaration is data; a module, class or function of that name (`from x import settings`) is code
        found = {a: module_vars[a] for a in DECLARED
                 if a in module_vars and not callable(module_vars[a]) and not inspect.ismodule(module_vars[a])}
        if found:
            declared[m] = found
    out["module_declarations"] = declared
    out["unknown"] = unknown
    return out


def benchmark_sha256(path: str | Path) -> str:
    """The file's sha256 (read as a stream); for a folder (the published Parquet form), over every
    file's path and sha256."""
    p = Path(path)
    if not p.is_dir():
        return file_sha256(p)
    return sha256_text(canonical_json({f.relative_to(p).as_posix(): file_sha256(f)
                                       for f in sorted(p.rglob("*")) if f.is_file()}))


class EvalCache:
    """A folder of evaluation results keyed by everything that can change a score."""

    def __init__(self, path: str | Path | None = None, clock: Callable[[], float] = time.time,
                 key: bytes | None = None, key_root: str | Path | None = None) -> None:
        # default read now, not at import: $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval
        self.path = Path(path) if path is not None else settings.eval_dir()
        self.clock = clock
        self._key = key  # the signing key; default: that of `key_root` (read on first use)
        # the cache root holding the key: given, else the cache root (default folder), else the folder's parent
        self.key_root = Path(key_root) if key_root is not None else (
            settings.cache_root() if path is None else self.path.parent)

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = secret.installation_key(self.key_root)
        return self._key

    def identity(self, benchmark_path: str | Path, cache_obj: Any, harness_config: Mapping[str, Any],
                 implementation: Mapping[str, Any] | None = None, bench_sha256: str | None = None) -> dict:
        """The full identity of one evaluation (see the module docstring); `implementation` given
        when the cache was read elsewhere (a worker process: pipeline.harness.isolated),
        `bench_sha256` when the caller has hashed the benchmark already."""
        return {
            "schema": SCHEMA,
            "benchmark_sha256": bench_sha256 or benchmark_sha256(benchmark_path),
            "implementation": dict(implementation) if implementation is not None else implementation_identity(cache_obj),
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
        try:
            self.key
        except OSError as exc:
            warn(f"the cache signing key cannot be read or made ({exc}); evaluating without the cache")
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
        """Fail closed when a code version or a declared value is unknown: no hash, no reuse."""
        impl = identity.get("implementation") or {}
        if impl.get("unknown"):
            return f"{impl['unknown'][0]} is unknown, so its code version cannot be checked"
        if not (identity.get("harness") or {}).get("code"):
            return "the harness source files were not found, so its code version cannot be checked"
        return None

    def _load(self, key: str, identity: Mapping[str, Any]) -> dict | None:
        path = self._file(key)
        try:
            if not stat.S_ISREG(path.stat().st_mode):  # a folder, a FIFO (a read would hang), a device
                warn(f"{path}: evaluation cache entry is not a regular file; evaluating again")
                return None
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
        elif not secret.verify(self.key, _signed(data.get("identity"), data.get("report")), data.get("signature")):
            problem = "is not signed with this installation's key (forged, re-signed or from another installation)"
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
                 "report": report, "signature": secret.sign(self.key, _signed(ident, report))}
        path = self._file(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # write then rename: a reader never sees half a file, and concurrent writers do not interleave
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:12]}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
            if path.is_dir() and not path.is_symlink():  # a folder in the entry's place: replace it too
                shutil.rmtree(path)
            os.replace(tmp, path)
        except OSError as exc:
            warn(f"{path}: could not write the evaluation cache entry ({exc}); continuing without it")

    # ---- benchmarks that passed a contract: a record that lets a rerun skip the check

    def _checked_file(self, about: Mapping[str, Any]) -> tuple[Path, dict]:
        ident = {"schema": SCHEMA, **about, "harness_code": harness_code()}
        # not *.json: a file of that name under the folder is an evaluation entry
        return self.path / "checked" / f"{sha256_text(canonical_json(ident))}.checked", ident

    def checked(self, bench_sha256: str, labels_sha256: str | None, contract: str) -> bool:
        """True when a benchmark with these bytes (and labels) passed `contract` under this harness's
        code on this installation (a signed record written by `mark_checked`). `cacheeval eval` then
        looks its result up before checking it again: an entry keyed on the same sha256 can only have
        been made after the same check. Any doubt (no record, unreadable, unsigned) is False."""
        path, ident = self._checked_file({"benchmark_sha256": bench_sha256, "labels_sha256": labels_sha256,
                                          "contract": contract})
        try:
            if not stat.S_ISREG(path.stat().st_mode):
                return False
            data = json.loads(path.read_text(encoding="utf-8"))
            return (isinstance(data, dict) and data.get("identity") == ident
                    and secret.verify(self.key, canonical_json(ident).encode("utf-8"), data.get("signature")))
        except (OSError, ValueError):
            return False

    def mark_checked(self, bench_sha256: str, labels_sha256: str | None, contract: str) -> None:
        """Record (signed) that this benchmark passed `contract`; best effort, silent on failure."""
        path, ident = self._checked_file({"benchmark_sha256": bench_sha256, "labels_sha256": labels_sha256,
                                          "contract": contract})
        try:
            entry = {"identity": ident, "signature": secret.sign(self.key, canonical_json(ident).encode("utf-8"))}
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".checked.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
            os.replace(tmp, path)
        except OSError:
            pass


def _signed(identity: Any, report: Any) -> bytes:
    """The bytes an entry's signature covers: its identity and its report, canonically."""
    return canonical_json({"identity": identity, "report": report}).encode("utf-8")
