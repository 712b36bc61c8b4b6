"""Imports point one way: the layer contract of pipeline/README.md (a layer imports only from the
layers below it, read from that file's table), no private name crossing a package, no cycle between
project modules, no domain importing another domain, and no shared machinery (domains/lm,
domains/verify, domains/corpora, ...) importing a domain.

The graph is read from the source with `ast`, imports inside functions included (a lazy import
that closes a cycle is still a cycle; so is `importlib.import_module("x")` with a literal name) and
`if TYPE_CHECKING:` blocks left out (never run).
Importing `a.b.c` runs `a` and `a.b` first, so it is an edge to each of them too; a module's
import of its own parent package is not counted (a package that imports its submodules, which
use what it defined first, is the ordinary layout, and Python resolves it).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from domains import all_domains, domain_names

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "domains", "sources", "assets")
DYNAMIC_IMPORTS = {"importlib.import_module", "import_module", "__import__"}


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
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and ast.unparse(node.func) in DYNAMIC_IMPORTS):
            out.append((node.lineno, node.args[0].value))
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
                      "def f():\n    from domains.base import Candidate\n"
                      "    importlib.import_module('pipeline.app.cli')\n", encoding="utf-8")
    assert imported_names(source, "pkg.sub.mod") == [
        (1, "typing"), (1, "typing.TYPE_CHECKING"), (2, "pkg.sub"), (2, "pkg.sub.sibling"), (3, "x.y"),
        (7, "domains.base"), (7, "domains.base.Candidate"), (8, "pipeline.app.cli")]
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 1}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None


# ---------------------------------------------------------------- the layer contract

LAYER_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([\w.]+)`\s*\|[^|]*\|\s*(.*?)\s*\|\s*$")


def layer_map(text: str) -> tuple[list[str], dict[str, set[str] | None]]:
    """The layer table of pipeline/README.md: packages bottom to top, and what each may import
    (None: every package below it)."""
    order, allowed = [], {}
    for line in text.splitlines():
        m = LAYER_ROW.match(line)
        if not m:
            continue
        assert int(m.group(1)) == len(order), f"pipeline/README.md: layer {m.group(1)} out of order"
        order.append(m.group(2))
        names = re.findall(r"`([\w.]+)`", m.group(3))
        allowed[m.group(2)] = None if "every package" in m.group(3) else set(names)
    return order, allowed


def layer_of(module: str, order: list[str]) -> str | None:
    """The package of `module` in the stack (the longest listed prefix; `pipeline` itself is core)."""
    if module == "pipeline":
        return order[0]
    found = [p for p in order if module == p or module.startswith(p + ".")]
    return max(found, key=len) if found else None


def layer_violations(graph: dict[str, dict[str, int]], files: dict[str, Path], order: list[str],
                     allowed: dict[str, set[str] | None]) -> list[str]:
    """file:line of every import that goes up a layer or to a package its row does not list."""
    out = []
    for module, targets in sorted(graph.items()):
        mine = layer_of(module, order)
        for target, line in sorted(targets.items(), key=lambda kv: kv[1]):
            theirs = layer_of(target, order)
            if mine is None or theirs is None or theirs == mine:
                continue
            may = allowed[mine] if allowed[mine] is not None else set(order[:order.index(mine)])
            if theirs not in may:
                way = "up" if order.index(theirs) > order.index(mine) else "across"
                out.append(f"{files[module].relative_to(ROOT)}:{line}: {module} (layer {order.index(mine)} "
                           f"{mine}) imports {target} (layer {order.index(theirs)} {theirs}): goes {way}")
    return out


ORDER, ALLOWED = layer_map((ROOT / "pipeline" / "README.md").read_text(encoding="utf-8"))


def test_the_layer_map_lists_every_package_and_only_lower_layers():
    assert len(ORDER) >= 10 and ORDER[0] == "pipeline.core" and ORDER[-1] == "pipeline.app"
    for package, may in ALLOWED.items():
        above = set(may or ()) - set(ORDER[:ORDER.index(package)])
        assert not above, f"pipeline/README.md: {package} may import {sorted(above)}, which is not below it"
    unplaced = sorted(m for m in MODULES if layer_of(m, ORDER) is None)
    assert not unplaced, f"modules in no layer of pipeline/README.md: {unplaced}"


def test_no_import_goes_up_a_layer():
    problems = layer_violations(GRAPH, MODULES, ORDER, ALLOWED)
    assert not problems, "\n".join(problems)


def test_a_planted_upward_import_is_found_with_its_file_line_and_layers(tmp_path):
    planted = tmp_path / "pipeline" / "harness" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("import json\n\ndef f():\n    from pipeline.stages import assembly\n", encoding="utf-8")
    graph = {**GRAPH, "pipeline.harness.planted": {"pipeline.stages.assembly": 4}}
    files = {**MODULES, "pipeline.harness.planted": ROOT / "pipeline" / "harness" / "planted.py"}
    problems = layer_violations(graph, files, ORDER, ALLOWED)
    assert problems == ["pipeline/harness/planted.py:4: pipeline.harness.planted (layer 4 pipeline.harness) imports "
                        "pipeline.stages.assembly (layer 5 pipeline.stages): goes up"]
    # and the reader finds it in the file, inside the function
    assert (4, "pipeline.stages") in imported_names(planted, "pipeline.harness.planted")


def test_no_import_cycle_between_project_modules():
    assert len(GRAPH) > 50   # the walk found the project
    cycle = find_cycle(GRAPH)
    assert cycle is None, f"import cycle: {describe(cycle)}"


# ---------------------------------------------------------------- private names

def _package(module: str) -> str:
    """The package a private name belongs to: the layer's package, one level down inside domains
    (each domain, verify, corpora, lm) and pipeline (core, services, ...)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in ("pipeline", "domains") and len(parts) > 1 else parts[0]


def private_crossings(path: Path, module: str, root: Path = ROOT) -> list[str]:
    """`from X import _name`, and `alias._name` where alias is a module of another package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mine, aliases, out = _package(module), {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if node.module.split(".")[0] in PACKAGES and _package(node.module) != mine:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        out.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {a.name}")
                    aliases[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES and _package(a.name) != mine and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            out.append(f"{path.relative_to(root)}:{node.lineno}: {node.value.id}.{node.attr} "
                       f"({aliases[node.value.id]} is another package)")
    return out


def test_no_private_name_crosses_a_package():
    problems = [p for module, path in sorted(MODULES.items()) for p in private_crossings(path, module)]
    assert not problems, "make these public, named parts of the package that owns them:\n" + "\n".join(problems)


def test_a_planted_private_import_is_found(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from domains.corpora import bfcl\nfrom domains.corpora.mining import _CREATIVE\n"
                       "x = bfcl._NO_HIT\n", encoding="utf-8")
    got = [p.split(": ", 1)[1] for p in private_crossings(planted, "pipeline.references.planted", tmp_path)]
    assert got == ["from domains.corpora.mining import _CREATIVE",
                   "bfcl._NO_HIT (domains.corpora.bfcl is another package)"]


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


def test_no_module_is_over_400_lines():
    # A module a maintainer reads whole: over 400 lines, it holds more than one idea (split it).
    long = sorted(f"{path.relative_to(ROOT)}: {n} lines" for path in MODULES.values()
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400)
    assert not long, long
