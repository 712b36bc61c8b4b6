"""`cacheeval sources [--datasets-dir DIR] [--json]`: which upstream corpora a datasets dir holds,
their files with sha256, record counts per split, and licence. Malformed input: one-line error,
exit 1, nothing printed on stdout."""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline.core import settings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets-dir", metavar="DIR", default=None,
                        help=f"folder with one sub-folder per corpus (default: ${settings.DATASETS_DIR})")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")


def survey(root: str | Path | None, datasets_cache: Path | None = None) -> dict[str, Any]:
    """Load every known corpus found under the datasets dir `root` (the settings' choice; None: no
    datasets dir, an error) through the `datasets` cache `datasets_cache`; the report as plain data."""
    from sources.registry import LOADERS
    from sources.datasets_dir import DatasetsDir

    ddir = DatasetsDir.chosen(root, datasets_cache)
    found = set(ddir.found())
    corpora = []
    for name in LOADERS.names():
        loader = LOADERS[name]
        entry: dict[str, Any] = {"corpus": name, "title": loader.title, "found": name in found,
                                 "licence": loader.licence, "layout": loader.layout}
        if name in found:
            records = list(ddir.load(name))
            entry["records"] = len(records)
            entry["splits"] = dict(sorted(Counter(r.split for r in records).items()))
        corpora.append(entry)
    manifest = ddir.manifest()
    for entry in corpora:
        prefix = entry["corpus"] + "/"
        entry["files"] = [{"path": m["path"][len(prefix):], "sha256": m["sha256"], "size": m["size"],
                           **({"quirks": m["quirks"]} if m.get("quirks") else {})}
                          for m in manifest if m["path"].startswith(prefix)]
    return {"datasets_dir": str(ddir.root), "corpora": corpora, "manifest": manifest}


def run(args: argparse.Namespace) -> int:
    resolved = settings.resolve(datasets_dir=args.datasets_dir)
    report = survey(resolved.datasets_dir, resolved.hf_datasets_cache)  # raises InputError before anything is printed
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True))
        return 0
    lines = [f"datasets dir: {report['datasets_dir']}"]
    for c in report["corpora"]:
        if not c["found"]:
            lines.append(f"- {c['corpus']}: not found (expected {c['corpus']}/: {c['layout']})")
            continue
        splits = ", ".join(f"{k} {v:,}" for k, v in c["splits"].items())
        lines.append(f"+ {c['corpus']}: {c['records']:,} records ({splits}); licence: {c['licence']}")
        for f in c["files"]:
            lines.append(f"    {f['sha256']}  {f['size']:>10,}  {f['path']}")
            if f.get("quirks"):
                counted = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in f["quirks"].items())
                lines.append(f"      resolved by the loader's rule: {counted}")
    used = [c["corpus"] for c in report["corpora"] if c["found"]]
    lines.append(f"{len(used)} of {len(report['corpora'])} corpora found: {', '.join(used) or '(none)'}")
    print("\n".join(lines))
    return 0
