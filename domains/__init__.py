"""Domain registry, by discovery: nothing lists the domains.

A domain is a module or package directly under `domains/` that defines `SPEC: DomainSpec`, named
after its domain (`domains/creative.py`, `domains/tool/`). The registry imports every module of the
package and keeps those with a SPEC; the support modules (base, check, curated, families, text,
corpora, lm, verify) define none and are passed over. The domains are ordered by the rows of the
sampling matrix (configs/sampling.yaml), an order that decides output bytes. A matrix row without a
domain, or a domain without a row, is a one-line ConfigError as soon as the registry loads.

`get_domain`, `domain_names` and `all_domains` answer from the active registry: the project's, or
one a test makes active with `use_registry` (more packages searched, another sampling file).
"""
from __future__ import annotations

import importlib
import pkgutil
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Iterator, Sequence

from domains.base import DomainSpec
from pipeline.core.config import SAMPLING_FILE, ConfigError, matrix_domains, rel
from pipeline.core.registry import Registry

PACKAGE = "domains"


class DomainRegistry:
    """The domains defined in `packages` (importable package names), in the order of the matrix
    rows of `sampling`. Discovery and the matrix check run once, on first use."""

    def __init__(self, packages: Sequence[str] = (PACKAGE,), sampling: Path = SAMPLING_FILE) -> None:
        self.packages = tuple(packages)
        self.sampling = Path(sampling)

    def discover(self) -> dict[str, tuple[str, DomainSpec]]:
        """Domain name -> (file, SPEC) of every module or package of `packages` that has a SPEC,
        in package then module-name order."""
        found: dict[str, tuple[str, DomainSpec]] = {}
        for package in self.packages:
            for info in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name):
                if info.name.startswith("_"):
                    continue
                module = importlib.import_module(f"{package}.{info.name}")
                spec = getattr(module, "SPEC", None)
                if spec is None:
                    continue
                where = rel(Path(module.__file__))
                if not isinstance(spec, DomainSpec):
                    raise ConfigError(f"{where}: SPEC is a {type(spec).__name__}, not a DomainSpec. "
                                      "Make it a domains.base.DomainSpec, or rename it.")
                if spec.name != info.name:
                    raise ConfigError(f"{where}: SPEC is named '{spec.name}' in module '{info.name}'. "
                                      "Name the module after its domain.")
                if spec.name in found:
                    raise ConfigError(f"{where}: domain '{spec.name}' is already defined in {found[spec.name][0]}. "
                                      "Keep one of them.")
                found[spec.name] = (where, spec)
        return found

    @cached_property
    def _loaded(self) -> tuple[tuple[str, ...], Registry[DomainSpec]]:
        found = self.discover()
        order = matrix_domains(self.sampling)
        folders = [p.replace(".", "/") + "/" for p in self.packages]
        for name in order:
            if name not in found:
                raise ConfigError(f"{rel(self.sampling)}: the matrix has a row for domain '{name}', but no module "
                                  f"under {' or '.join(folders)} defines it. Add {folders[0]}{name}.py exposing "
                                  "SPEC, or remove the row.")
        for name, (where, _) in found.items():
            if name not in order:
                raise ConfigError(f"{rel(self.sampling)}: domain '{name}' ({where}) has no row in the matrix. "
                                  f"Add a row '{name}: [...]' with one quota per label.")
        registry: Registry[DomainSpec] = Registry("domain")
        for name in order:
            registry.register(name, found[name][1])
        return order, registry

    def names(self) -> list[str]:
        """Domain names in matrix order."""
        return list(self._loaded[0])

    def get(self, name: str) -> DomainSpec:
        """The domain's SPEC; an unknown name suggests close matches and lists every domain."""
        return self._loaded[1][name]


_active = DomainRegistry()


@contextmanager
def use_registry(registry: DomainRegistry) -> Iterator[DomainRegistry]:
    """Make `registry` the one `get_domain`, `domain_names` and `all_domains` answer from, for the
    block (a test adding a domain from a temporary package, say); the previous one comes back after."""
    global _active
    before, _active = _active, registry
    try:
        yield registry
    finally:
        _active = before


def domain_names() -> list[str]:
    """Domain names in the order of the sampling matrix's rows."""
    return _active.names()


def get_domain(name: str) -> DomainSpec:
    """The registered domain `name` (UnknownNameError, with close matches, for any other name)."""
    return _active.get(name)


def all_domains() -> list[DomainSpec]:
    """Every registered domain, in matrix order."""
    return [get_domain(n) for n in domain_names()]
