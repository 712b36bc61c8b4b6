"""Publishing an output folder in one step (pipeline/core/publish.py)."""
import json
import os
import subprocess
import sys

from pipeline.core import publish as pub


def _folder(path, files):
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    return path


def _files(path):
    return {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob("*")) if p.is_file()}


def test_the_new_folder_replaces_the_old_whole_keeping_foreign_files(tmp_path):
    target = _folder(tmp_path / "outputs", {"manifest.json": json.dumps({"outputs": {"a.jsonl": "x", "old.md": "y"}}),
                                            "a.jsonl": "old", "old.md": "gone", "README.txt": "mine"})
    work = pub.work_dir(target)
    staged = _folder(work / "out", {"manifest.json": json.dumps({"outputs": {"a.jsonl": "z"}}), "a.jsonl": "new"})
    pub.publish(staged, target)
    assert _files(target) == {"README.txt": "mine", "a.jsonl": "new",
                              "manifest.json": json.dumps({"outputs": {"a.jsonl": "z"}})}
    assert not staged.exists() or not any(staged.iterdir())


def test_a_missing_target_is_created_and_the_fallback_also_publishes(tmp_path, monkeypatch):
    target = tmp_path / "new" / "outputs"
    pub.publish(_folder(pub.work_dir(target) / "out", {"x": "1"}), target)
    assert _files(target) == {"x": "1"}
    monkeypatch.setattr(pub, "_exchange", lambda a, b: False)  # a filesystem without RENAME_EXCHANGE
    pub.publish(_folder(pub.work_dir(target) / "out", {"x": "2"}), target)
    assert _files(target) == {"x": "2"}
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".outputs.old-")]


def test_what_a_killed_build_left_is_cleaned_or_put_back(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)  # a process that has ended
    target = tmp_path / "outputs"
    _folder(tmp_path / f".outputs.old-{pid}", {"a": "old"})             # killed between the fallback's renames
    _folder(tmp_path / f".outputs.build-{pid}-abc123", {"out/a": "half"})  # killed while building
    _folder(tmp_path / f".outputs.build-{os.getpid()}-live", {"out/a": "running"})  # a build still running
    pub.recover(target)
    assert _files(target) == {"a": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".outputs.build-{os.getpid()}-live", "outputs"]


def test_the_exchange_is_one_system_call_here(tmp_path):
    a, b = _folder(tmp_path / "a", {"f": "A"}), _folder(tmp_path / "b", {"f": "B"})
    assert pub._exchange(a, b)
    assert (a / "f").read_text() == "B" and (b / "f").read_text() == "A"
