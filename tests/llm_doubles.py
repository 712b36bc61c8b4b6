"""Test doubles for the LLM response cache, shared by the SQLite and PostgreSQL store tests and the
cache-integrity tests: an injectable clock, a provider that counts upstream calls, two real writer
processes racing on one store, a fixed prompt, a stand-in domain for the LM generator's tests, and the
error a prompt-file loader gives for a file's text."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from domains.base import DomainSpec, LMHooks, LMItem
from pipeline.core.paths import PROJECT_ROOT
from pipeline.services.llm.cached_provider import LLMError

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z


class FakeClock:
    """An injectable clock; tests move it by hand."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class CountingProvider:
    """Answers every request with a deterministic text derived from it, counting upstream calls.

    `behaviour` makes it misbehave: "error" raises LLMError, "error_body" returns an error object,
    "empty" returns an empty message.
    """

    name = "fake"

    def __init__(self, snapshot: str = "fake-2024-01-01", behaviour: str = "ok") -> None:
        self.model_snapshot = snapshot
        self.behaviour = behaviour
        self.calls = 0

    def key_settings(self) -> dict:
        return {"chat_format": "plain"}

    def complete_raw(self, messages, tools, params) -> dict:
        self.calls += 1
        if self.behaviour == "error":
            raise LLMError("fake: upstream failed. Try again")
        if self.behaviour == "error_body":
            return {"error": {"message": "overloaded"}}
        text = "" if self.behaviour == "empty" else f"answer #{self.calls} to {messages[-1]['content']}"
        return {"id": f"c{self.calls}", "model": self.model_snapshot,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}}


WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from pipeline.services.llm.keys import build_request, make_entry
    from pipeline.services.llm.stores import open_store
    where, table, worker, count, overlap, go = sys.argv[1:7]
    store = open_store(None if where.startswith("postgresql") else where,
                       where if where.startswith("postgresql") else None, table=table)
    while not Path(go).exists():
        time.sleep(0.005)
    written = 0
    for i in range(int(count)):
        # the first `overlap` prompts are the same in both workers: both race to insert them
        name = f"shared {i}" if i < int(overlap) else f"worker {worker} prompt {i}"
        req = build_request("fake", "fake-2024-01-01", [{"role": "user", "content": name}])
        raw = {"choices": [{"message": {"role": "assistant", "content": "reply to " + name}}], "usage": {}}
        written += store.put(make_entry(req, raw, 1700000000 + i))
        if i % 7 == 0:
            store.get(make_entry(req, raw, 0).key)
    store.close()
    print(written)
""")


def run_two_writers(where: str, table: str, tmp: Path, count: int = 300, overlap: int = 50) -> list[int]:
    """Run two real processes that write `count` entries each at the same moment; their put counts."""
    go = tmp / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, where, table, str(w), str(count), str(overlap), str(go)],
                              cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in (1, 2)]
    time.sleep(1.0)  # both import and open the store before either starts writing
    go.write_text("go")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "warning" not in err, err
        results.append(int(json.loads(out.strip())))
    return results


MSGS = [{"role": "user", "content": "What is the capital of France?"}]


def stand_in_spec(items: list[LMItem], policy=lambda c: None) -> DomainSpec:
    """A stand-in qa_factual domain whose LM items are `items` (the prompt file's qa_factual section,
    keywords and phrasings, serves it): the LM generator's tests need no curated file."""
    return DomainSpec(name="qa_factual", description="stand-in", generators={}, verifier="alias_exact_match",
                      policy=policy, lm=LMHooks(items=lambda keywords: items, source_file="sources/curated/x.yaml"))


class ScriptedChat:
    """A stand-in CachedProvider for the LM tasks: the request is the text of the last user message
    between `prefix` and `suffix`; each request is answered with the outputs scripted for it, in
    turn (the last one repeats), and with the request itself when none is scripted."""

    model_snapshot = "gguf-sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

    def __init__(self, outputs: dict[str, list[str]], prefix: str = ": ", suffix: str = "") -> None:
        self.outputs, self.prefix, self.suffix, self.asked = {k: list(v) for k, v in outputs.items()}, prefix, suffix, []

    def complete(self, messages, system=None, **params):
        text = messages[-1]["content"].split(self.prefix, 1)[-1]
        request = text[: -len(self.suffix)] if self.suffix and text.endswith(self.suffix) else text
        self.asked.append((request, params.get("seed")))
        queue = self.outputs.get(request) or [request]
        return type("Completion", (), {"text": queue.pop(0) if len(queue) > 1 else queue[0]})()


def prompt_file_error(module, text: str, tmp_path: Path, monkeypatch) -> str:
    """The one-line InputError that `module.load_prompts()` (domains.lm.edits, followups ...) raises
    for a prompt file holding `text`; the loader's cache is cleared before and after."""
    from pipeline.core.errors import InputError

    bad = tmp_path / Path(module.PROMPTS_REL).name
    bad.write_text(text, encoding="utf-8")
    monkeypatch.setattr(module, "PROMPTS_FILE", bad)
    module.load_prompts.cache_clear()
    try:
        module.load_prompts()
    except InputError as exc:
        return str(exc)
    finally:
        module.load_prompts.cache_clear()
    raise AssertionError(f"{module.__name__}.load_prompts() accepted the prompt file")
