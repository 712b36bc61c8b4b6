"""Curated hard rewordings of real requests: PARA_SAFE candidates for the extract (issue #27, item 3).

A real request (a ShareGPT or Chatbot Arena opening message, a QQP question, an AmbigQA or TriviaQA
question) paired with the team's rewording of it: the same request in other words, sharing few of
them, so that embedders find the two far apart (all-MiniLM-L6-v2 cosine below 0.72 when written),
while every answer-determining token stays (the names, numbers, negation, scope and polarity words:
domains.corpora.duplicates.answer_token_guard). Real users ask for the same thing in very different
words; the corpora's own duplicate pairs that pass the answer-token rules are nearly all close in
wording (QQP, BANKING77 and MASSIVE were measured and ruled out: issue #27's notes).

The table, `sources/extract/rewordings.jsonl`, is the team's writing: one JSON line per rewording,
`{"corpus", "record", "sha256", "domain", "query_b"}`. It holds no corpus text: `sha256` is the hash
of the request (the record's text, stripped) it rewords, and the extract joins the table to the
corpora, so the request comes from the datasets dir and a changed corpus drops the line
(`text_changed`) rather than pairing a rewording with another text; the hash also tells apart records that
share an id across a corpus's files (QQP's train and dev, ShareGPT's two files). Read blind before they entered
(the note of issue #27 gives the agreement).

Each candidate: label PARA_SAFE, method `curated` (the team wrote query_b; query_a is real, `source`
names its corpus and `licence` is the corpus's), template `real_rewording` (selection offers it
first, pipeline.stages.selection), verified by the rubric of query_a's own criteria on both sides
(domains.corpora.mining.single.criteria).
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from domains import get_domain
from domains.base import REAL_REWORDING, Candidate, Provenance
from domains.corpora.duplicates import answer_token_guard
from domains.corpora.mining.single import criteria
from pipeline.core.errors import InputError
from pipeline.core.paths import SOURCES

TABLE = SOURCES / "extract" / "rewordings.jsonl"
METHOD = "curated"
TEMPLATE = REAL_REWORDING
VERSION = "1"
FIELDS = ("corpus", "domain", "query_b", "record", "sha256")
DOMAINS = ("code", "conversational", "qa_factual", "qa_open")
GROUNDING = ("A real request from {corpus} and the team's rewording of it, which shares few of its words and keeps "
             "every answer-determining token: real users ask for the same thing in very different words.")


def text_sha256(text: str) -> str:
    """The key of a request in the table: sha256 of its stripped text (UTF-8)."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def read_table(path: Path = TABLE) -> list[dict[str, str]]:
    """The table's entries; an InputError naming the file and line on anything malformed."""
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{n}: not JSON ({e.msg}). Write one JSON object per line") from None
        if not isinstance(obj, dict) or set(obj) != set(FIELDS) or not all(isinstance(obj[k], str) and obj[k].strip()
                                                                           for k in FIELDS):
            raise InputError(f"{path}:{n}: a rewording needs exactly the non-empty string fields {', '.join(FIELDS)}. "
                             "Fix the line")
        if obj["domain"] not in DOMAINS:
            raise InputError(f"{path}:{n}: domain {obj['domain']!r} takes no rewordings (one of {', '.join(DOMAINS)}). "
                             "Fix the line")
        out.append(obj)
    return out


def _texts(corpus: str, record: Any) -> Iterator[str]:
    """The request texts of a record that a rewording may key on."""
    if corpus == "qqp":
        yield record.text_a
        yield record.text_b
    elif corpus in ("ambigqa", "triviaqa"):
        yield record.question
    else:
        yield record.text


def candidates(datasets: Any, path: Path = TABLE) -> tuple[list[Candidate], Counter]:
    """The table's candidates whose request the datasets dir holds, and drops by reason."""
    table = read_table(path)
    drops: Counter = Counter()
    present = set(datasets.found())
    wanted: dict[str, set[str]] = {}
    for e in table:
        wanted.setdefault(e["corpus"], set()).add(e["record"])
    records: dict[tuple[str, str], list[Any]] = {}   # a record id may recur in a corpus's other files (QQP, ShareGPT)
    for corpus in sorted(wanted):
        if corpus not in present:
            continue
        for r in datasets.load(corpus):
            if str(r.record_id) in wanted[corpus]:
                records.setdefault((corpus, str(r.record_id)), []).append(r)
    out: list[Candidate] = []
    for e in table:
        corpus = e["corpus"]
        if corpus not in present:
            drops[f"{corpus}:rewording:corpus_absent"] += 1
            continue
        found = records.get((corpus, e["record"]))
        if not found:
            drops[f"{corpus}:rewording:record_not_found"] += 1
            continue
        match = next(((r, t.strip()) for r in found for t in _texts(corpus, r) if t and text_sha256(t) == e["sha256"]), None)
        if match is None:
            drops[f"{corpus}:rewording:text_changed"] += 1
            continue
        record, text = match
        why = answer_token_guard(text, e["query_b"])
        if why is not None:
            drops[f"{corpus}:rewording:{why}"] += 1
            continue
        out.append(_candidate(e, record, text))
    return out, drops


def _candidate(e: dict[str, str], record: Any, text: str) -> Candidate:
    corpus, domain = e["corpus"], e["domain"]
    crit = criteria(text)
    answer = f"A response that {crit[0]}."
    c = Candidate(
        domain=domain, subcategory="real_request_rewording", label="PARA_SAFE", query_a=text, query_b=e["query_b"].strip(),
        expected_answer_a=answer, expected_answer_b=answer,
        rationale=(f"A real request from {corpus} and the same request in other words that share few of its words; "
                   "every answer-determining token (names, numbers, negation, scope and polarity words) is kept, so one "
                   "answer serves both."),
        verification_method="rubric", verification_payload={"criteria_a": crit, "criteria_b": list(crit)},
        construction_method=METHOD, source=corpus, real_world_grounding=GROUNDING.format(corpus=corpus),
        provenance=Provenance(generator=f"{domain}.{METHOD}.{TEMPLATE}", generator_version=VERSION, template_id=TEMPLATE,
                              operator_params={"guard": "answer_token_guard", "sha256": e["sha256"]},
                              source_file=f"{corpus}/{record.source_file}", source_record=str(record.record_id)),
        licence=record.licence)
    return c.under_policy(get_domain(domain).policy(c))
