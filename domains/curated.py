"""Reading the team's curated sources (sources/curated/*.yaml): one loader for every domain.

Every problem is a one-line InputError naming the file (relative to the project when it lies in
it) and how to fix it: a missing file, invalid YAML, a top level that is not a mapping, missing
top-level sections. Checks of individual records stay with the domain that knows them, using
`curated_error` for the same message shape.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pipeline.core.config import ConfigError, read_yaml
from pipeline.core.errors import InputError
from pipeline.core.paths import PROJECT_ROOT


def label(path: Path) -> str:
    """`sources/curated/x.yaml` for project files, the full path otherwise (e.g. a test's file)."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def curated_error(path: Path | str, record: str, problem: str, fix: str) -> InputError:
    """`<file>:<record>: <problem>. <fix>` as an InputError."""
    where = path if isinstance(path, str) else label(path)
    return InputError(f"{where}:{record}: {problem}. {fix}")


def read_curated(path: Path, required: Iterable[str] = ()) -> dict[str, Any]:
    """The parsed top-level mapping of a curated YAML file (read by the project's one YAML loader),
    with `required` sections present."""
    where = label(path)
    try:
        data = read_yaml(path, where, restore="Restore it from git")
    except ConfigError as exc:  # a curated file is input: the same line, as an InputError
        raise InputError(str(exc).rstrip(".")) from None
    need = list(required)
    if not isinstance(data, dict):
        raise InputError(f"{where}: top level must hold {', '.join(need) or 'a mapping'}. Add the missing section")
    missing = [k for k in need if k not in data]
    if missing:
        raise InputError(f"{where}: top level must hold {', '.join(need)}; missing {', '.join(missing)}. "
                         "Add the missing section")
    return data
