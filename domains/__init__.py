"""Domain registry. Each domain is one module exposing `SPEC: DomainSpec`, listed in
configs/domains.yaml; no asset names a domain."""
from __future__ import annotations

import importlib
from functools import lru_cache

from domains.base import DomainSpec
from pipeline.registry import Registry


@lru_cache(maxsize=1)
def registry() -> Registry[DomainSpec]:
    from pipeline.config import load_domains_config

    reg: Registry[DomainSpec] = Registry("domain")
    for name, module in load_domains_config().items():
        spec = importlib.import_module(module).SPEC
        if spec.name != name:
            raise ValueError(f"configs/domains.yaml: domain '{name}' points at {module}, whose SPEC is named '{spec.name}'")
        reg.register(name, spec)
    return reg


def get_domain(name: str) -> DomainSpec:
    return registry()[name]


def domain_names() -> list[str]:
    """Domain names in configuration order (the order of the sampling matrix)."""
    from pipeline.config import load_domains_config

    return list(load_domains_config())
