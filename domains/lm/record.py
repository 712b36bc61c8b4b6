"""Recording the LLM replay file: run the build's LM generators (paraphrases, edits, follow-ups)
against the real models and export every response to sources/curated/llm_replay.jsonl (see
pipeline.services.llm.replay, which replays it). It lives with the generators it runs; the replay
service below it knows nothing of domains.

    CACHEEVAL_LLM_CACHE_MODE=both python -m domains.lm.record [--resume] [--domains math tool]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable

from pipeline.core.errors import InputError
from pipeline.services.llm.replay import REPLAY_FILE, export_store, import_entries
from pipeline.services.llm.stores import SQLiteStore


def record(path: Path = REPLAY_FILE, profile: str = "v1.1", *, resume: bool = False,
           domains: Iterable[str] | None = None) -> dict:
    """Run the LM generators (paraphrases, edits and follow-ups) against the real models (each prompt section's
    `provider:`, else the configured one), recording every response into a fresh store, export that
    store to `path`, and return the generation report: per domain and task, the model and its yield.
    `resume`: start from the entries already in `path` (only requests not recorded yet reach a model;
    every entry of the file is kept, so use it to widen a recorded run, not to change its prompts).
    `domains`: only these domains' tasks run."""
    from domains import all_domains
    from domains.base import GenContext
    from domains.lm import edits, followups, yields
    from domains.lm.generate import generate
    from pipeline.core.config import load_profile
    from pipeline.services.llm.providers import open_llm

    prof = load_profile(profile)
    folder = tempfile.mkdtemp(prefix="cacheeval-record-")
    try:
        store = SQLiteStore(Path(folder) / "record.sqlite")
        resumed = import_entries(store, path) if resume and path.is_file() else 0
        llm = open_llm("both", store=store)
        report, started = {"resumed_entries": resumed}, time.monotonic()
        wanted = set(domains) if domains else None
        for spec in (s for s in all_domains() if s.lm is not None and (wanted is None or s.name in wanted)):
            t0 = time.monotonic()
            ctx = GenContext(domain=spec.name, profile=prof.name, need=dict(prof.matrix.get(spec.name, {})),
                             llm=llm, policy=spec.policy)
            yields.clear(spec.name)
            generate(spec, ctx, in_build=False)          # each task asks its section's model (`provider:`)
            edits.generate(spec, ctx, in_build=False)    # recorded before the build asks for them
            followups.generate(spec, ctx, in_build=False)
            report[spec.name] = {**yields.of(spec.name), "seconds": round(time.monotonic() - t0, 1)}
            print(json.dumps({spec.name: report[spec.name]}), file=sys.stderr, flush=True)
        report["entries"] = export_store(store, path)
        report["seconds"] = round(time.monotonic() - started, 1)
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)   # the export is the record; the store is scratch
    return report


def main(argv: list[str] | None = None) -> int:
    """`python -m domains.lm.record`."""
    ap = argparse.ArgumentParser(description="Record the LLM replay entries from the real models.")
    ap.add_argument("--file", type=Path, default=REPLAY_FILE, help="the replay JSONL (default: %(default)s)")
    ap.add_argument("--resume", action="store_true", help="keep the file's entries and ask the models only what it lacks")
    ap.add_argument("--domains", nargs="+", help="only these domains (default: every domain with LM hooks)")
    args = ap.parse_args(argv)
    try:
        print(json.dumps(record(args.file, resume=args.resume, domains=args.domains), indent=1, sort_keys=True))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
