"""LM-generated rows: replay export/import, replay-only builds without llama_cpp, answer-token rules."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from domains import all_domains, get_domain
from domains.base import GenContext, LMItem
from domains.lm import generate as lm
from domains.lm.rules import Seed, paraphrase_problem
from pipeline.core.errors import InputError
from pipeline.services.llm.cached_provider import CachedProvider, ReplayMissError
from pipeline.services.llm.stores import SQLiteStore
from pipeline.services.llm.replay import REPLAY_FILE, dump_entries, export_store, import_entries, load_entries, replay_llm
from pipeline.core.paths import PROJECT_ROOT
from llm_doubles import stand_in_spec


class EchoModel:
    """A stand-in model: answers 'Reworded: <last user message>' (counts its calls)."""

    name = "fake"
    model_snapshot = "fake-2024-01-01"

    def __init__(self) -> None:
        self.calls = 0

    def key_settings(self) -> dict:
        return {}

    def complete_raw(self, messages, tools, params) -> dict:
        self.calls += 1
        return {"choices": [{"message": {"role": "assistant", "content": "Reworded: " + messages[-1]["content"]},
                             "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}


def _recorded_store(tmp_path: Path, n: int = 5) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "rec.sqlite", clock=lambda: 1_700_000_000)
    llm = CachedProvider(EchoModel(), store, "both")
    for i in range(n):
        llm.complete([{"role": "user", "content": f"question {i} – ünïcode"}], system="sys", temperature=0, seed=1)
    return store


def test_export_import_round_trip(tmp_path):
    store = _recorded_store(tmp_path)
    path = tmp_path / "replay.jsonl"
    assert export_store(store, path) == 5
    lines = path.read_text(encoding="utf-8").splitlines()
    keys = [json.loads(line)["key"] for line in lines]
    assert len(lines) == 5 and keys == sorted(keys)
    assert "ünïcode" in lines[0]  # readable: UTF-8 kept, not escaped

    fresh = SQLiteStore(tmp_path / "imported.sqlite")
    assert import_entries(fresh, path) == 5
    again = tmp_path / "again.jsonl"
    export_store(fresh, again)
    assert again.read_bytes() == path.read_bytes()

    # the imported store answers in replay mode without any model call
    model = EchoModel()
    replay = CachedProvider(model, fresh, "replay")
    out = replay.complete([{"role": "user", "content": "question 3 – ünïcode"}], system="sys", temperature=0.0, seed=1)
    assert out.cached and out.text == "Reworded: question 3 – ünïcode" and model.calls == 0


def test_import_rejects_an_edited_or_unsorted_file(tmp_path):
    path = tmp_path / "replay.jsonl"
    export_store(_recorded_store(tmp_path), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    edited = json.loads(lines[1])
    edited["response"]["choices"][0]["message"]["content"] = "something else"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(edited, ensure_ascii=False)] + lines[2:]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl:2: 'text' differs"):
        load_entries(bad)
    edited["request"]["messages"][0]["content"] = "changed"
    bad.write_text(json.dumps(edited) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl:1: the request does not hash"):
        load_entries(bad)
    bad.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl:2: .*out of order"):
        load_entries(bad)


# ------------------------------------------------------------------ the committed entries

needs_replay = pytest.mark.skipif(not REPLAY_FILE.is_file(), reason="sources/curated/llm_replay.jsonl not recorded")

_RUN = """
import sys, hashlib, json
sys.modules['llama_cpp'] = None          # importing it now raises ImportError
from domains import all_domains
from domains.base import GenContext
from pipeline.orchestration.resources import BuildSettings
llm = BuildSettings().llm()
out = {}
for spec in [s for s in all_domains() if s.lm is not None]:
    name = spec.name
    rows = list(spec.generators["lm_generated"](GenContext(domain=name, profile="v1.1", need={}, llm=llm)))
    assert rows and all(c.construction_method == "lm_generated" for c in rows)
    assert all(c.provenance.model_snapshot.startswith("gguf-sha256:") for c in rows)
    assert all(c.source.startswith("lm:") and c.label in ("PARA_SAFE", "ADVERSARIAL", "RELATED_UNSAFE") for c in rows)
    text = json.dumps([[c.key, c.query_a, c.query_b, c.provenance.to_dict()] for c in rows], sort_keys=True)
    out[name] = [len(rows), hashlib.sha256(text.encode()).hexdigest()]
