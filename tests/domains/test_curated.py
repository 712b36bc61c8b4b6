"""The one reader of curated sources: every problem is a single line naming the file."""
import pytest

from domains import domain_names
from domains.curated import curated_error, label, read_curated
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED


@pytest.mark.parametrize("text, message", [
    (None, r"x\.yaml: file not found\. Restore it from git$"),
    ("a: [1, 2\n", r"x\.yaml: invalid YAML: .*\. Fix the syntax$"),
    ("- just\n- a list\n", r"x\.yaml: top level must hold seeds, names\. Add the missing section$"),
    ("seeds: []\n", r"x\.yaml: top level must hold seeds, names; missing names\. Add the missing section$"),
    (b"seeds: \xff\xfe\n", r"x\.yaml: cannot read \(.*\)\. Restore it from git$"),
])
def test_bad_curated_file_is_one_line(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        read_curated(path, ("seeds", "names"))
    assert "\n" not in str(err.value)


def test_project_files_are_named_relative_to_the_project():
    assert label(CURATED / "math.yaml") == "sources/curated/math.yaml"
    assert str(curated_error(CURATED / "math.yaml", "templates[3]", "no answer", "Add one")) == \
        "sources/curated/math.yaml:templates[3]: no answer. Add one"


@pytest.mark.parametrize("name", domain_names())
def test_every_registered_domain_has_a_curated_source_that_parses(name):
    assert read_curated(CURATED / f"{name}.yaml")
