"""The test suite mirrors the packages, and its modules stand alone.

Test modules live in one folder per part of the project (core, sources, services, llm, domains,
harness, stages, references, evolving, e2e), never at the top of tests/; shared helpers are plain
modules at the top (doubles and assertions), and no test module imports another test module (pytest would collect its tests twice
and a rename would break a stranger's file).
"""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = {"core", "domains", "e2e", "evolving", "harness", "llm", "references", "services", "sources", "stages"}


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts)


def test_every_test_module_sits_in_a_package_folder():
    misplaced = [str(p.relative_to(TESTS)) for p in _test_modules() if p.parent.name not in FOLDERS
                 or p.parent.parent != TESTS]
    assert not misplaced, f"move these under one of {sorted(FOLDERS)}: {misplaced}"
    assert {p.parent.name for p in _test_modules()} == FOLDERS  # and no folder is left empty


def test_no_two_test_modules_share_a_name():
    # The folders are not packages, so pytest imports each test module by its bare name: a second
    # test_x.py in another folder stops the whole run at collection ("import file mismatch").
    seen: dict[str, str] = {}
    twice = []
    for p in _test_modules():
        if p.name in seen:
            twice.append(f"{seen[p.name]} and {p.relative_to(TESTS)}")
        seen.setdefault(p.name, str(p.relative_to(TESTS)))
    assert not twice, f"rename one of each pair: {twice}"


def test_no_test_module_imports_another():
    offenders = []
    for path in _test_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(TESTS)} imports {n}" for n in names
                          if n.split(".")[-1].startswith("test_") or n == "conftest"]
    assert not offenders, offenders


def test_no_folder_is_a_package_that_shadows_the_project():
    # tests/domains/__init__.py would make pytest import tests as `domains.test_x`, hiding the real package
    assert not [p for p in TESTS.rglob("__init__.py") if "data" not in p.relative_to(TESTS).parts]


def test_every_shared_xdist_group_names_a_test_that_exists(request):
    # tests/conftest.py hands each SHARED group to one worker, in the order it names its modules; a
    # renamed module or test would silently leave its group and repeat the group's work cold.
    conftest = next(p for p in request.config.pluginmanager.get_plugins()
                    if str(getattr(p, "__file__", "")) == str(TESTS / "conftest.py"))
    for group, entries in conftest.SHARED.items():
        for entry in entries:
            module, _, test = entry.partition("::")
            assert (TESTS / module).is_file(), f"{group}: no {module}"
            assert not test or f"def {test}(" in (TESTS / module).read_text(encoding="utf-8"), f"{group}: no {entry}"
            assert conftest.xdist_group(f"tests/{module}::{test or 'test_x'}[param]") == group
    assert conftest.xdist_group("tests/domains/test_mining.py::test_rules[a-b]") == "domains/test_mining.py"
