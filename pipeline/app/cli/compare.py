"""`cacheeval compare A.json B.json`: two `cacheeval eval --json` reports on the same rows, compared
on FHR and on recall with McNemar's exact test (pipeline.harness.compare). Reports that are not on
the same rows are a one-line error."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline.core.errors import InputError

EPILOG = """example:
  cacheeval eval --bench outputs/cachebench.jsonl --reference gptcache-minilm@0.80 --json a.json --out a.md
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module mycache --json b.json --out b.md
  cacheeval compare a.json b.json
"""


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `cacheeval compare`."""
    parser.epilog = EPILOG
    parser.add_argument("a", metavar="A.json", help="report of the first cache (cacheeval eval --json)")
    parser.add_argument("b", metavar="B.json", help="report of the second cache")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def _load(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found. Pass a report written by cacheeval eval --json") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a JSON report ({type(exc).__name__}). "
                         "Pass a report written by cacheeval eval --json") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a JSON report (a {type(data).__name__}). "
                         "Pass a report written by cacheeval eval --json")
    return data


def run(args: argparse.Namespace) -> int:
    """Print the comparison; exit 0 whatever it finds (a gate belongs to eval --max-fhr)."""
    from pipeline.harness.compare import compare_reports, render_comparison

    if not 0.0 < args.alpha < 1.0:
        raise InputError(f"--alpha {args.alpha:g} is outside (0, 1). Pass a level such as 0.05")
    a, b = _load(args.a), _load(args.b)
    name_a = a.get("cache_name") or args.a
    name_b = b.get("cache_name") or args.b
    if name_a == name_b:  # the same cache scored twice (another protocol, say): name them by file
        name_a, name_b = args.a, args.b
    result = compare_reports(a, b, name_a, name_b, alpha=args.alpha)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print(render_comparison(result), end="")
    return 0
