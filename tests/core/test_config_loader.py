"""One YAML loader for every file the project reads (configs/, the curated sources, the prompt
files): pipeline/core/config.py's `read_yaml`, whose every problem is one line naming the file."""
from __future__ import annotations

import ast
import re

import pytest

from pipeline.core.config import ConfigError, read_yaml
from scan_helpers import PACKAGES, ROOT, aliases, offenders

ALLOWED = "pipeline/core/config.py"
LOADERS = {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all", "full_load_all",
           "unsafe_load_all"}


def yaml_loads(tree: ast.AST) -> list[int]:
    """Lines that call a yaml loader (`yaml.safe_load`, `yaml.load`, ... under any name yaml is
    imported as) or import one from yaml."""
    yaml_names = aliases(tree, "yaml")
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in yaml_names
                and node.attr in LOADERS):
            out.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "yaml" and {a.name for a in node.names} & LOADERS:
            out.append(node.lineno)
    return out


def test_no_module_but_config_loads_yaml():
    found = offenders(ROOT, PACKAGES, ALLOWED, yaml_loads)
    assert not found, "read YAML with pipeline.core.config.read_yaml:\n" + "\n".join(found)


def test_the_check_finds_a_planted_load_and_passes_a_comment_or_a_string(tmp_path):
    (tmp_path / "pipeline" / "core").mkdir(parents=True)
    (tmp_path / "pipeline" / "core" / "config.py").write_text("import yaml\nyaml.safe_load('a: 1')\n")
    (tmp_path / "domains").mkdir()
    (tmp_path / "domains" / "planted.py").write_text(
        "import yaml\n"
        "import yaml as y\n"
        "a = yaml.safe_load(open('x.yaml'))\n"      # 3
        "b = y.load('a: 1', Loader=y.SafeLoader)\n"  # 4
        "from yaml import safe_load\n"              # 5
        "# yaml.safe_load in a comment is no load\n"
        "c = 'yaml.load in a string is none either'\n"
        "d = yaml.safe_dump({'a': 1})\n")
    found = offenders(tmp_path, ["pipeline", "domains"], ALLOWED, yaml_loads)
    assert [line.split(":")[:2] for line in found] == [["domains/planted.py", str(n)] for n in (3, 4, 5)]


@pytest.mark.parametrize("content, message", [
    (None, r"file not found\. Restore it from git or pass an existing file\.$"),
    ("a: [1, 2\n", r"invalid YAML: .*\. Fix the syntax\.$"),
    (b"a: \xff\xfe\n", r"cannot read \(.*\)\. Restore it from git or pass an existing file\.$"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path, content, message):
    path = tmp_path / "x.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {message}") as err:
        read_yaml(path)
    assert "\n" not in str(err.value)


def test_the_caller_names_the_file_and_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"^sources/curated/x\.yaml: file not found\. Restore it from git\.$"):
        read_yaml(tmp_path / "x.yaml", "sources/curated/x.yaml", restore="Restore it from git")


def test_a_prompt_file_with_bad_syntax_is_one_input_error(tmp_path):
    from domains.lm import read_prompt_file
    from pipeline.core.errors import InputError

    path = tmp_path / "p.yaml"
    path.write_text("domains: [\n")
    with pytest.raises(InputError, match=r"^configs/prompts/p\.yaml: invalid YAML: .*\. Fix the syntax$") as err:
        read_prompt_file(path, "configs/prompts/p.yaml")
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=r"^configs/prompts/q\.yaml: file not found\. Restore it from git$"):
        read_prompt_file(tmp_path / "q.yaml", "configs/prompts/q.yaml")
