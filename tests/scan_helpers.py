"""Reading the project's source for a use that one module alone may make: the environment is read
and written only by pipeline/core/settings.py, YAML is loaded only by pipeline/core/config.py.

The files are read with `ast`, so a comment or a string that spells the call is not a use, and a
hit is reported as `<file>:<line>: <the line>`.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "sources", "domains", "assets")


def aliases(tree: ast.AST, module: str) -> set[str]:
    """The names a file binds `module` to (`import os`, `import os as o`)."""
    return {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
            for a in node.names if a.name == module}


def offenders(root: Path, packages: Iterable[str], allowed: str,
              uses: Callable[[ast.AST], Iterable[int]]) -> list[str]:
    """`<file>:<line>: <source line>` for each line `uses(tree)` names in the .py files of
    `packages` under `root`, the file `allowed` (relative to `root`) left out."""
    out = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == allowed:
                continue
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            out += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in sorted(set(uses(ast.parse(text, rel))))]
    return out
