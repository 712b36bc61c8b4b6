"""One contract applied to every corpus loader: on its fixture, and on the real corpus in
../shared/datasets (with the documented record counts) where that folder exists."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.paths import FIXTURES, PROJECT_ROOT
from pipeline.core.registry import UnknownNameError
from sources.datasets_dir import DatasetsDir
from sources.registry import LOADERS
from sources.base import (IntentRecord, PairRecord, PromptRecord, QARecord, Record, ToolRecord, natural_key)

REAL = PROJECT_ROOT.parent / "shared" / "datasets"
KIND = {"banking77": IntentRecord, "massive": IntentRecord, "bfcl": ToolRecord, "paws": PairRecord,
        "paws_x": PairRecord, "mrpc": PairRecord, "qqp": PairRecord, "ambigqa": QARecord, "triviaqa": QARecord,
        "xquad": QARecord, "sharegpt": PromptRecord, "lmsys_arena": PromptRecord, "wildchat": PromptRecord}
# Documented counts (shared/datasets/README.md and each SOURCE.md), per split.
XQUAD_LANGS = ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
REAL_COUNTS = {
    "banking77": {"train": 10003, "test": 3080},
    # en-US 16,521 (train 11,514 / dev 2,033 / test 2,974) + de-DE and sw-KE partial 4,957 each
    # (train 3,468 / dev 582 / test 907).
    "massive": {"train": 11514 + 2 * 3468, "dev": 2033 + 2 * 582, "test": 2974 + 2 * 907},
    "bfcl": {"simple_python": 400, "live_multiple": 1053, "irrelevance": 240, "live_irrelevance": 884,
             "live_parallel": 16, "live_parallel_multiple": 24, "live_relevance": 16, "live_simple": 258,
             "memory": 155, "multi_turn_base": 200, "multi_turn_long_context": 200, "multi_turn_miss_func": 200,
             "multi_turn_miss_param": 200, "multiple": 200, "parallel": 200, "parallel_multiple": 200,
             "simple_java": 100, "simple_javascript": 50, "web_search": 100},
    "paws": {"dev": 8000, "test": 8000},
    "paws_x": {"de/dev": 2000, "de/test": 2000},
    "mrpc": {"train": 4076, "test": 1725},
    "qqp": {"train": 8999, "dev": 1000, "kshot_16-42_train": 32, "kshot_16-42_dev": 32},
    "ambigqa": {"train": 10036, "dev": 2002},
    "triviaqa": {"test": 1000},
    "xquad": {lang: 1190 for lang in XQUAD_LANGS},
    "sharegpt": {"sg_90k_part1_html_cleaned_lang_first_sampled_sorted": 2978, "ShareGPT_V3_filtered_500": 500,
                 # 17,671 upstream conversations less the 126 empty ones (SOURCE.md)
                 "ShareGPT_V3_unfiltered_cleaned_split": 17671 - 126},
    "lmsys_arena": {"v0.1": 500, "v2.0": 750},
}
# Positive-label counts stated in SOURCE.md: a check that labels are parsed, not just counted.
REAL_POSITIVES = {"mrpc": {"train": 2753, "test": 1147}, "paws": {"dev": 3539, "test": 3536},
                  "paws_x": {"de/dev": 831, "de/test": 895}, "qqp": {"train": 3252, "dev": 377}}


@pytest.fixture(autouse=True, scope="module")
def _hf_cache(tmp_path_factory):
    """Keep the `datasets` Arrow cache out of the user's HF_HOME."""
    old = os.environ.get("HF_DATASETS_CACHE")
    os.environ["HF_DATASETS_CACHE"] = os.environ.get("CACHEEVAL_TEST_HF_CACHE") or str(tmp_path_factory.mktemp("hf"))
    yield
    if old is None:
        os.environ.pop("HF_DATASETS_CACHE", None)
    else:
        os.environ["HF_DATASETS_CACHE"] = old


