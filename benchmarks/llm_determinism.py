"""Is a local model's response a function of its request? The order requests are sent in, with and
without llama.cpp's prefix reuse; printed.

    bash .ci/install-llm && .venv/bin/cacheeval models fetch
    .venv/bin/python benchmarks/llm_determinism.py [--n 60] [--models smollm2 qwen_coder]

For each model, `--n` recorded requests of that model (sampled from sources/curated/llm_replay.jsonl,
seeded) are sent four times through one loaded model, as the cached provider sends them: in file
order and reversed, each once the way llama-cpp-python (and so `LlamaCppProvider`) works by default
(the previous request's KV cache kept, only what follows the shared prefix evaluated) and once with
every request from an empty KV cache (`Llama.reset()` first). Printed per model and way: responses
equal across the two orders, responses equal to the replay file's, and seconds per pass.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.services.llm.cached_provider import wire_messages  # noqa: E402
from pipeline.services.llm.keys import response_text  # noqa: E402
from pipeline.services.llm.providers import LlamaCppProvider, build_provider, load_llm_config  # noqa: E402
from pipeline.services.llm.replay import load_entries  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="requests per model (default: %(default)s)")
    ap.add_argument("--models", nargs="+", default=["smollm2", "qwen_coder"], help="entries of configs/llm.yaml")
    args = ap.parse_args()
    config, entries = load_llm_config(), load_entries()
    for name in args.models:
        provider = build_provider(config, name)
        if not isinstance(provider, LlamaCppProvider) or provider.gguf is None:
            sys.exit(f"error: {name}: no local GGUF file. Run bash .ci/install-llm, then cacheeval models fetch")
        mine = [e for e in entries if e.model == provider.model_snapshot]
        random.Random(7).shuffle(mine)
        mine = mine[:args.n]
        if not mine:
            print(f"{name}: no recorded requests in the replay file")
            continue
        requests = [(e.key, json.loads(e.request), json.loads(e.response)) for e in mine]
        llama = provider._load()  # the loaded model, to reset its KV cache

        def reuse(request: dict) -> dict:  # the provider as it is: the previous request's prefix kept
            return provider.complete_raw(wire_messages(request.get("system"), request["messages"]),
                                         request.get("tools"), request.get("params") or {})

        def empty(request: dict) -> dict:  # every request from an empty KV cache
            llama.reset()
            return reuse(request)

        print(f"{name} ({provider.model_snapshot[:24]}...): {len(requests)} recorded requests", flush=True)
        for label, call in (("prefix reused (the default, the provider)", reuse), ("empty KV cache (reset first)", empty)):
            answers, seconds = [], []
            for order in (requests, requests[::-1]):
                llama.reset()
                t0 = time.perf_counter()
                answers.append({key: response_text(call(request)) for key, request, _ in order})
                seconds.append(time.perf_counter() - t0)
            same_order = sum(answers[0][k] == answers[1][k] for k, _, _ in requests)
            same_file = sum(answers[0][k] == response_text(recorded) for k, _, recorded in requests)
            print(f"  {label:42s} same in both orders {same_order}/{len(requests)}; same as the replay file "
                  f"{same_file}/{len(requests)}; {seconds[0]:.1f} s and {seconds[1]:.1f} s per pass", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
