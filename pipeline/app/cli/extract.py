"""`cacheeval extract`: regenerate the committed extract of the corpora's verified candidate pairs
(sources/extract/pairs.jsonl, domains.corpora.extract) from a datasets dir, or check it (--check)."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pipeline.core import settings
from pipeline.core.errors import BuildError, InputError

EXAMPLES = """examples:
  cacheeval extract --datasets-dir ../shared/datasets            # rewrite sources/extract/pairs.jsonl
  cacheeval extract --datasets-dir ../shared/datasets --check    # compare with it byte for byte, write nothing
  cacheeval extract --datasets-dir ../shared/datasets --out /tmp/pairs.jsonl
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EXAMPLES
    p.add_argument("--datasets-dir", type=Path, default=None,
                   help="folder of upstream corpora (default: $CACHEEVAL_DATASETS_DIR); required")
    p.add_argument("--out", type=Path, default=None, help="the extract file (default: sources/extract/pairs.jsonl)")
    p.add_argument("--check", action="store_true",
                   help="compare the regenerated extract with --out byte for byte; exit 1 when they differ")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="root of every cache (default: $CACHEEVAL_CACHE_DIR or .cache/cacheeval)")


def make(datasets_dir: Path, cache_dir: Path | None):
    """The extract (domains.corpora.extract.Extract) the `extract_corpora` job makes from `datasets_dir`."""
    from dagster import DagsterInstance, FilesystemIOManager, materialize

    from pipeline.app.jobs import all_assets, extract_job
    from pipeline.app.cli.materialize import QUIET, _first_error
    from pipeline.orchestration.resources import BuildSettings

    with tempfile.TemporaryDirectory(prefix="cacheeval-extract-") as tmp:
        build = BuildSettings(out_dir=str(Path(tmp) / "out"), datasets_dir=str(datasets_dir),
                              cache_dir=str(cache_dir or ""))
        instance = DagsterInstance.ephemeral()
        res = materialize(all_assets, selection=extract_job.selection, instance=instance, raise_on_error=False,
                          resources={"build": build, "io_manager": FilesystemIOManager(base_dir=str(Path(tmp) / "st"))},
                          run_config=QUIET)
        if not res.success:
            raise BuildError(f"extract failed: {_first_error(instance, res.run_id)}")
        return res.asset_value("corpus_extract")


def run(args) -> int:
    resolved = settings.resolve(datasets_dir=args.datasets_dir, cache_dir=args.cache_dir)
    settings.ensure_offline(resolved)
    from pipeline.core.paths import EXTRACT
    from pipeline.core.writer import folder_problem

    if resolved.datasets_dir is None or not resolved.datasets_dir.is_dir():
        raise InputError(f"{resolved.datasets_dir or '--datasets-dir'}: no datasets dir. Pass --datasets-dir DIR "
                         "(a folder of corpora such as ../shared/datasets)")
    out = Path(args.out or EXTRACT)
    if not args.check:
        problem = folder_problem(out.parent, 64)
        if problem:
            raise InputError(f"{out}: {problem}")
    elif not out.is_file():
        raise InputError(f"{out}: no extract to check. Run `cacheeval extract --datasets-dir DIR` first")
    t0 = time.perf_counter()
    value = make(resolved.datasets_dir, resolved.cache_root)
    methods = ", ".join(f"{m} {n}" for m, n in value.methods().items())
    if args.check:
        old = out.read_bytes()
        if old == value.data:
            print(f"{out}: identical ({len(value.candidates)} pairs, sha256 {value.sha256[:12]})")
            return 0
        old_lines, new_lines = old.splitlines(), value.data.splitlines()
        n = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b), min(len(old_lines), len(new_lines)))
        print(f"error: {out}:{n + 1}: differs from the extract the datasets dir gives "
              f"({len(old_lines)} vs {len(new_lines)} lines). Regenerate it with `cacheeval extract`", file=sys.stderr)
        return 1
    from domains.corpora.extract import write

    write(out, value.data)
    print(f"wrote {out}: {len(value.candidates)} pairs ({methods}), sha256 {value.sha256[:12]}, "
          f"in {time.perf_counter() - t0:.1f}s")
    return 0