print(json.dumps(out, sort_keys=True))
"""


@needs_replay
def test_replay_builds_the_same_rows_twice_without_llama_cpp():
    env = {**os.environ, "CACHEEVAL_LLM_CACHE_MODE": "replay", "PYTHONHASHSEED": "random"}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _RUN], cwd=PROJECT_ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0] == runs[1]
    assert sorted(runs[0]) == ["code", "conversational", "math", "multi_turn", "personalized", "qa_factual", "qa_open", "tool"]
    assert all(n >= 1 for n, _ in runs[0].values())


@needs_replay
def test_a_missing_replay_entry_is_a_clear_error(tmp_path):
    entries = load_entries(REPLAY_FILE)
    ctx = GenContext(domain="qa_factual", profile="v1.1", need={})
    prompt = lm.prompt_for("qa_factual")
    first_seed = lm.seeds(get_domain("qa_factual"), prompt, ctx)[0]
    wanted = {m["content"] for m in lm.messages_for(prompt, first_seed.text)[-1:]}
    partial = [e for e in entries if json.loads(e.request)["messages"][-1]["content"] not in wanted]
    assert len(entries) - 3 <= len(partial) < len(entries)     # its attempts (a copy is asked again)
    path = tmp_path / "partial.jsonl"
    dump_entries(partial, path)
    llm = replay_llm(path)
    with pytest.raises(ReplayMissError, match=rf"llm_replay\.jsonl: no recorded response for prompt "
                                              rf"qa_factual\.paraphrase\.v2 on {first_seed.record}.*record"):
        lm.generate(get_domain("qa_factual"), GenContext(domain="qa_factual", profile="v1.1", need={}, llm=llm))


# ------------------------------------------------------------------ answer-token rules

def _seed(domain: str, record_part: str) -> Seed:
    seeds = lm.seeds(get_domain(domain), lm.prompt_for(domain), GenContext(domain=domain, profile="v1.1", need={}))
    return next(s for s in seeds if record_part in s.record)


def test_answer_token_rules_drop_a_changed_entity_or_number():
    capital = _seed("qa_factual", ".capital#")
    name = capital.item.keep[0]
    assert paraphrase_problem(capital, f"Which city is {name}'s capital?") is None
    assert paraphrase_problem(capital, f"Which city is the capital of {name}?") == "copies_curated_phrasing"
    assert paraphrase_problem(capital, "Which city is the capital of Narnia?") == "entity_missing"
    assert paraphrase_problem(capital, f"Which city is the capital of {name} and of Peru?") == "new_entity"
    assert paraphrase_problem(capital, f"What is the capital of {name} in 1990?") == "number_changed"
    assert paraphrase_problem(capital, f"What is the largest city of {name}?") == "attribute_missing"
    assert paraphrase_problem(capital, f"On which continent is the capital of {name}?") == "attribute_changed"
    assert paraphrase_problem(capital, f"The capital of {name} is {capital.item.answer}.") == "not_a_question"
    assert paraphrase_problem(capital, f"Is {capital.item.answer} the capital of {name}?") == "answers_instead"
    assert paraphrase_problem(capital, capital.text.upper()) == "identical_to_seed"
    assert paraphrase_problem(capital, f"Which city in {name} is the capital of?") == "ungrammatical"

    year = _seed("qa_factual", ".world_cup_winner#")
    digits = next(t for t in year.text.split() if t.isdigit())
    changed = year.text.replace(digits, str(int(digits) + 4))
    assert paraphrase_problem(year, changed) in {"entity_missing", "number_changed"}

    topic = _seed("qa_open", ".advantages#")
    s = topic.item.keep[0]
    assert paraphrase_problem(topic, f"What are the good points of {s}?") is None
    assert paraphrase_problem(topic, f"What are the drawbacks and benefits of {s}?") == "attribute_changed"
    assert paraphrase_problem(topic, "What are the benefits of it?") == "entity_missing"


def test_answer_token_rules_drop_a_flipped_or_narrowed_question():
    # Seen in SmolLM2 output: a reworded river question whose subject and object trade places, a "sea or
    # ocean" question narrowed to "ocean", and an agreement slip. Each is dropped, never paired.
    mouth = _seed("qa_factual", ".river_mouth#")
    river = mouth.item.keep[0]
    assert "sea or ocean" in mouth.text
    assert paraphrase_problem(mouth, f"Which sea or ocean flows into the {river}?") == "order_changed"
    assert paraphrase_problem(mouth, f"Which ocean does the {river} flow into?") == "alternative_dropped"
    assert paraphrase_problem(mouth, f"Which sea or ocean does the {river} end in?") is None
    atomic = _seed("qa_factual", ".atomic_number#")
    element = atomic.item.keep[0]
    assert paraphrase_problem(atomic, f"Which atomic number does {element} has?") == "ungrammatical"
    assert paraphrase_problem(atomic, f"Which atomic number does {element} carry?") is None


def test_no_model_means_no_rows():
    specs = [s for s in all_domains() if s.lm is not None]
    assert sorted(s.name for s in specs if s.lm.items is not None) == [
        "conversational", "math", "qa_factual", "qa_open", "tool"]
    assert sorted(s.name for s in specs if s.lm.edit_seeds is not None) == ["code", "math", "personalized", "qa_factual", "tool"]
    assert sorted(s.name for s in specs if s.lm.follow_ups is not None) == ["multi_turn"]
    for spec in specs:
        ctx = GenContext(domain=spec.name, profile="v1.1", need={"PARA_SAFE": 50})
        assert list(spec.generators["lm_generated"](ctx)) == []


# ------------------------------------------------------------------ the domain's hooks drive generation

class ScriptedModel:
    """Answers each seed question with the rewording scripted for it (a stand-in CachedProvider)."""

    model_snapshot = "scripted-1"

    def __init__(self, rewordings: dict[str, str]) -> None:
        self.rewordings = rewordings

    def complete(self, messages, system=None, **params):
        seed = messages[-1]["content"].split(": ", 1)[1]
        return type("Completion", (), {"text": self.rewordings[seed]})()


def test_a_pair_takes_its_answer_payload_and_source_from_the_domains_item():
    item = LMItem(group="kenya.capital", spread_key="capital",
                  phrasings=("What is the capital of Kenya?", "Name the capital city of Kenya."),
                  keep=("Kenya",), keywords=("capital",), foreign=("continent",), others=("Peru",), leaks=("Nairobi",),
                  subcategory="geography", answer="Nairobi", verification_method="alias_exact_match",
                  payload={"aliases_a": ["Nairobi"], "aliases_b": ["Nairobi"]},
                  asks_for="the capital of Kenya; both expect 'Nairobi'")
    model = ScriptedModel({"What is the capital of Kenya?": "Which city is Kenya's capital?",
                           "Name the capital city of Kenya.": "Tell me the capital city of Kenya."})
    ctx = GenContext(domain="qa_factual", profile="v1.1", need={}, llm=model)
    (c,), drops, sent = lm.generate(stand_in_spec([item]), ctx)
    assert sent == 2 and not drops
    assert (c.query_a, c.query_b) in {("Which city is Kenya's capital?", "Tell me the capital city of Kenya."),
                                      ("Tell me the capital city of Kenya.", "Which city is Kenya's capital?")}
    assert (c.label, c.subcategory, c.expected_answer_a, c.expected_answer_b) == \
        ("PARA_SAFE", "geography", "Nairobi", "Nairobi")
    assert c.verification_method == "alias_exact_match" and dict(c.verification_payload) == dict(item.payload)
    assert "the capital of Kenya; both expect 'Nairobi'" in c.rationale
    assert c.provenance.source_file == "sources/curated/x.yaml"
    assert c.provenance.source_record == "kenya.capital#0|kenya.capital#1"
    assert c.provenance.model_snapshot == "scripted-1"

    # The spec's own policy decides: a pair it would put under a no-cache policy is dropped, counted.
    held = stand_in_spec([item], policy=lambda cand: "time_sensitive")
    assert lm.generate(held, ctx)[:2] == ([], {"policy:time_sensitive": 1})
    # A model that answers instead of rewording leaves nothing to pair.
    answering = ScriptedModel({"What is the capital of Kenya?": "Is Nairobi the capital of Kenya?",
                               "Name the capital city of Kenya.": "Tell me the capital city of Kenya."})
    answered = GenContext(domain="qa_factual", profile="v1.1", need={}, llm=answering)
    cands, drops, _ = lm.generate(stand_in_spec([item]), answered)
    assert cands == [] and drops == {"paraphrase:answers_instead": 1, "paraphrase:unpaired": 1}


def test_a_domain_without_a_prompt_section_is_a_clear_error():
    with pytest.raises(InputError, match=r"lm_paraphrase\.yaml:domains: no section for domain 'tarot'"):
        lm.prompt_for("tarot")


@needs_replay
def test_the_generation_asset_records_each_lm_tasks_yield_as_metadata(monkeypatch):
    from dagster import build_asset_context

    from assets.generation import candidate_rows
    from pipeline.orchestration.resources import BuildSettings
    from domains.corpora.extract import read as read_extract

    monkeypatch.setenv("CACHEEVAL_LLM_CACHE_MODE", "replay")
    ctx = build_asset_context(partition_key="qa_open")
    record = candidate_rows(ctx, BuildSettings(profile="v1.1"), corpus_extract=read_extract(Path("/nonexistent")))
    got = ctx.get_output_metadata("result")["lm_yield"].data
    assert list(got) == ["paraphrase"]          # the edit task is not in the build until recorded
    para = got["paraphrase"]
    kept = sum(c.construction_method == "lm_generated" for c in record.candidates)
    assert para["model"].startswith("gguf-sha256:") and para["kept"] == kept >= 1
    assert para["sent"] == para["outputs"] >= para["seeds"] > 0      # a copy is asked again
    assert sum(para["drops"].values()) > 0
