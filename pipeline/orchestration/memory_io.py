"""The IO manager of an in-process build (`cacheeval build`, `check`, `evolve`): every asset value
held in this process, by asset key and partition, across the runs of one build (the sources, each
domain, the outputs), instead of pickled to a storage folder and read back by every step that needs
it (a third of a warm `cacheeval check`, whose steps come from the step cache).

It stores and loads what Dagster's filesystem IO manager does: a partitioned asset's value per
partition (a run over several partitions returns {partition: value}, stored one by one, as
PartitionedFilesystemIOManager does), one partition loaded as its value, several as {partition:
value}, none as None. A reader gets the stored object itself, not a copy: no asset changes a value
it reads (a mutation would show as a byte difference in `cacheeval check`, which compares every
output with the committed one). The UI keeps the pickle files (PartitionedFilesystemIOManager): its
runs are separate processes, and their values outlive them.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from dagster import InputContext, IOManager, OutputContext


class MemoryIOManager(IOManager):
    """Asset values by (asset key, partition or None), an op's output inside a graph asset by (run,
    step, output), for the life of this object."""

    def __init__(self) -> None:
        self.values: dict[tuple[tuple[str, ...], str | None], Any] = {}
        self.on_output: Callable[[str], None] | None = None  # told each asset's name once its value is stored

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        self._store(context, obj)
        if self.on_output is not None and context.has_asset_key:
            self.on_output(context.asset_key.path[-1])

    def _store(self, context: OutputContext, obj: Any) -> None:
        if not context.has_asset_key:   # an op's output inside a graph asset: by run, step and output
            self.values[(tuple(context.get_identifier()), None)] = obj
            return
        key = tuple(context.asset_key.path)
        if not context.has_asset_partitions:
            self.values[(key, None)] = obj
            return
        parts = list(context.asset_partition_keys)
        if len(parts) == 1:
            self.values[(key, parts[0])] = obj
            return
        if not isinstance(obj, Mapping) or set(obj) != set(parts):
            raise TypeError(f"{context.asset_key.to_user_string()}: a run over partitions {sorted(parts)} must "
                            f"return {{partition: value}} for exactly those partitions")
        for part in parts:
            self.values[(key, part)] = obj[part]

    def load_input(self, context: InputContext) -> Any:
        if not context.has_asset_key:
            return self._get(context, (tuple(context.upstream_output.get_identifier()), None))
        key = tuple(context.asset_key.path)
        if not context.has_asset_partitions:
            return self._get(context, (key, None))
        parts = list(context.asset_partition_keys)
        if not parts:
            return None
        if len(parts) == 1:
            return self._get(context, (key, parts[0]))
        return {part: self.values[(key, part)] for part in parts if (key, part) in self.values}

    def _get(self, context: InputContext, where: tuple) -> Any:
        if where not in self.values:
            what = context.asset_key.to_user_string() if context.has_asset_key else "/".join(where[0])
            part = f" (partition {where[1]})" if where[1] is not None else ""
            raise KeyError(f"{what}{part} was not materialised in this build")
        return self.values[where]
