"""A small trial of every LM generation task on every domain that has it, with each local model:
prompts sent, non-empty outputs, rows kept and drops by reason, per task, domain and model.

    python -m domains.lm.trial [--models smollm2 qwen_coder | sections] [--limit 10] [--domains D ...]
                               [--tasks paraphrase edit followup] [--mode both|replay] [--json FILE]

Tasks: `paraphrase` (domains/lm/generate.py: PARA_SAFE pairs of rewordings; `limit` items, two
phrasings each), `edit` (domains/lm/edits.py: ADVERSARIAL rewrites; `limit` seeds) and `followup`
(domains/lm/followups.py: rows from model-written follow-ups; `limit` conversation states). Responses go
through the LLM response cache under the cache root (mode both), so a second run is served from it;
`--mode replay` reads only that cache (a response not in it is an error, no model is called).
Nothing is written to outputs/ or to the replay file. Needs the models (bash .ci/install-llm, then
cacheeval models fetch).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from domains.base import GenContext

SECTIONS = "sections"


def run(models: list[str], limit: int | None, domains: list[str] | None = None,
        tasks: tuple[str, ...] = ("paraphrase", "edit", "followup"), mode: str = "both", replay_file: Path | None = None) -> list[dict]:
    """One record per (model, task, domain): sent, outputs, kept, drops, seconds and an example kept row."""
    from domains import all_domains
    from domains.lm import edits, followups, generate, yields
    from pipeline.core import settings
    from pipeline.services.llm.providers import load_llm_config, open_llm
    from pipeline.services.llm.replay import replay_llm
    from pipeline.services.llm.stores import open_store

    config, resolved = load_llm_config(), settings.resolve()  # this script is an entry point
    names = {p.get("snapshot"): name for name, p in config.providers.items()}
    store = open_store(settings.llm_db(resolved.cache_root), config.postgres_url(resolved))
    records = []
    for model in models:
        # a named model answers every section (pinned); "sections": each section's own `provider:`
        if replay_file is not None:
            llm = replay_llm(replay_file)
        else:
            llm = open_llm(mode, provider=None if model == SECTIONS else model, store=store, pinned=model != SECTIONS,
                           resolved=resolved)
        for spec in (s for s in all_domains() if s.lm is not None and (not domains or s.name in domains)):
            ctx = GenContext(domain=spec.name, profile="v1.1", need={}, llm=llm, policy=spec.policy)
            todo = []
            if spec.lm.items is not None and "paraphrase" in tasks:
                todo.append(("paraphrase", lambda: _paraphrase(generate.generate(spec, ctx, limit=limit, in_build=False), spec.name)))
            if spec.lm.edit_seeds is not None and "edit" in tasks:
                todo.append(("edit", lambda: _edit(edits.generate(spec, ctx, in_build=False, limit=limit))))
            if spec.lm.follow_ups is not None and "followup" in tasks:
                todo.append(("followup", lambda: _followup(followups.generate(spec, ctx, in_build=False, limit=limit),
                                                           spec.name)))
            for task, call in todo:
                t0 = time.monotonic()
                rec = call()
                answered = yields.of(spec.name).get(task, {}).get("model")   # the model the section asked
                records.append({"model": names.get(answered, model), "task": task, "domain": spec.name, **rec,
                                "seconds": round(time.monotonic() - t0, 1)})
                print(json.dumps(records[-1], ensure_ascii=False), file=sys.stderr)
    return records


def _example(cands) -> list[str] | None:
    return [cands[0].query_a, cands[0].query_b] if cands else None


def _paraphrase(result, domain: str) -> dict:
    from domains.lm import yields

    cands, drops, sent = result
    rec = yields.of(domain)["paraphrase"]
    return {"seeds": rec["seeds"], "sent": sent, "outputs": rec["outputs"], "kept": len(cands),
            "drops": dict(sorted(drops.items())), "example": _example(cands)}


def _edit(result) -> dict:
    cands, y = result
    return {**y.as_dict(), "example": _example(cands)}


def _followup(cands, domain: str) -> dict:
    from collections import Counter

    from domains.lm import yields

    rec = yields.of(domain)["followup"]
    return {**{k: rec[k] for k in ("seeds", "sent", "outputs", "kept", "drops")},
            "labels": dict(sorted(Counter(c.label for c in cands).items())), "example": _example(cands)}


def table(records: list[dict]) -> str:
    """The yield as a Markdown table."""
    lines = ["| model | task | domain | seeds | sent | outputs | kept | drops by reason | s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        drops = ", ".join(f"{k} {v}" for k, v in sorted(r["drops"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {r['model']} | {r['task']} | {r['domain']} | {r['seeds']} | {r['sent']} | {r['outputs']} | "
                     f"{r['kept']} | "
                     f"{drops or '-'} | {r['seconds']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Trial of the LM generation tasks: yield per task, domain and model.")
    ap.add_argument("--models", nargs="+", default=["smollm2", "qwen_coder"],
                    help=f"entries of configs/llm.yaml, each answering every section; '{SECTIONS}': each "
                         f"prompt section's own provider (what the build and the recording use)")
    ap.add_argument("--limit", type=int, default=10,
                    help="items (paraphrase) or seeds (edit) per task and domain; 0: the prompt file's own counts")
    ap.add_argument("--domains", nargs="+", help="only these domains (default: every domain with LM hooks)")
    ap.add_argument("--tasks", nargs="+", choices=("paraphrase", "edit", "followup"),
                    default=["paraphrase", "edit", "followup"])
    ap.add_argument("--mode", choices=("both", "replay"), default="both",
                    help="replay: answer only from the response cache, never call a model")
    ap.add_argument("--json", type=Path, help="also write the records here")
    ap.add_argument("--replay-file", type=Path,
                    help="answer from this replay JSONL (each section's recorded model) instead of the cache: the "
                         "yield of a recorded run; implies --models sections")
    args = ap.parse_args(argv)
    models = [SECTIONS] if args.replay_file else args.models
    records = run(models, args.limit or None, args.domains, tuple(args.tasks), args.mode, args.replay_file)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
