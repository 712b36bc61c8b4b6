"""`cacheeval eval`: score a cache, or a reference baseline, on a benchmark file.

Standard library only (like the harness): scoring a cache needs nothing of the pipeline's stack.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from pipeline.core.errors import CacheEvalError, InputError
from pipeline.core.writer import atomic_write

EPILOG = """examples:
  cacheeval eval --bench outputs/cachebench.jsonl --baseline exact_match
  cacheeval eval --bench outputs/splits/test.jsonl --labels test_labels.jsonl --baseline always_hit
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module mycache --out report.md --json report.json
  cacheeval eval --bench outputs/cachebench.jsonl --cache-module path/to/mycache.py --cache-class MyCache

a cache module exposes a callable `cache(row) -> verdict`, or a class named by --cache-class that is
built with no arguments and is callable or has a `decide(row)` method. A verdict is a
pipeline.harness.Verdict, any object with the same attributes (is_hit, confidence, decision_ms,
tier_used, cost_usd), a dict with those keys, or a bool. A dotted module is imported with the
current directory on the import path; a .py file with its own folder on it.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `cacheeval eval`."""
    parser.epilog = EPILOG
    parser.add_argument("--bench", required=True, metavar="PATH", help="benchmark JSONL file")
    parser.add_argument("--labels", metavar="PATH",
                        help="labels JSONL (id + withheld fields) for a split published without labels")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", metavar="NAME", help="a reference cache: always_miss, always_hit, exact_match")
    which.add_argument("--cache-module", metavar="MOD", help="dotted module name or path to a .py file")
    parser.add_argument("--cache-class", metavar="CLS", help="class in --cache-module to instantiate (no arguments)")
    parser.add_argument("--cache-name", metavar="NAME", help="name shown in the report (default: derived)")
    parser.add_argument("--out", metavar="PATH", help="write the Markdown report here instead of stdout")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON here")
    parser.add_argument("--no-cache", action="store_true",
                        help="evaluate even when the evaluation-result cache holds this exact evaluation")
    parser.add_argument("--on-error", choices=("miss", "raise"), default="miss",
                        help="a raising cache: score the row MISS with tier `error` (default) or stop")


def _import_module(spec: str) -> Any:
    """Import a dotted module name, or a .py file given by path."""
    path = Path(spec)
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        if not path.is_file():
            raise InputError(f"--cache-module {spec}: file not found. Pass an existing .py file or a dotted module name")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # so the module can import its neighbours, as `python file.py` would
        name = f"cacheeval_user_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise InputError(f"--cache-module {spec}: cannot load this file as Python. Pass a .py file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise InputError(f"--cache-module {spec}: importing it raised {_one_line(exc)}. Fix the module") from None
        return module
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # a user's own module next to where they run the command
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and (spec == exc.name or spec.startswith(exc.name + ".")):
            raise InputError(f"--cache-module {spec}: no module named '{exc.name}'. Pass a dotted module "
                             "importable from the current directory, or a path to a .py file") from None
        raise InputError(f"--cache-module {spec}: importing it raised {_one_line(exc)}. Fix the module") from None
    except Exception as exc:
        raise InputError(f"--cache-module {spec}: importing it raised {_one_line(exc)}. Fix the module") from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_cache(module_spec: str, class_name: str | None) -> tuple[Callable[[Any], Any], str]:
    """(cache callable, default name) from a module exposing `cache` or a class `class_name`."""
    module = _import_module(module_spec)
    if class_name is None:
        obj = getattr(module, "cache", None)
        if obj is None:
            raise InputError(f"--cache-module {module_spec}: no attribute named 'cache'. Define "
                             "`cache(row) -> Verdict` in the module, or pass --cache-class NAME")
        default_name = Path(module_spec).stem if module_spec.endswith(".py") else module_spec
    else:
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type):
            found = sorted(n for n, v in vars(module).items() if isinstance(v, type) and not n.startswith("_"))
            raise InputError(f"--cache-class {class_name}: no class of that name in {module_spec}. "
                             f"Classes there: {', '.join(found) or '(none)'}")
        try:
            obj = cls()
        except Exception as exc:
            raise InputError(f"--cache-class {class_name}: {class_name}() raised {_one_line(exc)}. "
                             "The class must be built with no arguments") from None
        default_name = class_name
    if callable(obj) and not isinstance(obj, type):
        return obj, default_name
    decide = getattr(obj, "decide", None)
    if callable(decide):
        return decide, default_name
    what = "'cache'" if class_name is None else f"a {class_name} instance"
    raise InputError(f"--cache-module {module_spec}: {what} is neither callable nor has a decide(row) method. "
                     "Make it a function of the row, or give the class __call__ or decide")


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all (pipeline.core.writer.atomic_write); a missing
    folder is the user's typo, so it is an error here rather than created."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{path}: folder {folder} does not exist. Create it or choose another path")
    atomic_write(target, text.encode("utf-8"))


def run(args: argparse.Namespace) -> int:
    """Score the chosen cache or baseline (through the evaluation-result cache) and write the report."""
    from pipeline.harness.baselines import get_baseline
    from pipeline.harness.cache import EvalCache
    from pipeline.core.hashing import file_sha256
    from pipeline.harness import Report, evaluate, load_bench
    from pipeline.core.registry import UnknownNameError

    if args.cache_class and not args.cache_module:
        raise InputError("--cache-class needs --cache-module. Name the module that defines the class")
    if args.baseline:
        try:
            cache, default_name = get_baseline(args.baseline), args.baseline
        except UnknownNameError as exc:
            raise InputError(f"--baseline: {exc}") from None
    else:
        cache, default_name = load_cache(args.cache_module, args.cache_class)
    rows = load_bench(args.bench, args.labels)
    name = args.cache_name or default_name
    # The result cache serves a stored report only when the benchmark bytes, the cache's code and
    # declared model/settings, the harness version and this configuration are all the same.
    store = EvalCache()  # $CACHEEVAL_EVAL_CACHE_DIR, else <cache root>/eval (pipeline.core.settings)
    config = {"on_error": args.on_error, "cache_name": name,
              "labels_sha256": file_sha256(args.labels) if args.labels else None}
    identity = store.identity(args.bench, cache, config)
    try:
        data, cached = store.cached_run(identity, lambda: evaluate(cache, rows, cache_name=name,
                                                                   on_error=args.on_error).to_dict(),
                                        use_cache=not args.no_cache)
        report = Report(data)
        if cached:
            print(f"{name}: served from the evaluation-result cache (identity matched; --no-cache re-runs)",
                  file=sys.stderr)
    except Exception as exc:
        row_id = getattr(exc, "cacheeval_row_id", None)
        if row_id is None:  # not the cache's exception: a bug here, keep the traceback
            raise
        raise CacheEvalError(f"cache '{name}' raised {_one_line(exc)} on row {row_id}. Fix the cache, or use "
                             "--on-error miss to score such rows as MISS") from None
    markdown = report.to_markdown()
    if args.json:
        write_atomic(args.json, json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    if args.out:
        write_atomic(args.out, markdown)
        d = report.to_dict()
        print(f"{name}: F1 {_fmt(d['metrics']['f1']['value'])}, FHR {_fmt(d['metrics']['fhr']['value'])}, "
              f"{d['bench']['n']} rows, {d['errors']['count']} errors; report written to {args.out}")
    else:
        sys.stdout.write(markdown)
    return 0


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"
