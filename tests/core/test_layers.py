"""Imports point one way: no cycle between project modules, no domain importing another domain,
and no shared machinery (domains/lm, domains/verify, domains/corpora, ...) importing a domain.

The graph is read from the source with `ast`, imports inside functions included (a lazy import
that closes a cycle is still a cycle) and `if TYPE_CHECKING:` blocks left out (never run).
Importing `a.b.c` runs `a` and `a.b` first, so it is an edge to each of them too; a module's
import of its own parent package is not counted (a package that imports its submodules, which
use what it defined first, is the ordinary layout, and Python resolves it).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from domains import all_domains, domain_names

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "domains", "sources", "assets")


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = project_modules()


def _runs_never(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported_names(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in the file: `import a.b` gives a.b; `from a import b`
    gives a and a.b (b may be a submodule); relative imports are resolved against `module`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for top in ast.walk(tree) if _runs_never(top) for b in top.body for n in ast.walk(b)}
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def edges(module: str) -> dict[str, int]:
    """Project modules `module` causes to run (target and its ancestor packages) -> first line."""
    out: dict[str, int] = {}
    for line, name in imported_names(MODULES[module], module):
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            target = ".".join(parts[:i])
            if target in MODULES and target != module and not module.startswith(target + "."):
                out.setdefault(target, line)
    return out


GRAPH = {m: edges(m) for m in MODULES}


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One cycle as a path [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def describe(cycle: list[str]) -> str:
    return " -> ".join(f"{a} (line {GRAPH[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_the_reader_and_the_cycle_finder(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text("from typing import TYPE_CHECKING\nfrom . import sibling\nimport x.y\n"
                      "if TYPE_CHECKING:\n    from never import ran\n"
                      "def f():\n    from domains.base import Candidate\n", encoding="utf-8")
    assert imported_names(source, "pkg.sub.mod") == [
        (1, "typing"), (1, "typing.TYPE_CHECKING"), (2, "pkg.sub"), (2, "pkg.sub.sibling"), (3, "x.y"),
        (7, "domains.base"), (7, "domains.base.Candidate")]
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 1}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None


def test_no_import_cycle_between_project_modules():
    assert len(GRAPH) > 50   # the walk found the project
    cycle = find_cycle(GRAPH)
    assert cycle is None, f"import cycle: {describe(cycle)}"


def _owner(module: str, domain_modules: dict[str, str]) -> str | None:
    """The domain a module belongs to (its own module, or a module of its package), or None."""
    for root, domain in domain_modules.items():
        if module == root or module.startswith(root + "."):
            return domain
    return None


def test_no_domain_imports_another_domain_and_no_shared_module_imports_a_domain():
    # The registry names a domain after its module or package directly under domains/.
    domain_modules = {f"domains.{name}": name for name in domain_names()}
    assert len(domain_modules) >= 10 and all(m in MODULES for m in domain_modules)
    problems = []
    for module, targets in sorted(GRAPH.items()):
        if not module.startswith("domains."):
            continue
        mine = _owner(module, domain_modules)
        for target, line in sorted(targets.items()):
            theirs = _owner(target, domain_modules)
            if theirs is not None and theirs != mine:
                who = f"domain {mine}" if mine else "shared module"
                problems.append(f"{module} (line {line}), a {who}, imports domain {theirs} ({target})")
    assert not problems, "\n".join(problems)


def test_the_lm_package_names_no_domain():
    # Generic machinery: a domain gives its seeds through DomainSpec.lm; no string here names one.
    names = {spec.name for spec in all_domains()}
    for path in sorted((ROOT / "domains" / "lm").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value not in names, f"{path.name}:{node.lineno} names domain '{node.value}'"


FIRST_IMPORT = """
import importlib, sys, traceback
names = sys.argv[1:]
project = tuple(n.split('.')[0] for n in names)
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m.split('.')[0] in project]:
        del sys.modules[loaded]     # every module is imported first, before any other project module
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_first():
    # A cycle the graph misses (an import made by name at run time) fails when its module is the
    # first one imported: each module is imported with no project module loaded before it.
    names = sorted(m for m in MODULES if not m.endswith("__main__"))
    done = subprocess.run([sys.executable, "-c", FIRST_IMPORT, *names], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
