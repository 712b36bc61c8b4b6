"""The code a scored cache runs, for the evaluation-result key: its import closure.

Starting from the modules that define the cache (its class hierarchy, or its function), every
module they import is followed, transitively, with the standard library only:

- a module of the user's project (any file outside the standard library and site-packages: the
  cache's own folder, a checkout on sys.path, an editable install) is keyed by the sha256 of its
  file, and its imports are followed in turn;
- a module of an installed distribution is keyed by the distribution's name and version, and not
  followed (a new version is a new key);
- the standard library is keyed by the Python version;
- an import that resolves to nothing is listed as absent (installing it later changes the key).

Imports are read from each file's AST (imports inside functions and `importlib.import_module("x")`
calls with a literal name included, since they run when the cache decides) and, for modules
already imported, from their globals (a module object, or a class or function defined elsewhere),
which also catches a name computed at run time. Finding a module never imports it.
"""
from __future__ import annotations

import ast
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import platform
import site
import sys
import sysconfig
import types
from functools import lru_cache
from typing import Any, Iterable

from pipeline.core.hashing import file_sha256

STDLIB, INSTALLED, PROJECT, ABSENT, UNKNOWN = "stdlib", "installed", "project", "absent", "unknown"
_SITE_PARTS = ("site-packages", "dist-packages")


@lru_cache(maxsize=1)
def _site_dirs() -> tuple[str, ...]:
    dirs = set(site.getsitepackages())
    dirs.add(site.getusersitepackages())
    paths = sysconfig.get_paths()
    dirs.update(paths.get(k, "") for k in ("purelib", "platlib"))
    return tuple(sorted(os.path.realpath(d) + os.sep for d in dirs if d))


@lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)}))


@lru_cache(maxsize=1)
def _distributions_by_top() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _installed(path: str) -> bool:
    real = os.path.realpath(path)
    return real.startswith(_site_dirs()) or any(p in _SITE_PARTS for p in real.split(os.sep))


def _find(name: str) -> tuple[str | None, bool, bool]:
    """(file, is a package, found) of a module, without importing it (or anything)."""
    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__file__", None), hasattr(module, "__path__"), True
    parent, _, child = name.rpartition(".")
    try:
        if not parent:
            spec = importlib.util.find_spec(name)  # runs the finders only: nothing is executed
        else:
            ppath = _search_path(parent)
            spec = importlib.machinery.PathFinder.find_spec(name, ppath) if ppath is not None else None
    except (ImportError, ValueError, AttributeError):
        spec = None
    if spec is None:
        return None, False, False
    origin = spec.origin if spec.has_location else None
    return origin, spec.submodule_search_locations is not None, True


def _search_path(package: str) -> list[str] | None:
    module = sys.modules.get(package)
    if module is not None:
        path = getattr(module, "__path__", None)
        return list(path) if path is not None else None
    parent, _, _ = package.rpartition(".")
    try:
        if not parent:
            spec = importlib.util.find_spec(package)
        else:
            ppath = _search_path(parent)
            spec = importlib.machinery.PathFinder.find_spec(package, ppath) if ppath is not None else None
    except (ImportError, ValueError, AttributeError):
        return None
    locations = spec.submodule_search_locations if spec is not None else None
    return list(locations) if locations is not None else None


def classify(name: str) -> tuple[str, str | None, bool]:
    """(kind, file, is a package) of a module name: STDLIB, INSTALLED, PROJECT, ABSENT or UNKNOWN
    (a module that exists but has no file to hash, e.g. one built at run time)."""
    top = name.partition(".")[0]
    if top in sys.stdlib_module_names or name in sys.builtin_module_names:
        return STDLIB, None, False
    path, is_package, found = _find(name)
    if not found:
        return ABSENT, None, False
    if path is None or not os.path.isfile(path):
        # a namespace package has no file of its own; anything else without one cannot be keyed
        return (PROJECT if is_package else UNKNOWN), None, is_package
    if _installed(path):
        return INSTALLED, path, is_package
    if os.path.realpath(path).startswith(_stdlib_dirs()):
        return STDLIB, path, is_package
    return PROJECT, path, is_package


