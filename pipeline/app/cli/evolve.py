"""`cacheeval evolve`: one quarter's adversarial slice, run in process (the assets the schedule runs),
and `check_slices`, the part of `cacheeval check` that rebuilds every committed slice."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pipeline.core.errors import BuildError, InputError

EXAMPLES = """examples:
  cacheeval evolve --quarter 2026-Q4                              # against configs/evolving.yaml's target (verified)
  cacheeval evolve --quarter 2027-Q1 --target gptcache-mpnet@0.80 --out /tmp/slices
  cacheeval evolve --quarter 2027-Q1 --target module:my_cache.py  # a user cache (pair or store/lookup)
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.epilog = EXAMPLES
    p.add_argument("--quarter", required=True, help="the quarter, YYYY-QN (e.g. 2026-Q4)")
    p.add_argument("--target", default=None, help="the cache to attack: a reference name (cacheeval references) or "
                                                  "module:<file.py>[:<Class>] (default: configs/evolving.yaml)")
    p.add_argument("--out", type=Path, default=None, help="folder of the slices (default: outputs/evolving)")
    p.add_argument("--bench", type=Path, default=None, help="the main benchmark (default: outputs/cachebench.jsonl)")
    p.add_argument("--datasets-dir", type=Path, default=None,
                   help="folder of upstream corpora: their records join the held-out seed pool")
    p.add_argument("--cache-dir", type=Path, default=None, help="root of every cache (default: .cache/cacheeval)")


def run_evolve(quarter: str, target: str | None = None, out_dir: Path | None = None, bench: Path | None = None,
               datasets_dir: Path | None = None, cache_dir: Path | None = None, values: tuple[str, ...] = (),
               made_with_code: str = "") -> dict:
    """Materialise the evolving group for `quarter`; the files written (name -> sha256), and under
    "values" the values of the assets named in `values`. A failed blocking check or step is one
    BuildError, and nothing is written then."""
    from pipeline.evolving.scoring import check_target
    from pipeline.evolving.slicing import load_config, parse_quarter, quarter_key

    check_target(target or load_config().target)  # before any work (and before Dagster loads): fails at once
    from dagster import DagsterInstance, materialize

    from assets.evolving import QUARTER_TAG, QUARTERS
    from pipeline.app.cli.materialize import QUIET, _failed_checks, _first_error
    from pipeline.app.jobs import evolving_assets, evolving_checks
    from pipeline.orchestration.memory_io import MemoryIOManager
    from pipeline.orchestration.resources import BuildSettings, EvolveSettings

    key = quarter_key(quarter)
    first, last = QUARTERS.get_first_partition_key(), QUARTERS.get_last_partition_key()
    if parse_quarter(quarter) < parse_quarter(load_config().start) or (last is not None and key > last):
        raise InputError(f"--quarter {quarter}: no such partition; quarters run from {load_config().start} "
                         f"(partition {first}) to the current one (partition {last})")
    if bench is not None and not Path(bench).is_file():
        raise InputError(f"--bench {bench}: not found. Pass the main benchmark's cachebench.jsonl")
    if datasets_dir is not None and not Path(datasets_dir).is_dir():
        raise InputError(f"--datasets-dir {datasets_dir}: not a folder. Pass an existing folder")
    evolve = EvolveSettings(**{k: str(Path(v).resolve()) for k, v in (("bench", bench), ("out_dir", out_dir))
                               if v is not None}, target=target or "",
                           made_with_code=made_with_code)
    build = BuildSettings(datasets_dir=str(datasets_dir or ""), cache_dir=str(cache_dir or ""))
    instance = DagsterInstance.ephemeral()
    res = materialize([*evolving_assets, *evolving_checks], partition_key=key, instance=instance,
                      resources={"build": build, "evolve": evolve, "io_manager": MemoryIOManager()},
                      raise_on_error=False, run_config=QUIET, tags={QUARTER_TAG: quarter})
    failed = _failed_checks(res)
    if failed:
        raise BuildError(f"{quarter}: {failed[0]}. Nothing was written")
    if not res.success:
        raise BuildError(f"{quarter}: {_first_error(instance, res.run_id)}. Nothing was written")
    written = dict(res.asset_value("evolving_files"))
    return {**written, "values": {name: res.asset_value(name) for name in values}} if values else written


def run(args) -> int:
    from pipeline.app.cli.places import check_places
    from pipeline.core import settings
    from pipeline.core.paths import OUTPUTS

    # --datasets-dir goes on as given: the build resource resolves it over $CACHEEVAL_DATASETS_DIR
    resolved = settings.resolve(cache_dir=args.cache_dir)
    settings.ensure_offline(resolved)
    folder = (args.out or OUTPUTS / "evolving").resolve()
    check_places(resolved, folder, bool(args.cache_dir))
    t0 = time.perf_counter()
    written = run_evolve(args.quarter, args.target, args.out, args.bench, args.datasets_dir, resolved.cache_root)
    for name, sha in sorted(written.items()):
        print(f"wrote {folder / name} (sha256 {sha[:16]})")
    print(f"{args.quarter}: done in {time.perf_counter() - t0:.1f}s; the report is {folder / (args.quarter + '.md')}")
    return 0


def check_slices(folder: Path, cache_dir: Path | None = None, bench: Path | None = None) -> list:
    """Every quarter of `folder`/manifest.json rebuilt (its target, the main benchmark `bench`
    (default: the committed one beside `folder`) and earlier quarters) into a temporary folder and
    compared byte for byte; the Differences. `cacheeval build` calls it on the benchmark it has just
    built, so that the caches a later `cacheeval check` of the slices needs are filled."""
    from pipeline.app.cli.materialize import Difference

    manifest = Path(folder) / "manifest.json"
    if not manifest.is_file():
        return []
    quarters = json.loads(manifest.read_text(encoding="utf-8"))["quarters"]
    diffs = []
    for quarter, entry in sorted(quarters.items()):
        with tempfile.TemporaryDirectory(prefix="cacheeval-check-evolving-") as tmp:
            for earlier in sorted(quarters):
                if earlier < quarter and (Path(folder) / f"{earlier}.jsonl").is_file():
                    shutil.copy2(Path(folder) / f"{earlier}.jsonl", Path(tmp) / f"{earlier}.jsonl")
            print(f"rebuilding the adversarial slice {quarter} (target {entry['target']['name']}) ...", file=sys.stderr)
            run_evolve(quarter, entry["target"]["name"], Path(tmp), bench or Path(folder).parent / "cachebench.jsonl",
                       cache_dir=cache_dir, made_with_code=entry["target"].get("code_sha256", ""))
            rebuilt = json.loads((Path(tmp) / "manifest.json").read_text(encoding="utf-8"))["quarters"][quarter]
            if rebuilt != entry:
                diffs.append(Difference("evolving/manifest.json", f"the entry of {quarter} differs from a rebuild"))
            for name in sorted(entry["files"]):
                a, b = Path(folder) / name, Path(tmp) / name
                if not a.is_file() or a.read_bytes() != b.read_bytes():
                    diffs.append(Difference(f"evolving/{name}", "missing" if not a.is_file() else "differs from a rebuild"))
        if not diffs:
            print(f"ok: the adversarial slice {quarter} ({', '.join(sorted(entry['files']))}) is byte-identical to a "
                  "rebuild")
    return diffs
