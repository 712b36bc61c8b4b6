"""`cacheeval build` and `cacheeval check`."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pipeline.core import settings
from pipeline.app.cli.places import check_places
from pipeline.core.errors import BuildError

EXAMPLES = """examples:
  cacheeval build                              # the embedded default (v1.1) into outputs/
  cacheeval build --profile smoke --out /tmp/b # 250 rows, elsewhere
  cacheeval build --datasets-dir ../shared/datasets --out /tmp/corpora
"""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets-dir", type=Path, default=None,
                   help="folder of upstream corpora (default: $CACHEEVAL_DATASETS_DIR; none = embedded default)")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="root of every cache: embeddings, LLM responses, sandbox verdicts, unpacked models "
                        "(default: $CACHEEVAL_CACHE_DIR or .cache/cacheeval)")


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EXAMPLES
    p.add_argument("--profile", default=None,
                   help=f"sampling profile from configs/sampling.yaml (default {settings.DEFAULT_PROFILE})")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: the project's outputs/)")
    p.add_argument("--commercial-only", action="store_true",
                   help="drop rows from corpora whose licence forbids commercial use (QQP, MRPC, ShareGPT, ...)")
    _common(p)


def configure_check(p: argparse.ArgumentParser) -> None:
    p.epilog = "Rebuilds the profile named in <outputs>/manifest.json into a temporary folder and compares every file."
    p.add_argument("--outputs", type=Path, default=None, help="the committed outputs folder (default: outputs/)")
    _common(p)


def _datasets(resolved: settings.Settings) -> Path | None:
    d = resolved.datasets_dir
    if d is not None and not d.is_dir():
        raise BuildError(f"{d}: datasets dir not found. Pass an existing folder to --datasets-dir")
    return d


def run(args) -> int:
    resolved = settings.resolve(datasets_dir=args.datasets_dir, cache_dir=args.cache_dir,
                                profile=getattr(args, "profile", None))
    settings.ensure_offline(resolved)
    from pipeline.core.paths import OUTPUTS

    check_places(resolved, None if args._command == "check" else (args.out or OUTPUTS), bool(args.cache_dir))
    if args._command == "check":
        return _check(args, resolved)
    from pipeline.app.cli.materialize import run_build

    t0 = time.perf_counter()
    res = run_build(resolved.profile, args.out, _datasets(resolved), resolved.cache_root,
                    progress=lambda s: print(s, file=sys.stderr), commercial_only=args.commercial_only)
    print(f"built profile {res.profile}: {sum(res.cells.values())} rows into {res.out_dir} in {time.perf_counter() - t0:.1f}s")
    _warm_slices(res, resolved, args.commercial_only)
    print(f"kappa (ensemble vs held-out): {res.kappa:.3f}" if res.kappa is not None else "kappa: n/a")
    print("rows per cell:")
    by_domain: dict[str, list[str]] = {}
    for cell, n in res.cells.items():
        d, lab = cell.split("/")
        by_domain.setdefault(d, []).append(f"{lab} {n}")
    for d, cells in by_domain.items():
        print(f"  {d:15s} " + " · ".join(cells))
    if res.drops:
        print("drops by reason:")
        for reason, n in sorted(res.drops.items(), key=lambda kv: (-kv[1], kv[0]))[:25]:
            print(f"  {n:6d}  {reason}")
    print("time per stage (s):")
    stages: dict[str, float] = {}
    for step, s in res.stage_seconds.items():
        stages[step] = stages.get(step, 0.0) + s
    for step, s in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"  {s:7.1f}  {step}")
    return 0


def _warm_slices(res, resolved: settings.Settings, commercial_only: bool) -> None:
    """The committed quarterly slices rebuilt on the benchmark just built (into a temporary folder,
    nothing kept but the caches), so that the first `cacheeval check` after a cold build finds their
    candidates, embeddings and scores cached. Only when this build is of the committed outputs'
    profile (the slices are made on that benchmark), and not --commercial-only."""
    from pipeline.app.cli.evolve import check_slices
    from pipeline.core.paths import OUTPUTS

    mpath, slices = OUTPUTS / "manifest.json", OUTPUTS / "evolving"
    try:
        committed = json.loads(mpath.read_text(encoding="utf-8")).get("profile")
    except (OSError, ValueError):
        return
    if committed != res.profile or commercial_only or not (slices / "manifest.json").is_file():
        return
    from pipeline.core.hashing import file_sha256

    quarters = json.loads((slices / "manifest.json").read_text(encoding="utf-8")).get("quarters", {})
    made_on = {q.get("inputs", {}).get("cachebench.jsonl") for q in quarters.values()}
    if file_sha256(Path(res.out_dir) / "cachebench.jsonl") not in made_on:
        # another benchmark (a build with --datasets-dir, or changed code): a check rebuilds the committed
        # slices on the committed benchmark, so slices rebuilt on this one would fill nothing it reads
        print("the committed adversarial slices were made on another benchmark: their caches are not filled")
        return
    t0 = time.perf_counter()
    diffs = check_slices(slices, resolved.cache_root, bench=Path(res.out_dir) / "cachebench.jsonl")
    note = f"; {len(diffs)} of their files differ from the committed ones" if diffs else ""
    print(f"caches of the committed adversarial slices filled in {time.perf_counter() - t0:.1f}s{note}")


def _check(args, resolved: settings.Settings) -> int:
    from pipeline.app.cli.materialize import compare_outputs, run_build
    from pipeline.core.paths import OUTPUTS

    committed = args.outputs or OUTPUTS
    mpath = committed / "manifest.json"
    if not mpath.is_file():
        raise BuildError(f"{mpath}: no build manifest. Run `cacheeval build` first")
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    datasets = _datasets(resolved)
    if manifest["inputs"].get("corpora") and datasets is None:
        raise BuildError(f"{mpath}: the committed build used corpora {manifest['inputs']['corpora']}. Pass --datasets-dir")
    with tempfile.TemporaryDirectory(prefix="cacheeval-check-") as tmp:
        t0 = time.perf_counter()
        run_build(manifest["profile"], Path(tmp), datasets, resolved.cache_root,
                  progress=lambda s: print(s, file=sys.stderr))
        diffs = compare_outputs(committed, Path(tmp))
    from pipeline.app.cli.evolve import check_slices  # the committed quarterly adversarial slices, rebuilt too
    diffs += check_slices(committed / "evolving", resolved.cache_root)
    if diffs:
        for d in diffs:
            print(f"error: {committed / d.file}: {d.detail}. The committed outputs differ from a rebuild; "
                  "rebuild with `cacheeval build` and commit, or find the non-determinism", file=sys.stderr)
        return 1
    from pipeline.app.cli.materialize import UNLISTED_OUTPUTS
    from pipeline.orchestration.step_cache import summary

    unlisted = sum(1 for r in UNLISTED_OUTPUTS if (committed / r).is_file())
    print(f"ok: {len(manifest['outputs']) + 1 + unlisted} committed outputs of profile {manifest['profile']} are "
          f"byte-identical to a rebuild ({time.perf_counter() - t0:.1f}s)")
    if summary():
        print(summary())
    return 0
