"""Typed configuration: YAML under configs/ parsed into frozen objects; unknown keys are errors."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from pipeline.core.errors import CacheEvalError
from pipeline.core.paths import CONFIGS, PROJECT_ROOT
from pipeline.core.registry import Registry

SAMPLING_FILE = CONFIGS / "sampling.yaml"


class ConfigError(CacheEvalError, ValueError):
    """A configuration file is wrong; the message names the file and the key, and the CLI prints it
    as one line (a ValueError too, for callers that catch bad values)."""


def rel(path: Path) -> str:
    """`configs/x.yaml` for project files, the full path otherwise (e.g. a test's file)."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def read_yaml(path: Path | str, where: str | None = None,
              restore: str = "Restore it from git or pass an existing file") -> Any:
    """The parsed YAML of a file: the project's one YAML loader, for configs/, the curated sources
    and the prompt files alike. A missing, unreadable or malformed file is a one-line ConfigError
    `<where>: <problem>. <fix>.`, `where` naming the file (default: its path) and `restore` the fix
    for a file that is missing or unreadable. yaml is imported here, on first use, so that a command
    reading no YAML (`cacheeval eval`) never loads it."""
    import yaml

    where = where or str(path)
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: file not found. {restore}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read ({exc}). {restore}.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: invalid YAML: {str(exc).splitlines()[0]}. Fix the syntax.") from None


def check_keys(where: str, data: Mapping[str, Any], allowed: set[str], required: set[str] = frozenset()) -> None:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}.")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}. Allowed: {', '.join(sorted(allowed))}.")
    missing = sorted(required - set(data))
    if missing:
        raise ConfigError(f"{where}: missing key(s) {', '.join(missing)}.")


@dataclass(frozen=True)
class Profile:
    """A sampling profile: the exact number of rows per (domain, label) cell and the split sizes."""

    name: str
    description: str
    labels: tuple[str, ...]
    matrix: Mapping[str, Mapping[str, int]]  # domain → label → quota
    splits: Mapping[str, int]                 # train/dev/test → rows
    method_mix: Mapping[str, int]
    reference_caches: bool = True             # score the reference caches on the build (evaluation group)

    @property
    def total(self) -> int:
        return sum(sum(cells.values()) for cells in self.matrix.values())

    def cells(self) -> list[tuple[str, str, int]]:
        return [(d, lab, n) for d, cells in self.matrix.items() for lab, n in cells.items()]


def _split_sizes(total: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """Largest-remainder rounding, ties broken by split name order train, dev, test."""
    order = ["train", "dev", "test"]
    raw = {k: total * float(fractions[k]) for k in order}
    sizes = {k: int(raw[k]) for k in order}
    rest = total - sum(sizes.values())
    for k in sorted(order, key=lambda k: (-(raw[k] - sizes[k]), order.index(k)))[:rest]:
        sizes[k] += 1
    return sizes


@lru_cache(maxsize=None)
def load_profiles(path: Path = SAMPLING_FILE) -> dict[str, Profile]:
    data = read_yaml(path)
    check_keys(str(path), data, {"labels", "method_mix", "profiles"}, {"labels", "method_mix", "profiles"})
    labels = tuple(data["labels"])
    raw = data["profiles"]
    out: dict[str, Profile] = {}
    for name, spec in raw.items():
        where = f"{path}: profiles.{name}"
        check_keys(where, spec, {"description", "splits", "matrix", "base", "min_cell", "fixed_cell", "split_fractions",
                                  "reference_caches"},
                   {"description"})
        if "matrix" in spec:
            matrix = {}
            for dom, row in spec["matrix"].items():
                if len(row) != len(labels):
                    raise ConfigError(f"{where}.matrix.{dom}: {len(row)} numbers for {len(labels)} labels.")
                matrix[dom] = dict(zip(labels, (int(v) for v in row)))
        else:
            base = spec.get("base")
            if base not in raw or "matrix" not in raw[base]:
                raise ConfigError(f"{where}: base '{base}' is not a profile with a matrix.")
            base_rows = raw[base]["matrix"]
            matrix = {}
            for dom, row in base_rows.items():
                cells = dict(zip(labels, (int(v) for v in row)))
                if "fixed_cell" in spec:
                    cells = {lab: int(spec["fixed_cell"]) for lab in cells}
                if "min_cell" in spec:
                    cells = {lab: max(n, int(spec["min_cell"])) for lab, n in cells.items()}
                matrix[dom] = cells
        total = sum(sum(c.values()) for c in matrix.values())
        if "splits" in spec:
            splits = {k: int(v) for k, v in spec["splits"].items()}
        elif "split_fractions" in spec:
            splits = _split_sizes(total, spec["split_fractions"])
        else:
            raise ConfigError(f"{where}: give either splits or split_fractions.")
        if sorted(splits) != ["dev", "test", "train"] or sum(splits.values()) != total:
            raise ConfigError(f"{where}: splits {splits} must be train/dev/test summing to {total}.")
        refs = spec.get("reference_caches", True)
        if not isinstance(refs, bool):
            raise ConfigError(f"{where}.reference_caches: expected true or false, got {refs!r}.")
        out[name] = Profile(name, spec["description"], labels, matrix, splits, dict(data["method_mix"]), refs)
    return out


def matrix_domains(path: Path = SAMPLING_FILE) -> tuple[str, ...]:
    """The domains of the sampling matrix, in the order its rows are written in the file's first
    profile (v1.1). That order is the domain order everywhere (partitions, selection, reports), so
    it decides output bytes. Every profile must hold the same domain rows."""
    profiles = load_profiles(path)
    if not profiles:
        raise ConfigError(f"{rel(path)}: no profiles. Add a profile with a matrix.")
    first = next(iter(profiles.values()))
    order = tuple(first.matrix)
    for prof in profiles.values():
        extra = [d for d in prof.matrix if d not in first.matrix]
        if extra:
            raise ConfigError(f"{rel(path)}: profiles.{prof.name}.matrix has a row for '{extra[0]}' that "
                              f"profiles.{first.name}.matrix lacks. Give every profile the same domain rows.")
        lacking = [d for d in order if d not in prof.matrix]
        if lacking:
            raise ConfigError(f"{rel(path)}: profiles.{prof.name}.matrix lacks the row for '{lacking[0]}'. "
                              "Give every profile the same domain rows.")
    return order


def load_profile(name: str) -> Profile:
    """The named profile of configs/sampling.yaml; an unknown name lists the available ones."""
    reg: Registry[Profile] = Registry("profile")
    for k, v in load_profiles().items():
        reg.register(k, v)
    return reg[name]
