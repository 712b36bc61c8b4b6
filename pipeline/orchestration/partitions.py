"""Several domain partitions in one run: the value type and the IO manager that make it possible.

The per-domain assets (`candidate_rows`, `verified_rows`) carry `BackfillPolicy.single_run()`, so a
run may cover a range of domains (the UI's `build_dataset` job covers them all; `cacheeval build`
still runs one domain per run). Over one domain an asset's value is that domain's record; over
several it is a dict {domain: record}. `per_domain` is the Dagster type that accepts both, and
`PartitionedFilesystemIOManager` stores each domain's record in its own file either way, so every
reader loads the same per-partition files whatever run wrote them.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, TypeVar

from dagster import (BackfillPolicy, BetaWarning, ConfigurableIOManagerFactory, DagsterType, InitResourceContext,
                     OutputContext, PartitionsDefinition, asset)
# Not exported at the top of dagster; FilesystemIOManager (its public factory) builds the same class.
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager

T = TypeVar("T")


def per_domain_asset(partitions_def: PartitionsDefinition, **kwargs):
    """@asset for a per-domain asset: partitioned by domain, and a run may cover several domains
    (BackfillPolicy.single_run, a beta parameter of Dagster: its warning is not news at every import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return asset(partitions_def=partitions_def, backfill_policy=BackfillPolicy.single_run(), **kwargs)


def per_domain(cls: type, what: str) -> DagsterType:
    """The Dagster type of a per-domain asset's value: a `cls`, or {domain: cls} over several domains."""

    def check(_context, value: Any) -> bool:
        if isinstance(value, cls):
            return True
        return isinstance(value, dict) and bool(value) and all(
            isinstance(k, str) and isinstance(v, cls) for k, v in value.items())

    return DagsterType(type_check_fn=check, name=f"{cls.__name__}PerDomain", typing_type=Any,
                       description=f"{what}: one {cls.__name__} for one domain, or {{domain: {cls.__name__}}} "
                                   "when a run covers several domains")


def by_domain(value: T | Mapping[str, T]) -> dict[str, T]:
    """A per-domain value as {domain: record}, whether the run covered one domain or several
    (each record names its own domain)."""
    if isinstance(value, Mapping):
        return dict(value)
    return {value.domain: value}  # type: ignore[attr-defined]


def one_or_many(partition_keys: list[str], values: Mapping[str, T]) -> T | dict[str, T]:
    """What a per-domain asset returns: the record itself over one domain, {domain: record} over several."""
    if len(partition_keys) == 1:
        return values[partition_keys[0]]
    return {k: values[k] for k in partition_keys}


def for_each_domain(context, make: Callable[[str], tuple[T, dict]]) -> T | dict[str, T]:
    """Run `make(domain) -> (record, metadata)` for every domain of the run, attach each domain's
    metadata to that partition's materialisation, and return what the asset returns."""
    keys = list(context.partition_keys)
    values = {}
    for key in keys:
        values[key], metadata = make(key)
        try:
            context.add_asset_metadata(metadata, partition_key=key)
        except AttributeError:  # a directly invoked asset (tests): its context holds no step to attach to
            if len(keys) > 1:
                raise
            context.add_output_metadata(metadata)
    return one_or_many(keys, values)


class _PerPartitionPickles(PickledObjectFilesystemIOManager):
    """Dagster's pickle-file IO manager, except that an output covering several partitions (a dict
    keyed by partition) is written as one file per partition instead of being refused."""

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if not context.has_asset_partitions or len(context.asset_partition_keys) == 1:
            super().handle_output(context, obj)
            return
        paths = self._get_paths_for_partitions(context)
        if not isinstance(obj, Mapping) or set(obj) != set(paths):
            raise TypeError(f"{context.asset_key.to_user_string()}: a run over partitions {sorted(paths)} must "
                            f"return {{partition: value}} for exactly those partitions")
        for key, path in sorted(paths.items()):
            self.make_directory(path.parent)
            context.log.debug(self.get_writing_output_log_message(path))
            self.dump_to_path(context=context, obj=obj[key], path=path)


class PartitionedFilesystemIOManager(ConfigurableIOManagerFactory):
    """Pickles under `base_dir` (default: the Dagster instance's storage folder), one file per
    asset, and one per partition of a partitioned asset even when one run wrote several."""

    base_dir: str | None = None

    def create_io_manager(self, context: InitResourceContext) -> _PerPartitionPickles:
        return _PerPartitionPickles(base_dir=self.base_dir or context.instance.storage_directory())
