import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = ROOT.parent / "shared" / "datasets"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"real corpora not present at {SHARED_DATASETS} (they sit beside the project in CI)")
    return SHARED_DATASETS


@pytest.fixture(autouse=True)
def _private_eval_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own evaluation-result cache, so no test is served another's result."""
    monkeypatch.setenv("CACHEEVAL_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("eval-cache")))


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory) -> Path:
    """One cache folder for the tests that build the smoke profile (in process, by the CLI, from the
    UI): the first builds it cold, the others run warm. A cache only makes a build faster, and the
    cold path has its own test (test_byte_identical_with_cold_cache, with a folder of its own)."""
    return tmp_path_factory.mktemp("smoke-cache")



# ---------------------------------------------------------------- parallel runs (pytest-xdist)
#
# .ci/test runs the suite on two workers (`-n 2 --dist loadgroup --no-loadscope-reorder`). A worker
# is a pytest session of its own, so a session or module fixture is built once per worker that runs a
# test needing it. So a worker runs whole groups: a test module is a group (its module fixtures are
# built once), except the modules and tests in SHARED, which share more than a module and form one
# group each.
# Groups are handed out longest first (HEAVY, then every module holding a `slow` test, then the rest
# in collection order) so that no long test starts last. Both workers use the one cache root: the caches
# are made for several processes at once (SQLite in WAL mode with a busy timeout, a failed write
# skipped, exports and unpacked models renamed into place; a `cacheeval check` alone runs process pools
# that read and write its embedding cache), and a root per worker made the corpora build wait for the
# check and the extract's mining on one worker (31 min of 2,252 tests there, benchmarks/ci_time.md).
# (xdist's own `loadgroup` reads `xdist_group` marks by rewriting Item._nodeid, which pytest 9 no
# longer reads: the scheduler below groups by the test's file instead, and needs no marks.)

SHARED = {
    # the session's smoke_cache: tests/e2e/test_build.py builds the smoke profile cold once, the others
    # run warm
    "smoke": ("e2e/test_build.py", "e2e/test_ui_browser.py", "references/test_reference_reports.py"),
    # `cacheeval check` rebuilds the committed benchmark and the 2026-Q4 slice in the cache root; the
    # in-process 2026-Q4 rebuild then finds every step of the slice in the step cache
    # (pipeline/orchestration/step_cache.py: the same code and inputs), and the verified cache (those
    # rows, the same models) runs warm. Apart, each repeated the check's work cold (1,898 s and 430 s
    # on a loaded machine). A corpora build is the committed benchmark (tests/e2e/test_corpora_build.py):
    # it comes last, when the check has filled the build's steps and `mining` (on the other worker)
    # the mined shards, and every step is served; run alone, it mines and builds cold.
    "committed": ("e2e/test_committed_outputs.py", "e2e/test_evolving_quarter.py", "references/test_verified_cache.py",
                  "e2e/test_corpora_build.py"),
    # The extract command and the mining test mine the real corpora: the second finds the first's
    # prepared shards and their pairing (prepare_shard, pair_shards) in the step cache. They share
    # nothing with the check, so they run beside it.
    "mining": ("domains/test_extract.py::test_the_extract_command_regenerates_the_committed_file_byte_for_byte",
               "domains/test_mining.py::test_real_corpora_yield_pairs"),
}
# The longest groups first, so that none starts last.
HEAVY = ("committed", "mining", "smoke")
_GROUP_OF = {entry: group for group, entries in SHARED.items() for entry in entries}
_POSITION = {entry: i for entries in SHARED.values() for i, entry in enumerate(entries)}


def _shared_entry(nodeid: str) -> str | None:
    """The SHARED entry naming a test (<module>::<test> before <module>), or None."""
    module, _, test = nodeid.removeprefix("tests/").partition("::")
    return next((e for e in (f"{module}::{test.split('[', 1)[0]}", module) if e in _GROUP_OF), None)


def xdist_group(nodeid: str) -> str:
    """The group of a test: the SHARED group that names it (<module>::<test>) or its module, else its
    module's path under tests/."""
    entry = _shared_entry(nodeid)
    return _GROUP_OF[entry] if entry else nodeid.removeprefix("tests/").partition("::")[0]


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """Whole groups to a worker, in the order the workers collected them (see HEAVY)."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):
        return  # not an xdist worker: the usual order
    groups = {item.nodeid: xdist_group(item.nodeid) for item in items}
    slow = {groups[item.nodeid] for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> tuple[int, int, int]:
        group = groups[item.nodeid]
        if group in HEAVY:  # and within a SHARED group, in the order it names its entries
            return (0, HEAVY.index(group), _POSITION.get(_shared_entry(item.nodeid) or "", 0))
        return (1, 0, 0) if group in slow else (2, 0, 0)

    items.sort(key=rank)  # stable: within a group and a rank, the collection order
