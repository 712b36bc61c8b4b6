"""`cacheeval validate PATH...`: check benchmark files against the row contract.

Prints every contract error (one line each) and exits 1 if any file has one; otherwise prints
`ok: <file>: N rows` per file."""
from __future__ import annotations

import argparse
import sys

EPILOG = """examples:
  cacheeval validate outputs/cachebench.jsonl
  cacheeval validate outputs/splits/train.jsonl outputs/splits/dev.jsonl
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.add_argument("paths", nargs="+", metavar="PATH", help="benchmark JSONL file(s) to check")


def run(args: argparse.Namespace) -> int:
    # jsonschema loads here, not at import: `cacheeval --help` stays light.
    from domains import domain_names
    from pipeline.harness.contract import check_file
    from pipeline.core.errors import InputError

    names = domain_names()  # the registered domains: the schema's enum and id pattern

    failed = False
    for path in args.paths:
        try:
            n_rows, errors = check_file(path, domains=names)
        except InputError as exc:
            n_rows, errors = 0, [f"error: {exc}."]
        for line in errors:
            print(line, file=sys.stderr)
        if errors:
            failed = True
        else:
            print(f"ok: {path}: {n_rows} rows")
    return 1 if failed else 0
