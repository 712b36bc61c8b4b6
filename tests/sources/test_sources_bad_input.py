"""Malformed corpora: each case copies one fixture corpus into a temporary datasets dir, breaks it
in one way, and checks `cacheeval sources` prints ONE line `error: <file>:<where>: <problem>.
<fix>.`, exits 1 and prints nothing on stdout."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Callable

import pytest

from pipeline.app.cli import main
from pipeline.core.paths import FIXTURES

LINE = re.compile(r"^error: (?P<file>[^\n:]+):(?P<where>line \d+|record [^:]+|file): (?P<problem>[^\n]+)\. (?P<fix>[^\n]+)\.$")


@pytest.fixture(autouse=True)
def _hf_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.getbasetemp() / "hf-bad-input"))


def _edit_text(rel: str, fn: Callable[[str], str]) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        p = root / rel
        p.write_bytes(fn(p.read_bytes().decode("utf-8")).encode("utf-8"))
    return go


def _lines(rel: str, fn: Callable[[list[str]], list[str]], sep: str = "\n") -> Callable[[Path], None]:
    return _edit_text(rel, lambda t: sep.join(fn(t.split(sep))))


def _set_line(n: int, value: str) -> Callable[[list[str]], list[str]]:
    def go(lines: list[str]) -> list[str]:
        lines[n - 1] = value
        return lines
    return go


def _json(rel: str, fn: Callable[[object], object], **dump) -> Callable[[Path], None]:
    return _edit_text(rel, lambda t: json.dumps(fn(json.loads(t)), **dump))


def _jsonl_row(rel: str, n: int, fn: Callable[[dict], object]) -> Callable[[Path], None]:
    def edit(lines: list[str]) -> list[str]:
        lines[n - 1] = json.dumps(fn(json.loads(lines[n - 1])))
        return lines
    return _lines(rel, edit)


def _bytes(rel: str, fn: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        (root / rel).write_bytes(fn((root / rel).read_bytes()))
    return go


def _replace_by_dir(rel: str) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        (root / rel).unlink()
        (root / rel).mkdir()
    return go


def _broken_link(rel: str) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        (root / rel).unlink()
        (root / rel).symlink_to(root / "does-not-exist.jsonl")
    return go


def _drop(row: dict, key: str) -> dict:
    row.pop(key)
    return row


def _wildchat_without(column: str) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        import pyarrow.parquet as pq

        path = root / "data" / "train-00000-of-00001.parquet"
        pq.write_table(pq.read_table(path).drop_columns([column]), path)
    return go


TRIVIA = "triviaqa_test.selfrag_ctrla.jsonl"
# id: (corpus, mutation, file named in the error, where, words in the problem)
CASES = {
    "truncated_json_line": ("triviaqa", _lines(TRIVIA, lambda ls: ls[:2] + [ls[2][:40]] + ls[3:]), TRIVIA, "line 3", "invalid JSON"),
    "truncated_last_line_no_newline": ("lmsys_arena", _edit_text("arena-hard-v2.0_question.jsonl", lambda t: t[:-30]),
                                       "arena-hard-v2.0_question.jsonl", "line 5", "invalid JSON"),
    "wrong_header": ("banking77", _lines("train.csv", _set_line(1, "sentence,label\r"), "\n"), "train.csv", "line 1", "wrong or missing header"),
    "missing_header": ("paws_x", _lines("de_dev.tsv", lambda ls: ls[1:]), "de_dev.tsv", "line 1", "wrong or missing header"),
    "header_in_headerless_file": ("mrpc", _bytes("msr_paraphrase_train.txt", lambda b: b"\xef\xbb\xbfQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + b[3:]),
                                  "msr_paraphrase_train.txt", "line 1", "unknown label value 'Quality'"),
    "missing_column_csv": ("banking77", _lines("test.csv", _set_line(3, "How do I link my card to the app?\r"), "\n"), "test.csv", "line 3", "1 fields, expected 2"),
    "missing_column_tsv_crlf": ("paws", _lines("en_final_dev.tsv", _set_line(2, "2\tonly one sentence here .\t0\r"), "\n"),
                                "en_final_dev.tsv", "line 2", "3 fields, expected 4"),
    "non_utf8_jsonl": ("massive", _bytes("en-US.jsonl", lambda b: b.replace(b"silence", b"sil\xe9nce")), "en-US.jsonl", "line 5", "not UTF-8"),
    "non_utf8_csv_latin1": ("banking77", _bytes("train.csv", lambda b: b.replace(b"Portugal", "Portugal é".encode("latin-1"))),
                            "train.csv", "line 3", "not UTF-8"),
    "empty_file": ("mrpc", _bytes("msr_paraphrase_test.txt", lambda b: b""), "msr_paraphrase_test.txt", "file", "file is empty"),
    "bom_only_file": ("mrpc", _bytes("msr_paraphrase_test.txt", lambda b: b"\xef\xbb\xbf\n"), "msr_paraphrase_test.txt", "file", "file is empty"),
    "header_only": ("paws_x", _lines("de_test.tsv", lambda ls: ls[:1] + [""]), "de_test.tsv", "file", "no records"),
    "duplicate_ids": ("paws", _lines("en_final_test.tsv", lambda ls: ls + [ls[0]], "\r\n"), "en_final_test.tsv", "record 1", "duplicate id '1'"),
    "duplicate_ids_json": ("qqp", _edit_text("kshot_16-42_train.tsv", lambda t: t + t.split("\n")[1] + "\n"),
                           "kshot_16-42_train.tsv", "record 500", "duplicate id '500'"),
    "unknown_label_value": ("mrpc", _lines("msr_paraphrase_train.txt", lambda ls: [ls[0]] + ["2" + ls[1][1:]] + ls[2:]),
                            "msr_paraphrase_train.txt", "line 2", "unknown label value '2'"),
    "unknown_intent": ("banking77", _edit_text("test.csv", lambda t: t.replace("card_linking", "card_licking")), "test.csv", "line 2",
                       "unknown label value 'card_licking'"),
    "unknown_partition": ("massive", _jsonl_row("en-US.jsonl", 2, lambda r: {**r, "partition": "validation"}), "en-US.jsonl", "line 2",
                          "unknown partition value 'validation'"),
    "unknown_annotation_type": ("ambigqa", _json("dev_light.json", lambda a: [{**a[0], "annotations": [{"type": "noAnswer"}]}] + a[1:]),
                                "dev_light.json", "record 0", "unknown annotation type 'noAnswer'"),
    "unknown_turn_role": ("sharegpt", _json("ShareGPT_V3_filtered_500.json",
                                            lambda a: a[:1] + [{**a[1], "conversations": [{"from": "robot", "value": "hi"}]}] + a[2:]),
                          "ShareGPT_V3_filtered_500.json", "record 1", "unknown turn role 'robot'"),
    "folder_where_file_expected": ("xquad", _replace_by_dir("xquad.en.json"), "xquad.en.json", "file", "is a folder where a file is expected"),
    "broken_symlink": ("triviaqa", _broken_link(TRIVIA), TRIVIA, "file", "broken symbolic link"),
    "wrong_json_type_line": ("triviaqa", _lines(TRIVIA, _set_line(4, '["qz_1", "a list, not an object"]')), TRIVIA, "line 4", "wrong JSON type"),
    "wrong_json_type_array_file": ("ambigqa", _json("train_light.json", lambda a: {"data": a}), "train_light.json", "file",
                                   "wrong JSON type: expected an array of objects, got object"),
    "wrong_json_type_qqp_object": ("qqp", _json("glue_pretrain_QQP_dev.json", lambda o: list(o.values())), "glue_pretrain_QQP_dev.json",
                                   "file", "wrong JSON type: expected one object keyed by index, got list"),
    "format_sensitivity_not_one_object": ("bfcl", _edit_text("BFCL_v4_format_sensitivity.json", lambda t: '["simple_python_0"]\n'),
                                          "BFCL_v4_format_sensitivity.json", "file", "expected ONE object"),
    "wrong_field_type": ("xquad", _json("xquad.de.json", lambda d: {**d, "data": [{**d["data"][0], "paragraphs": [
        {**d["data"][0]["paragraphs"][0], "qas": [{**d["data"][0]["paragraphs"][0]["qas"][0], "question": 7}]}]}] + d["data"][1:]}, indent=2),
        "xquad.de.json", "record data[0].paragraphs[0] qa 00fx0000", "field 'question' has wrong type number"),
    "missing_field": ("massive", _jsonl_row("de-DE.partial.jsonl", 3, lambda r: _drop(r, "intent")), "de-DE.partial.jsonl", "line 3",
                      "missing field 'intent'"),
    "annot_utt_mismatch": ("massive", _jsonl_row("en-US.jsonl", 1, lambda r: {**r, "annot_utt": "wake me at [time : six thirty [date : tomorrow]"}),
                           "en-US.jsonl", "line 1", "does not match utt"),
    "ground_truth_missing_id": ("bfcl", _lines("possible_answer/BFCL_v4_simple_python.json", lambda ls: ls[:3]),
                                "BFCL_v4_simple_python.json", "line 4", "has no entry in possible_answer/BFCL_v4_simple_python.json"),
    "parquet_missing_column": ("wildchat", _wildchat_without("toxic"), "train-00000-of-00001.parquet", "file", "missing column(s) toxic"),
    "not_a_parquet_file": ("wildchat", _bytes("data/train-00000-of-00001.parquet", lambda b: b"conversation_hash,model\n"),
                           "train-00000-of-00001.parquet", "file", "not a parquet file"),
    "folder_without_corpus_files": ("paws", lambda root: [p.unlink() for p in root.iterdir()], "paws", "file", "no en_final_<split>.tsv file"),
}


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_input_is_one_line_error(case, tmp_path, capsys):
    corpus, mutate, fname, where, problem = CASES[case]
    root = tmp_path / "datasets"
    shutil.copytree(FIXTURES / corpus, root / corpus)
    mutate(root / corpus)
    code, out, err = run_cli(["sources", "--datasets-dir", str(root)], capsys)
    assert code == 1 and out == ""
    assert err.count("\n") == 1, err
    m = LINE.match(err.rstrip("\n"))
    assert m, err
    assert m["file"].endswith(fname) and str(root) in m["file"], err
    assert m["where"] == where, err
    assert problem in m["problem"], err


def test_unreadable_file(tmp_path, capsys):
    """chmod 000 blocks reads for a normal user; root reads anyway, so there the case cannot be
    produced (the broken-symlink case covers an unopenable file for every user)."""
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading the file")
    root = tmp_path / "datasets"
    shutil.copytree(FIXTURES / "triviaqa", root / "triviaqa")
    (root / "triviaqa" / TRIVIA).chmod(0)
    code, out, err = run_cli(["sources", "--datasets-dir", str(root)], capsys)
    assert code == 1 and out == "" and "permission denied" in err and LINE.match(err.rstrip("\n"))


def test_corpus_path_is_a_file(tmp_path, capsys):
    (tmp_path / "mrpc").write_text("not a folder\n")
    code, out, err = run_cli(["sources", "--datasets-dir", str(tmp_path)], capsys)
    assert (code, out) == (1, "")
    assert LINE.match(err.rstrip("\n")) and "mrpc:file: is not a folder" in err


def test_missing_datasets_dir(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CACHEEVAL_DATASETS_DIR", raising=False)
    code, out, err = run_cli(["sources"], capsys)
    assert (code, out) == (1, "") and err.startswith("error: no datasets dir given.")
    code, out, err = run_cli(["sources", "--datasets-dir", str(tmp_path / "nope")], capsys)
    assert (code, out) == (1, "") and LINE.match(err.rstrip("\n")) and "not found" in err