def _literal_import(node: ast.Call) -> str | None:
    """The module of `importlib.import_module("x")` or `__import__("x")` with a literal name."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called in ("import_module", "__import__") and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
            return first.value
    return None


def imports_of(path: str, name: str, is_package: bool) -> tuple[list[str], list[str]]:
    """(modules the file imports, names that may be submodules or attributes: `from a import b`
    gives a, and a.b as a maybe). Relative imports are resolved against `name`."""
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return [], []  # the file's hash still keys it; it ran, so a later edit changes that hash
    package = name if is_package else name.rpartition(".")[0]
    sure: list[str] = []
    maybe: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            sure.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else (node.module or "")
            except (ImportError, ValueError):
                continue
            if not base:
                continue
            sure.append(base)
            maybe.extend(f"{base}.{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            found = _literal_import(node)
            if found:
                sure.append(found)
    return sure, maybe


def runtime_references(module: types.ModuleType) -> list[str]:
    """Modules named by a module's globals: imported modules, and where its classes and functions
    were defined (catches `importlib.import_module(name)` with a computed name)."""
    out = []
    own = module.__name__ + "."
    for value in list(vars(module).values()):
        if isinstance(value, types.ModuleType):
            # a package holds every loaded submodule as an attribute, imported by it or not: its
            # own imports of them are in its AST
            if not value.__name__.startswith(own):
                out.append(value.__name__)
        elif isinstance(value, (type, types.FunctionType)):
            owner = getattr(value, "__module__", None)
            if isinstance(owner, str):
                out.append(owner)
    return out


@lru_cache(maxsize=None)
def _distributions(top: str) -> tuple[str, ...] | None:
    """("name==version", ...) of the distributions providing top-level module `top`, or None."""
    try:  # the common case, a distribution named as its module, without scanning every one
        dist = importlib.metadata.distribution(top)
        return (f"{dist.metadata['Name']}=={dist.version}",)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        pass
    names = _distributions_by_top().get(top)
    if not names:
        return None
    out = []
    for name in sorted(set(names)):
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            return None
    return tuple(out)


def code_identity(roots: Iterable[str]) -> dict[str, Any]:
    """The code version of the import closure of `roots` (module names; see the module docstring):
    {"python", "modules": {name: sha256 or null for a namespace package}, "distributions":
    ["name==version"], "absent": [names], "unknown": [names of modules with no file to hash]}."""
    modules: dict[str, str | None] = {}
    dists: set[str] = set()
    absent: set[str] = set()
    unknown: set[str] = set()
    seen: set[str] = set()
    queue: list[tuple[str, bool]] = [(r, False) for r in roots]
    while queue:
        name, optional = queue.pop()
        if name in seen or not name:
            continue
        kind, path, is_package = classify(name)
        if kind == ABSENT and optional:
            continue  # `from a import b` where b is an attribute of a, not a module
        seen.add(name)
        parts = name.split(".")
        queue.extend((".".join(parts[:i]), False) for i in range(1, len(parts)))  # parents run first
        if kind == STDLIB:
            continue
        if kind == ABSENT:
            absent.add(name)
        elif kind == UNKNOWN:
            unknown.add(name)
        elif kind == INSTALLED:
            found = _distributions(parts[0])
            if found is None:  # a file in site-packages that no distribution claims: key its bytes
                modules[name] = file_sha256(path)
            else:
                dists.update(found)
        else:
            modules[name] = file_sha256(path) if path else None
            if path and path.endswith(".py"):
                sure, maybe = imports_of(path, name, is_package)
                queue.extend((m, False) for m in sure)
                queue.extend((m, True) for m in maybe)
            loaded = sys.modules.get(name)
            if loaded is not None:
                queue.extend((m, True) for m in runtime_references(loaded))
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "modules": dict(sorted(modules.items())),
        "distributions": sorted(dists),
        "absent": sorted(absent),
        "unknown": sorted(unknown),
    }
