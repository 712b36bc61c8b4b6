"""`cacheeval references [--json]`: the reference caches `cacheeval eval --reference NAME` scores,
what each is, its kind (pair or store/lookup) and whether it can be built here; then the baselines.
Nothing is imported or built: availability is checked with importlib's finders."""
from __future__ import annotations

import argparse
import json


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `cacheeval references`."""
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")


def _first_sentence(doc: str | None) -> str:
    text = " ".join((doc or "").split())
    return text.split(". ")[0].rstrip(".") + "." if text else ""


def listing() -> dict:
    """The references and baselines as plain data."""
    from pipeline.harness.baselines import BASELINES
    from pipeline.references import REFERENCES

    refs = []
    for name in REFERENCES.names():
        spec = REFERENCES[name]
        refs.append({"name": name, "kind": spec.kind, "summary": spec.summary, "builder": spec.target,
                     "unavailable": spec.missing()})
    base = [{"name": n, "summary": _first_sentence(BASELINES[n].__doc__)} for n in BASELINES.names()]
    return {"references": refs, "baselines": base}


def run(args: argparse.Namespace) -> int:
    """Print the listing."""
    data = listing()
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    width = max(len(r["name"]) for r in data["references"] + data["baselines"])
    print("reference caches (cacheeval eval --reference NAME):")
    for r in data["references"]:
        note = f" [unavailable: {r['unavailable']}]" if r["unavailable"] else ""
        print(f"  {r['name']:<{width}}  {r['kind']:<12}  {r['summary']}{note}")
    print("baselines (cacheeval eval --baseline NAME):")
    for b in data["baselines"]:
        print(f"  {b['name']:<{width}}  {'pair':<12}  {b['summary']}")
    print("a store/lookup cache runs under --protocol isolated (default), shared or stream (vcache-* learn only there)")
    return 0
