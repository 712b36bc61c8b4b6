"""A model per LM task: a prompt section names its provider (`provider:` an entry of configs/llm.yaml),
the run opens it over the same response cache and mode, recording stores each section's responses
under its own model, and the replay file serves both models with neither installed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from domains.base import GenContext, LMItem
from domains.lm import generate as lm, section_llm
from pipeline.core.errors import InputError
from pipeline.services.llm.cached_provider import ReplayMissError
from pipeline.services.llm.providers import LlamaCppProvider, open_llm
from pipeline.services.llm.replay import dump_entries, load_entries, replay_store, store_entries
from llm_doubles import stand_in_spec
from pipeline.services.llm.stores import SQLiteStore

SMALL, CODER = "gguf-sha256:" + "a" * 64, "gguf-sha256:" + "b" * 64
ITEM = LMItem(group="kenya.capital", spread_key="capital",
              phrasings=("What is the capital of Kenya?", "Name the capital city of Kenya."),
              keep=("Kenya",), keywords=("capital",), foreign=("continent",), others=("Peru",), leaks=("Nairobi",),
              subcategory="geography", answer="Nairobi", verification_method="alias_exact_match",
              payload={"aliases_a": ["Nairobi"], "aliases_b": ["Nairobi"]}, asks_for="the capital of Kenya")
# What each stand-in model says to each seed: only the coder's rewordings pass the rules.
SAYS = {SMALL: {"What is the capital of Kenya?": "What is the capital of Kenya?",
                "Name the capital city of Kenya.": "Name the capital city of Kenya."},
        CODER: {"What is the capital of Kenya?": "Which city is Kenya's capital?",
                "Name the capital city of Kenya.": "Tell me the capital city of Kenya."}}


def _config(tmp_path: Path) -> Path:
    """configs/llm.yaml with two local models whose GGUF files are absent (snapshots pinned)."""
    path = tmp_path / "llm.yaml"
    path.write_text(f"""
provider: small
providers:
  small: {{kind: llama_cpp, gguf: {tmp_path}/absent-small.gguf, snapshot: "{SMALL}", upstream: Org/Small}}
  coder: {{kind: llama_cpp, gguf: {tmp_path}/absent-coder.gguf, snapshot: "{CODER}", upstream: Org/Coder}}
cache: {{mode: replay, sqlite_path: {tmp_path}/unused.sqlite}}
""", encoding="utf-8")
    return path


@pytest.fixture
def models(monkeypatch):
    """The llama.cpp boundary replaced by a double: each model answers from SAYS; calls are counted."""
    calls: list[str] = []

    def complete_raw(self, messages, tools, params):
        calls.append(self.model_snapshot)
        text = SAYS[self.model_snapshot][messages[-1]["content"].split(": ", 1)[1]]
        return {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 5}}

    monkeypatch.setattr(LlamaCppProvider, "complete_raw", complete_raw)
    monkeypatch.setattr(lm, "upstream", lambda snapshot: {SMALL: "Org/Small", CODER: "Org/Coder"}[snapshot])
    return calls


def _generate(llm, provider: str | None, monkeypatch) -> tuple[list, dict]:
    section = {**lm.prompt_for("qa_factual"), "provider": provider}
    section.pop("in_build", None)
    monkeypatch.setattr(lm, "prompt_for", lambda domain: section)
    monkeypatch.setattr(lm, "seeds", lambda spec, prompt, ctx, limit=None: [lm.Seed(ITEM, 0), lm.Seed(ITEM, 1)])
    cands, drops, _ = lm.generate(stand_in_spec([ITEM]), GenContext(domain="qa_factual", profile="v1.1", need={}, llm=llm))
    return cands, dict(drops)


def test_named_opens_another_entry_over_the_same_store_and_mode(tmp_path):
    cfg = _config(tmp_path)
    llm = open_llm("both", config_path=cfg, store=SQLiteStore(tmp_path / "s.sqlite"))
    coder = llm.named("coder")
    assert (llm.entry, llm.model_snapshot, coder.entry, coder.model_snapshot) == ("small", SMALL, "coder", CODER)
    assert coder.store is llm.store and coder.mode == llm.mode == "both"
    assert llm.named("coder") is coder and llm.named(None) is llm and llm.named("small") is llm
    with pytest.raises(InputError, match=r"no provider 'huge'"):
        llm.named("huge")
    pinned = open_llm("both", provider="coder", config_path=cfg, store=llm.store, pinned=True)
    assert pinned.named("small") is pinned       # a trial comparing models: one model answers every section


def test_a_section_records_with_its_model_and_replays_without_either_installed(tmp_path, models, monkeypatch):
    cfg = _config(tmp_path)
    store = SQLiteStore(tmp_path / "record.sqlite", clock=lambda: 1_700_000_000)
    recording = open_llm("both", config_path=cfg, store=store)          # the configured default: small
    (c,), drops = _generate(recording, "coder", monkeypatch)
    assert models == [CODER, CODER] and drops == {}                     # the section's model was called
    assert c.provenance.model_snapshot == CODER and c.source == "lm:Org/Coder"
    assert _generate(recording, None, monkeypatch)[0] == []             # the default model only copies
    assert models == [CODER, CODER, SMALL, SMALL, SMALL, SMALL, SMALL, SMALL]  # copies are asked again (3 attempts)

    path = tmp_path / "llm_replay.jsonl"
    dump_entries(store_entries(store), path)
    assert sorted({e.model for e in load_entries(path)}) == [SMALL, CODER]
    calls = len(models)
    replay = open_llm("replay", config_path=cfg, store=replay_store(path))   # no GGUF file exists
    assert _generate(replay, "coder", monkeypatch)[0] == [c]
    assert len(models) == calls                                          # nothing reached a model

    # a section's model with no recorded entries is a replay miss naming the fix, never another model's answer
    only_small = tmp_path / "small_only.jsonl"
    dump_entries([e for e in load_entries(path) if e.model == SMALL], only_small)
    with pytest.raises(ReplayMissError, match=r"no recorded response for prompt qa_factual\.paraphrase.*record"):
        _generate(open_llm("replay", config_path=cfg, store=replay_store(only_small)), "coder", monkeypatch)


def test_an_unknown_section_provider_names_the_section(tmp_path):
    llm = open_llm("replay", config_path=_config(tmp_path), store=SQLiteStore(tmp_path / "s.sqlite"))
    with pytest.raises(InputError, match=r"lm_paraphrase\.yaml:domains\.qa_factual\.provider: .*no provider "
                                         r"'gpt9'.*Name an entry of configs/llm\.yaml"):
        section_llm(llm, {"provider": "gpt9"}, "configs/prompts/lm_paraphrase.yaml:domains.qa_factual")


def test_every_committed_lm_row_names_the_model_its_response_came_from():
    from pipeline.core.paths import PROJECT_ROOT
    from pipeline.services.llm.providers import load_llm_config

    bench = PROJECT_ROOT / "outputs" / "cachebench.jsonl"
    upstreams = {f"lm:{p['upstream']}": p["snapshot"] for p in load_llm_config().providers.values()
                 if p.get("upstream") and p.get("snapshot")}
    recorded = {e.model for e in load_entries()}
    rows = [json.loads(line) for line in bench.read_text(encoding="utf-8").splitlines()]
    lm_rows = [r for r in rows if r["construction_method"] == "lm_generated"]
    assert lm_rows
    for r in lm_rows:
        snapshot = r["provenance"]["model_snapshot"]
        assert upstreams.get(r["source"]) == snapshot, r["id"]      # the source names that snapshot's model
        assert snapshot in recorded, r["id"]                        # and the replay file holds its responses