def check_contract(name: str, ddir: DatasetsDir) -> list[Record]:
    records = list(ddir.load(name))
    loader = LOADERS[name]
    files = ddir.files(name)
    assert records, f"{name}: no records"
    seen = set()
    for r in records:
        assert type(r) is KIND[name]
        assert (r.corpus, r.licence) == (name, loader.licence)
        assert r.split and r.record_id and r.source_file in files
        assert (r.split, r.record_id) not in seen
        seen.add((r.split, r.record_id))
    first = records[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.split = "x"  # type: ignore[misc]
    keys = [(r.split, natural_key(r.record_id)) for r in records]
    assert keys == sorted(keys)
    # every input file is in the manifest with its true hash and size
    manifest = {m["path"]: m for m in ddir.manifest()}
    for rel in files:
        data = (ddir.folder(name) / rel).read_bytes()
        entry = {k: v for k, v in manifest[f"{name}/{rel}"].items() if k != "quirks"}
        assert entry == {"path": f"{name}/{rel}", "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    return records


def text_of(r: Record) -> str:
    for attr in ("text", "text_a", "question"):
        if hasattr(r, attr):
            return getattr(r, attr)
    raise AssertionError(r)


@pytest.mark.parametrize("name", LOADERS.names())
def test_fixture_contract(name):
    ddir = DatasetsDir(FIXTURES)
    records = check_contract(name, ddir)
    assert 10 <= len(records) <= 50
    assert all(text_of(r).strip() for r in records if not isinstance(r, PromptRecord) or name != "sharegpt")
    assert records == list(DatasetsDir(FIXTURES).load(name))  # a second read gives the same records


@pytest.fixture(scope="module")
def real_dir():
    if not REAL.is_dir():
        pytest.skip(f"{REAL} is absent: real-corpus checks need ../shared/datasets (CI has it)")
    return DatasetsDir(REAL)


@pytest.mark.corpora
@pytest.mark.parametrize("name", sorted(REAL_COUNTS))
def test_real_corpus_contract(name, real_dir):
    if not (REAL / name).is_dir():
        pytest.skip(f"{REAL / name} is absent")
    records = check_contract(name, real_dir)
    counts: dict[str, int] = {}
    for r in records:
        counts[r.split] = counts.get(r.split, 0) + 1
    assert counts == REAL_COUNTS[name]
    for split, n in REAL_POSITIVES.get(name, {}).items():
        assert sum(r.label for r in records if r.split == split) == n
    # The shipped MANIFEST.sha256 agrees with what the loader read.
    shipped = dict(line.split("  ./")[::-1] for line in (REAL / "MANIFEST.sha256").read_text().splitlines() if line)
    for m in real_dir.manifest():
        if m["path"].startswith(name + "/"):
            assert shipped[m["path"]] == m["sha256"]


def test_real_massive_parallel_and_slots(real_dir):
    recs = [r for r in real_dir.load("massive")]
    en = {r.parallel_id: r for r in recs if r.locale == "en-US"}
    assert len(en) == 16521
    de = [r for r in recs if r.locale == "de-DE"]
    assert all(r.intent == en[r.parallel_id].intent for r in de)
    assert en["0"].canonical() == ("alarm_set", {"time": "five am", "date": "this week"})


def test_real_xquad_parallel_ids(real_dir):
    by_lang: dict[str, set[str]] = {}
    for r in real_dir.load("xquad"):
        by_lang.setdefault(r.language, set()).add(r.parallel_id)
    assert sorted(by_lang) == list(XQUAD_LANGS)
    assert len({frozenset(s) for s in by_lang.values()}) == 1


# ---- fixture quirks are really exercised ---------------------------------------------------
def test_fixture_quirks_are_present_and_handled():
    raw = lambda rel: (FIXTURES / rel).read_bytes()  # noqa: E731
    assert b"\r\n" in raw("paws/en_final_dev.tsv") and not raw("paws/en_final_dev.tsv").startswith(b"id")
    assert raw("mrpc/msr_paraphrase_train.txt").startswith(b"\xef\xbb\xbf")
    assert not raw("massive/en-US.jsonl").endswith(b"\n")
    assert raw("bfcl/BFCL_v4_format_sensitivity.json").startswith(b"{\n")
    ddir = DatasetsDir(FIXTURES)
    assert {r.label for r in ddir.load("paws")} == {0, 1}  # no "0\r"
    assert all(r.text_a[0] != "\ufeff" for r in ddir.load("mrpc"))
    assert any("\n" in r.text for r in ddir.load("banking77"))
    assert [r.record_id for r in ddir.load("mrpc")][:1] == ["1000701-1000702"]  # test before train


def test_fixture_record_fields():
    ddir = DatasetsDir(FIXTURES)
    massive = {r.record_id: r for r in ddir.load("massive")}
    assert massive["en-US/3"].canonical() == ("datetime_convert", {"place_name": ("lima", "rome"), "time": "noon"})
    assert massive["de-DE/3"].parallel_id == "3" and massive["de-DE/3"].locale == "de-DE"
    bfcl = {r.record_id: r for r in ddir.load("bfcl")}
    assert bfcl["simple_python_0"].ground_truth == [{"calc.rectangle_area": {"width": [4], "height": [9]}}]
    assert bfcl["simple_python_2"].format_sensitivity and not bfcl["simple_python_1"].format_sensitivity
    assert bfcl["irrelevance_0"].ground_truth is None
    assert [f["name"] for f in bfcl["multi_turn_base_0"].functions] == ["add", "square_root"]
    assert [f["name"] for f in bfcl["multi_turn_base_1"].functions] == ["add"]  # excluded_function
    assert bfcl["live_simple_0-0-0"].text == "convert 2 km into metres"
    amb = {r.record_id: r for r in ddir.load("ambigqa")}
    assert amb["2202"].ambiguous and amb["2202"].qa_pairs[1][1] == ("Ada Lin", "A. Lin")
    assert amb["3303"].answers == ("1912", "in 1912")
    xq = [r for r in ddir.load("xquad") if r.parallel_id == "00fx0000"]
    assert sorted(r.language for r in xq) == ["de", "en"]
    wc = list(ddir.load("wildchat"))
    assert wc[0].timestamp == "2023-04-09T12:30:00+00:00" and wc[0].turn == 1 and wc[0].toxic is False
    assert any(r.redacted for r in wc) and {r.conversation[0][0] for r in wc} == {"user"}
    sg = {r.record_id: r for r in ddir.load("sharegpt")}
    assert sg["Fx7aB2d"].text == "" and sg["Fx7aB3e"].conversation[1] == ("assistant", "Crumb & Co, The Daily Loaf, Rise Up.")


def test_sharegpt_repeated_ids_and_empty_conversations(tmp_path):
    """The upstream quirks: an empty conversation is skipped, a repeated id among non-empty ones
    is renamed by occurrence order, and both are counted in the manifest (never silent)."""
    def conv(text):
        return [{"from": "human", "value": text}, {"from": "gpt", "value": "ok"}]
    rows = [{"id": "a_0", "conversations": []}, {"id": "a_0", "conversations": conv("first a")},
            {"id": "b_0", "conversations": conv("first b")}, {"id": "b_0", "conversations": conv("second b")},
            {"id": "c_0", "conversations": []}, {"id": "b_0", "conversations": conv("third b")}]
    (tmp_path / "sharegpt").mkdir()
    (tmp_path / "sharegpt" / "quirks.json").write_text(json.dumps(rows), encoding="utf-8")
    ddir = DatasetsDir(tmp_path)
    got = [(r.record_id, r.text) for r in ddir.load("sharegpt")]
    assert got == [("a_0", "first a"), ("b_0", "first b"), ("b_0~2", "second b"), ("b_0~3", "third b")]
    assert ddir.manifest()[0]["quirks"] == {"empty_conversation": 2, "repeated_id_renamed": 2,
                                            "repeated_id_with_empty": 1}
    again = DatasetsDir(tmp_path)
    list(again.load("sharegpt")), list(again.load("sharegpt"))  # reading twice does not double the counts
    assert again.manifest()[0]["quirks"]["empty_conversation"] == 2


def test_absent_corpus_yields_nothing(tmp_path):
    ddir = DatasetsDir(tmp_path)
    assert ddir.found() == []
    assert list(ddir.load("banking77")) == [] and ddir.manifest() == []


def test_unknown_corpus_lists_available():
    with pytest.raises(UnknownNameError, match=r"Did you mean 'banking77'.*Available: ambigqa, banking77"):
        LOADERS["bankin77"]


def test_same_records_under_other_hash_seeds():
    code = ("import hashlib,sys; from sources.registry import LOADERS; from sources.datasets_dir import DatasetsDir; from pipeline.core.paths import FIXTURES;"
            "d=DatasetsDir(FIXTURES); h=hashlib.sha256()\n"
            "for n in LOADERS.names():\n  [h.update(repr(r).encode()) for r in d.load(n)]\n"
            "h.update(repr(d.manifest()).encode()); print(h.hexdigest())")
    outs = set()
    for seed, tz in (("1", "UTC"), ("4242", "Asia/Kolkata")):
        env = {**os.environ, "PYTHONHASHSEED": seed, "TZ": tz, "LC_ALL": "C"}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1


def test_package_reexports_registry():
    import sources

    if getattr(sources, "__file__", None) is None:
        pytest.skip("`sources` resolves as a namespace package: the editable install predates "
                    "sources/__init__.py; re-run `pip install -e . --no-deps` to refresh it")
    assert sources.LOADERS is LOADERS and sources.DatasetsDir is DatasetsDir
