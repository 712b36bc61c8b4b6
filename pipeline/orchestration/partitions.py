"""Several domains in one run: the value type and the IO manager that make it possible.

The per-domain assets (`candidate_rows`, `verified_rows`, made with `per_domain_asset`) come in two
forms running the same code. Partitioned by domain (the asset modules' own): `cacheeval build` runs
them one domain per run (`domain_job`); they carry `BackfillPolicy.single_run()`, so a run may also
cover a range of domains. Unpartitioned (`unpartitioned(asset)`, the form the Dagster UI's
definitions hold, pipeline/app/ui_job.py): one step runs every domain in turn, so "Materialize all"
is one run with no partition to choose. Over one domain a partitioned asset's value is that
domain's record; over several, and always in the unpartitioned form, it is a dict {domain: record}.
`per_domain` is the Dagster type that accepts both, and `PartitionedFilesystemIOManager` stores each
domain's record of a partitioned run in its own file, so every reader loads the same per-partition
files whatever run wrote them. A reader of all domains (`selected_rows`) gets {domain: record} from
either form.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, Sequence, TypeVar

from dagster import (AssetKey, AssetsDefinition, BackfillPolicy, BetaWarning, ConfigurableIOManagerFactory,
                     DagsterType, InitResourceContext, MetadataValue, OutputContext, PartitionsDefinition, asset)
# Not exported at the top of dagster; FilesystemIOManager (its public factory) builds the same class.
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager

from pipeline.orchestration.asset_metadata import table

T = TypeVar("T")


# How to make each per-domain asset's unpartitioned form, by asset key (filled by per_domain_asset).
_UNPARTITIONED_FORMS: dict[AssetKey, Callable[[], AssetsDefinition]] = {}


def per_domain_asset(partitions_def: PartitionsDefinition, **kwargs):
    """@asset for a per-domain asset: partitioned by domain, and a run may cover several domains
    (BackfillPolicy.single_run, a beta parameter of Dagster: its warning is not news at every import).
    `unpartitioned(the asset)` makes the same asset without partitions."""

    def decorate(fn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BetaWarning)
            partitioned = asset(partitions_def=partitions_def, backfill_policy=BackfillPolicy.single_run(), **kwargs)(fn)
        _UNPARTITIONED_FORMS[partitioned.key] = lambda: asset(**kwargs)(fn)
        return partitioned

    return decorate


def unpartitioned(assets_def: AssetsDefinition) -> AssetsDefinition:
    """A per-domain asset (made with per_domain_asset) without partitions: the same key, group, types
    and code, its one step running every domain (`for_each_domain`), its value {domain: record}."""
    return _UNPARTITIONED_FORMS[assets_def.key]()


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
    metadata to that partition's materialisation, and return what the asset returns. A step with
    no partition (the unpartitioned form, `unpartitioned`) covers every registered domain."""
    if not (context.has_partition_key or context.has_partition_key_range):
        from domains import domain_names

        return for_every_domain(context, domain_names(), make)
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


def for_every_domain(context, domains: Sequence[str], make: Callable[[str], tuple[T, dict]]) -> dict[str, T]:
    """The unpartitioned form of a per-domain asset's step: `make(domain) -> (record, metadata)` for
    every domain in turn; returns {domain: record}. The materialisation's metadata gathers the
    domains' (`domain_metadata`), and each domain is logged as it finishes."""
    values, metadata = {}, {}
    for i, domain in enumerate(domains, 1):
        values[domain], metadata[domain] = make(domain)
        context.log.info(f"[{i}/{len(domains)}] {domain} done")
    context.add_output_metadata(domain_metadata(metadata))
    return values


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, MetadataValue) else value


TABLE_COLUMNS = 8  # counts by at most this many keys read as a table (domain x key); more as JSON


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _totals(rows: list[list[Any]]) -> list[Any]:
    return ["**total**", *(sum(r[i] for r in rows) for i in range(1, len(rows[0])))]


def domain_metadata(per_domain: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One materialisation's metadata from each domain's: the numbers as one Markdown table
    (`per_domain`: a line per domain, a column per number, totals), counts by a few keys as a table
    (a line per domain, a column per key), a text every domain shares as itself, anything else as
    JSON {domain: value}."""
    domains = list(per_domain)
    names = list(dict.fromkeys(k for d in domains for k in per_domain[d]))
    values = {n: {d: _plain(per_domain[d].get(n)) for d in domains} for n in names}
    numbers = [n for n in names if all(_number(v) for v in values[n].values())]
    out: dict[str, Any] = {}
    if domains and numbers:
        body = [[d, *(values[n][d] for n in numbers)] for d in domains]
        out["per_domain"] = MetadataValue.md(table(["domain", *numbers], [*body, _totals(body)]))
    for n in names:
        if n in numbers:
            continue
        vs = values[n].values()
        keys = sorted({k for v in vs if isinstance(v, Mapping) for k in v})
        if len({repr(v) for v in vs}) == 1 and isinstance(next(iter(vs)), str):
            out[n] = next(iter(vs))
        elif keys and len(keys) <= TABLE_COLUMNS and all(
                isinstance(v, Mapping) and all(_number(x) for x in v.values()) for v in vs):
            body = [[d, *(values[n][d].get(k, 0) for k in keys)] for d in domains]
            out[n] = MetadataValue.md(table(["domain", *keys], [*body, _totals(body)]))
        else:
            out[n] = MetadataValue.json(values[n])
    return out


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
