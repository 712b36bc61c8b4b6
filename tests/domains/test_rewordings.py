"""The team's rewordings of real requests (domains.corpora.rewordings): the table joins the corpora
by record and hash, the answer-token guard drops a rewording that changes a name, number, negation,
scope or polarity word, and a malformed line is a one-line error naming it."""
from __future__ import annotations

import json

import pytest

from domains import get_domain
from domains.corpora import rewordings as R
from domains.corpora.duplicates import answer_token_guard
from domains.verify import verify
from pipeline.core.errors import InputError
from pipeline.core.paths import FIXTURES
from sources.datasets_dir import DatasetsDir


@pytest.fixture(scope="module")
def fixtures():
    return DatasetsDir(FIXTURES)


@pytest.fixture(scope="module")
def qqp_record(fixtures):
    return next(r for r in fixtures.load("qqp") if r.text_b.strip() and r.text_b.strip().endswith("?"))


def _table(tmp_path, *entries):
    p = tmp_path / "rewordings.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return p


def _entry(rec, text, query_b, **over):
    e = {"corpus": "qqp", "record": str(rec.record_id), "sha256": R.text_sha256(text), "domain": "qa_open",
         "query_b": query_b}
    e.update(over)
    return e


def test_a_rewording_joins_its_real_request(fixtures, qqp_record, tmp_path):
    text = qqp_record.text_b.strip()
    b = "Put another way: " + text
    out, drops = R.candidates(fixtures, _table(tmp_path, _entry(qqp_record, text, b)))
    assert not drops and len(out) == 1
    c = out[0]
    assert (c.query_a, c.query_b, c.label, c.domain) == (text, b, "PARA_SAFE", "qa_open")
    assert (c.construction_method, c.source, c.licence) == ("curated", "qqp", qqp_record.licence)
    assert c.provenance.template_id == "real_rewording" and c.provenance.source_record == str(qqp_record.record_id)
    assert c.expected_answer_a == c.expected_answer_b
    assert verify(c, get_domain("qa_open").policy).passed


def test_drops_name_the_reason(fixtures, qqp_record, tmp_path):
    text = qqp_record.text_b.strip()
    table = _table(tmp_path,
                   _entry(qqp_record, text, "Put another way: " + text, sha256=R.text_sha256(text + " changed")),
                   _entry(qqp_record, text, "Put another way: " + text, record="no-such-record"),
                   _entry(qqp_record, text, "In 1999, put another way: " + text),
                   _entry(qqp_record, text, "Put another way: " + text, corpus="banking77_absent"))
    out, drops = R.candidates(fixtures, table)
    assert out == []
    assert drops == {"qqp:rewording:text_changed": 1, "qqp:rewording:record_not_found": 1,
                     "qqp:rewording:numbers_differ": 1, "banking77_absent:rewording:corpus_absent": 1}


@pytest.mark.parametrize("line, what", [
    ("{not json", "not JSON"),
    (json.dumps({"corpus": "qqp", "record": "1", "sha256": "x", "domain": "qa_open"}), "exactly the non-empty"),
    (json.dumps({"corpus": "qqp", "record": "1", "sha256": "x", "domain": "math", "query_b": "q"}), "takes no rewordings"),
])
def test_a_malformed_line_is_named(tmp_path, line, what):
    p = tmp_path / "rewordings.jsonl"
    p.write_text(json.dumps({"corpus": "qqp", "record": "1", "sha256": "x", "domain": "qa_open", "query_b": "q"})
                 + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        R.read_table(p)
    assert f"{p}:2:" in str(e.value) and what in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("a, b, why", [
    ("How do I cancel my card payment?", "I need to stop a payment I started from my card - what do I do?", None),
    ("Who wrote Dracula?", "Name the author of the novel Frankenstein.", "entities_differ"),
    ("Why is the sky blue?", "Why isn't the sky blue?", "negation_differs"),
    ("What are the benefits of running?", "What are the drawbacks of running?", "polarity_differs"),
    ("What do all cats eat?", "What do cats eat?", "scope_differs"),
])
def test_the_answer_token_guard(a, b, why):
    assert answer_token_guard(a, b) == why


def test_every_committed_rewording_is_a_hard_real_paraphrase():
    """Each committed rewording in the extract passes the guard and keys a real request."""
    from domains.corpora.extract import read
    from pipeline.core.paths import EXTRACT

    table = R.read_table()
    rows = [c for c in read(EXTRACT).candidates if c.provenance.template_id == R.TEMPLATE]
    assert len(rows) <= len(table)
    keys = {(e["corpus"], e["record"], e["sha256"]) for e in table}
    for c in rows:
        assert (c.source, c.provenance.source_record, R.text_sha256(c.query_a)) in keys
        assert answer_token_guard(c.query_a, c.query_b) is None
        assert c.label == "PARA_SAFE" and c.construction_method == "curated"


def test_the_hash_picks_the_record_among_files_that_share_its_id(fixtures, tmp_path):
    """QQP's train and dev files both number their records from 0: the request's hash says which one."""
    same_id = [r for r in fixtures.load("qqp") if str(r.record_id) == "1"]
    assert len({r.source_file for r in same_id}) == 2
    entries = [_entry(r, r.text_b.strip(), "Put another way: " + r.text_b.strip()) for r in same_id]
    out, drops = R.candidates(fixtures, _table(tmp_path, *entries))
    assert not drops
    assert sorted((c.query_a, c.provenance.source_file) for c in out) == sorted(
        (r.text_b.strip(), f"qqp/{r.source_file}") for r in same_id)
