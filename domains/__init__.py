"""Domain registry. Each domain is one module exposing `SPEC: DomainSpec`, listed in
configs/domains.yaml; no asset names a domain. Modules are imported on first use, so one domain's
import never depends on another's."""
from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from domains.base import DomainSpec
from pipeline.core.registry import UnknownNameError


def domain_names() -> list[str]:
    """Domain names in configuration order (the order of the sampling matrix)."""
    from pipeline.core.config import load_domains_config

    return list(load_domains_config())


@lru_cache(maxsize=None)
def get_domain(name: str) -> DomainSpec:
    from pipeline.core.config import load_domains_config

    modules = load_domains_config()
    if name not in modules:
        close = difflib.get_close_matches(name, list(modules), n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownNameError(f"Unknown domain '{name}'.{hint} Available: {', '.join(sorted(modules))}")
    spec = importlib.import_module(modules[name]).SPEC
    if spec.name != name:
        raise ValueError(f"configs/domains.yaml: domain '{name}' points at {modules[name]}, whose SPEC is named '{spec.name}'")
    return spec


def all_domains() -> list[DomainSpec]:
    return [get_domain(n) for n in domain_names()]
