"""The `cacheeval` command. Each subcommand lives in its own module exposing `configure(parser)`
and `run(args) -> int`; modules are light to import (heavy libraries load inside `run`)."""
from __future__ import annotations

import argparse
import importlib
import sys

from pipeline.core.errors import CacheEvalError

# subcommand → (module, one-line help)
COMMANDS = {
    "eval": ("pipeline.app.cli.eval", "score a cache (or a baseline) on a benchmark file"),
    "references": ("pipeline.app.cli.references", "list the reference caches `eval --reference` scores"),
    "compare": ("pipeline.app.cli.compare", "compare two eval reports on the same rows (McNemar's exact test)"),
    "validate": ("pipeline.app.cli.validate", "check a benchmark file against the row contract"),
    "build": ("pipeline.app.cli.build", "build the benchmark (materialises the Dagster asset graph in process)"),
    "check": ("pipeline.app.cli.build", "rebuild into a temporary folder and compare every committed output byte for byte"),
    "extract": ("pipeline.app.cli.extract", "regenerate (or --check) the committed extract of the corpora's verified pairs"),
    "sources": ("pipeline.app.cli.sources", "list the upstream corpora found in a datasets dir"),
    "llm-cache": ("pipeline.app.cli.llm_cache", "inspect or evict the LLM response cache"),
    "models": ("pipeline.app.cli.models", "join and verify the local language models' GGUF files (cacheeval models fetch)"),
    "evolve": ("pipeline.app.cli.evolve", "build one quarter's adversarial slice against the target cache (outputs/evolving/)"),
    "ui": ("pipeline.app.cli.ui", "start the Dagster UI (DAGSTER_HOME defaults to .dagster_home/)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheeval",
        description="CacheEval: build the semantic-cache benchmark and score caches on it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue  # a subcommand whose module has not landed yet
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        getattr(mod, f"configure_{name.replace('-', '_')}", mod.configure)(p)
        p.set_defaults(_module=mod, _command=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args) or 0)
    except CacheEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
