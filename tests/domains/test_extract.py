"""The committed extract of the corpora's verified pairs (domains.corpora.extract): lines parse back
to the same candidates, a bad line is one error naming file:line, the build's generators take the
extract's pairs, and (corpora) the command regenerates the committed file byte for byte."""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from domains.base import Candidate, GenContext, Provenance
from domains.check import generate
from domains.corpora import extract as ex
from pipeline.core.errors import InputError
from pipeline.core.paths import EXTRACT

ROOT = Path(__file__).resolve().parents[2]


def _cand(domain="multi_turn", query_b="continue", **kw) -> Candidate:
    base = dict(
        domain=domain, subcategory="continuation", label="ADVERSARIAL", query_a="continue", query_b=query_b,
        expected_answer_a="A response that goes on with the poem.", expected_answer_b="A response that goes on with the code.",
        rationale="r", verification_method="context_rubric",
        verification_payload={"context_facts_a": ["poem"], "context_facts_b": ["code"]},
        construction_method="real_traffic_mined", source="sharegpt", real_world_grounding="g",
        provenance=Provenance(generator="multi_turn.real_traffic_mined", generator_version="4", template_id="follow_up",
                              source_file="sharegpt/sg_90k_part1.json", source_record="a#2|b#4",
                              operator_params={"scrubbed_kinds": []}),
        licence="none stated (ShareGPT)",
        context_a=({"role": "user", "content": "write a poem"}, {"role": "assistant", "content": "Roses ..."}),
        context_b=({"role": "user", "content": "write code"}, {"role": "assistant", "content": "def f(): ..."}),
        tools_a=None, tools_b=({"name": "f", "parameters": {"type": "dict", "properties": {}}},))
    base.update(kw)
    return Candidate(**base)


def test_a_line_parses_back_to_the_same_candidate_with_its_corpus_tags():
    c = _cand()
    line = ex.to_line(c, {"sharegpt/sg_90k_part1.json": "ab" * 32})
    back = ex.from_line(line, "x:1")
    assert back == c and back.key == c.key
    obj = json.loads(line)
    assert obj["corpus"] == "sharegpt" and obj["licence"] == c.licence
    assert obj["corpus_files"] == [{"path": "sharegpt/sg_90k_part1.json", "sha256": "ab" * 32}]
    assert obj["rule"] == "real_traffic_mined/multi_turn.real_traffic_mined/follow_up"


def test_serialised_bytes_do_not_depend_on_the_order_given():
    a, b = _cand(), _cand(query_b="go on", domain="conversational")
    assert ex.serialise([a, b], {}) == ex.serialise([b, a], {})
    e = ex.parse(ex.serialise([a, b], {}), "f")
    assert [c.domain for c in e.candidates] == ["conversational", "multi_turn"] and e.data and len(e.sha256) == 64


@pytest.mark.parametrize("line,needle", [
    ("not json", "not an extract line"),
    ('{"row": {}}', "missing or unknown"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(line, needle):
    good = ex.to_line(_cand(), {})
    with pytest.raises(InputError) as err:
        ex.parse((good + "\n" + line + "\n").encode(), "sources/extract/pairs.jsonl")
    assert str(err.value).startswith("sources/extract/pairs.jsonl:2: ") and needle in str(err.value)
    assert "cacheeval extract" in str(err.value)


def test_a_line_separator_inside_a_text_does_not_cut_the_line():
    c = _cand(query_b="continue\u2028please\x85now")
    e = ex.parse(ex.serialise([c], {}), "f")
    assert e.candidates == (c,)


def test_an_unknown_label_is_refused(tmp_path):
    obj = json.loads(ex.to_line(_cand(), {}))
    obj["row"]["label"] = "MAYBE"
    p = tmp_path / "pairs.jsonl"
    p.write_text(json.dumps(obj) + "\n")
    with pytest.raises(InputError, match=r"pairs.jsonl:1: .*label 'MAYBE'"):
        ex.read(p)


def test_no_file_is_an_empty_extract(tmp_path):
    e = ex.read(tmp_path / "none.jsonl")
    assert e.candidates == () and e.of("qa_open") == []


def test_the_generators_take_the_domains_extract_pairs():
    mine, other = _cand(), _cand(domain="conversational", query_b="go on")
    e = ex.parse(ex.serialise([mine, other], {}), "f")
    ctx = GenContext(domain="multi_turn", profile="v1.1", need={}, extract=e)
    cands, _ = generate("multi_turn", ctx)
    assert mine in cands and other not in cands
    without, _ = generate("multi_turn", GenContext(domain="multi_turn", profile="v1.1", need={}))
    assert mine not in without


def test_the_committed_extract_parses_and_carries_every_tag():
    e = ex.read(EXTRACT)
    assert e.candidates, f"{EXTRACT} is missing or empty: run `cacheeval extract --datasets-dir ../shared/datasets`"
    methods = Counter(c.construction_method for c in e.candidates)
    assert {"real_traffic_mined", "existing_benchmark", "intent_bottom_up"} <= set(methods)
    for line in filter(None, e.data.decode().split("\n")):
        obj = json.loads(line)
        assert obj["licence"] and obj["rule"] and obj["corpus_files"]
        assert all(len(f["sha256"]) == 64 for f in obj["corpus_files"]), obj["corpus_files"]


@pytest.mark.corpora
@pytest.mark.slow
def test_the_extract_command_regenerates_the_committed_file_byte_for_byte(shared_datasets, tmp_path):
    out = tmp_path / "pairs.jsonl"
    r = subprocess.run([sys.executable, "-m", "pipeline.app.cli", "extract", "--datasets-dir", str(shared_datasets),
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.read_bytes() == EXTRACT.read_bytes(), "the committed extract differs from what the corpora give"


def test_the_extract_command_without_a_datasets_dir_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "pairs.jsonl"
    r = subprocess.run([sys.executable, "-m", "pipeline.app.cli", "extract", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "--datasets-dir" in r.stderr
    assert not out.exists()
