"""The settings are read in one place: pipeline/core/settings.py alone reads or writes the process
environment, and its resolver gives each setting the flag, else the environment, else the default
(an empty variable counts as unset)."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from pipeline.core import settings
from pipeline.core.errors import InputError
from pipeline.core.paths import PROJECT_ROOT
from scan_helpers import PACKAGES, ROOT, aliases, offenders

ALLOWED = "pipeline/core/settings.py"
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(tree: ast.AST) -> list[int]:
    """Lines that read or write the environment: `os.environ`, `os.getenv`, `os.putenv` (under any
    name `os` is imported as), those names imported from os, and `environ[...]`, `environ.get(...)`."""
    os_names = aliases(tree, "os")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id in os_names and node.attr in ENV_NAMES) or node.value.id == "environ":
                out.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "environ":
            out.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & ENV_NAMES:
            out.append(node.lineno)
    return out


def test_no_module_but_settings_touches_the_environment():
    found = offenders(ROOT, PACKAGES, ALLOWED, environment_uses)
    assert not found, ("only pipeline/core/settings.py reads or writes the environment; resolve the settings "
                       "at the entry point and pass them down, or add a function there:\n" + "\n".join(found))


def test_the_check_finds_a_planted_use_and_passes_a_comment_or_a_string(tmp_path):
    (tmp_path / "pipeline" / "core").mkdir(parents=True)
    (tmp_path / "pipeline" / "core" / "settings.py").write_text("import os\nos.environ['A'] = '1'\n")
    (tmp_path / "pipeline" / "planted.py").write_text(
        "import os\n"
        "import os as system\n"
        "from os import environ, getenv\n"                  # 3
        "a = os.environ.get('A')\n"                         # 4
        "b = os.getenv('B')\n"                              # 5
        "os.putenv('C', '1')\n"                             # 6
        "d = environ['D']\n"                                # 7
        "e = system.environ\n"                              # 8
        "# os.environ in a comment is no use\n"
        "f = 'os.environ[\"F\"] in a string is none either'\n"
        "g = os.path.join('a', 'b')\n")
    found = offenders(tmp_path, ["pipeline"], ALLOWED, environment_uses)
    assert [line.split(":")[:2] for line in found] == [["pipeline/planted.py", str(n)] for n in (3, 4, 5, 6, 7, 8)]
    assert found[1] == "pipeline/planted.py:4: a = os.environ.get('A')"


# --------------------------------------------------------------------------- precedence


@pytest.mark.parametrize("flag, environ, expected", [
    ("/flag", {settings.DATASETS_DIR: "/env"}, Path("/flag")),
    (None, {settings.DATASETS_DIR: "/env"}, Path("/env")),
    ("", {settings.DATASETS_DIR: "/env"}, Path("/env")),   # an empty flag is no flag
    (None, {settings.DATASETS_DIR: ""}, None),              # an empty variable is unset
    (None, {}, None),                                       # the embedded default
])
def test_datasets_dir_is_the_flag_else_the_variable_else_none(flag, environ, expected):
    assert settings.resolve(datasets_dir=flag, environ=environ).datasets_dir == expected


@pytest.mark.parametrize("flag, environ, expected", [
    ("/flag", {settings.CACHE_DIR: "/env"}, Path("/flag")),
    (None, {settings.CACHE_DIR: "/env"}, Path("/env")),
    (None, {settings.CACHE_DIR: ""}, PROJECT_ROOT / ".cache" / "cacheeval"),
    (None, {}, PROJECT_ROOT / ".cache" / "cacheeval"),
])
def test_cache_root_is_the_flag_else_the_variable_else_the_project_cache(flag, environ, expected):
    resolved = settings.resolve(cache_dir=flag, environ=environ)
    assert resolved.cache_root == expected
    # the places under it follow it, unless their own variable names another folder
    assert resolved.eval_dir == expected / "eval" and resolved.hf_datasets_cache == expected / "hf-datasets"
    own = settings.resolve(cache_dir=flag, environ={**environ, settings.EVAL_CACHE_DIR: "/own-eval",
                                                    settings.HF_DATASETS_CACHE: "/own-hf"})
    assert (own.eval_dir, own.hf_datasets_cache) == (Path("/own-eval"), Path("/own-hf"))


@pytest.mark.parametrize("flag, environ, expected", [
    (3, {settings.WORKERS: "5"}, 3),
    (None, {settings.WORKERS: "5"}, 5),
    (None, {settings.WORKERS: ""}, max(1, os.cpu_count() or 1)),
    (None, {}, max(1, os.cpu_count() or 1)),
])
def test_workers_are_the_flag_else_the_variable_else_the_cpu_count(flag, environ, expected):
    assert settings.resolve(workers=flag, environ=environ).workers == expected


def test_a_wrong_worker_count_fails_when_it_is_used_or_where_it_was_given():
    resolved = settings.resolve(environ={settings.WORKERS: "two"})  # a command that never embeds never fails
    with pytest.raises(InputError, match=r"^\$CACHEEVAL_WORKERS='two': not a positive integer"):
        resolved.workers
    with pytest.raises(InputError, match="not a positive integer"):
        settings.resolve(workers=0, environ={})


def test_the_other_settings_and_their_defaults():
    empty = settings.resolve(environ={})
    assert empty.profile == settings.DEFAULT_PROFILE == "v1.1"
    assert empty.dagster_home == PROJECT_ROOT / ".dagster_home"
    assert (empty.llm_cache_mode, empty.llm_cache_url) == (None, None)
    assert (empty.hf_hub_offline, empty.hf_datasets_offline) == ("1", "1")
    given = settings.resolve(profile="smoke", environ={
        settings.DAGSTER_HOME: "/dh", settings.LLM_CACHE_MODE: "replay", settings.LLM_CACHE_URL: "postgresql://x",
        settings.HF_HUB_OFFLINE: "0", settings.HF_DATASETS_OFFLINE: "", "MY_KEY": "secret"})
    assert (given.profile, given.dagster_home, given.llm_cache_mode) == ("smoke", Path("/dh"), "replay")
    assert (given.llm_cache_url, given.variable("MY_KEY"), given.variable(None)) == ("postgresql://x", "secret", None)
    assert (given.hf_hub_offline, given.hf_datasets_offline) == ("0", "1")
    assert "secret" not in repr(given)  # the environment it was read from is not printed


def test_the_environment_is_read_when_resolving_never_at_import(monkeypatch, tmp_path):
    monkeypatch.setenv(settings.DATASETS_DIR, str(tmp_path))
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "cache"))
    resolved = settings.resolve()
    assert (resolved.datasets_dir, resolved.cache_root) == (tmp_path, tmp_path / "cache")
    monkeypatch.setenv(settings.CACHE_DIR, str(tmp_path / "later"))
    assert resolved.cache_root == tmp_path / "cache"  # frozen: resolved once
    with pytest.raises(AttributeError):
        resolved.cache_root = tmp_path  # type: ignore[misc]


def test_offline_flags_are_set_only_where_the_environment_left_them_unset(monkeypatch):
    monkeypatch.setenv(settings.HF_HUB_OFFLINE, "0")
    monkeypatch.setenv(settings.HF_DATASETS_OFFLINE, "")
    settings.ensure_offline()
    assert (os.environ[settings.HF_HUB_OFFLINE], os.environ[settings.HF_DATASETS_OFFLINE]) == ("0", "1")


def test_a_child_gets_the_environment_the_settings_were_read_from_with_its_values_over_it():
    resolved = settings.resolve(environ={"A": "1", "B": "2"})
    assert settings.child_environment(resolved, {"B": "3", "C": "4"}) == {"A": "1", "B": "3", "C": "4"}
