"""Generate and verify one domain's candidates, and print what survives per label.

    python -m domains.check math [--profile lifted40]

Used by domain authors while writing content, and by the domain contract test.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from domains import get_domain
from domains.base import LABELS, Candidate, GenContext, Outcome
from domains.verify import verify


@dataclass
class DomainReport:
    domain: str
    kept: dict[str, list[Candidate]] = field(default_factory=lambda: defaultdict(list))
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    drops: Counter = field(default_factory=Counter)
    methods: Counter = field(default_factory=Counter)


def generate(domain: str, ctx: GenContext) -> tuple[list[Candidate], Counter]:
    """Every generator of a domain, in content-key order; a candidate whose construction method
    or domain is not the generator's is dropped and counted."""
    spec = get_domain(domain)
    ctx = replace(ctx, policy=spec.policy)
    cands: list[Candidate] = []
    drops: Counter = Counter()
    for method, gen in spec.generators.items():
        for c in gen(ctx):
            if c.construction_method != method or c.domain != domain or c.label not in LABELS:
                drops[f"generator_mismatch:{method}"] += 1
                continue
            cands.append(c)
    if ctx.extract is not None:   # the corpora's verified pairs (domains.corpora.extract), whatever their method
        cands.extend(ctx.extract.of(domain))
    cands.sort(key=lambda c: c.key)
    return cands, drops


def verify_candidates(cands: list[Candidate]) -> tuple[list[tuple[Candidate, Outcome]], Counter]:
    """Each candidate through its verifier, duplicates of an earlier pair signature dropped first
    (so the first in content-key order wins); drops counted as `<label>:<reason>`."""
    kept: list[tuple[Candidate, Outcome]] = []
    seen: set = set()
    drops: Counter = Counter()
    for c in cands:
        sig = c.pair_signature()
        if sig in seen:
            drops[f"{c.label}:duplicate_pair"] += 1
            continue
        out = verify(c, get_domain(c.domain).policy)
        if not out.passed:
            drops[f"{c.label}:{out.reason}"] += 1
            continue
        seen.add(sig)
        kept.append((c, out))
    return kept, drops


def generate_verified(domain: str, need: dict[str, int], datasets=None, profile: str = "v1.1",
                      mined=None) -> DomainReport:
    """What the candidate_rows and verified_rows assets compute for one domain, without Dagster.
    `mined`: the pairs mined from real traffic (domains.corpora.mining.mine(datasets)), or None for
    no mined rows."""
    rep = DomainReport(domain)
    cands, gen_drops = generate(domain, GenContext(domain=domain, profile=profile, need=need, datasets=datasets,
                                                   mined=mined))
    kept, ver_drops = verify_candidates(cands)
    rep.drops.update(gen_drops)
    rep.drops.update(ver_drops)
    for c, out in kept:
        rep.outcomes[c.key] = out
        rep.kept[c.label].append(c)
        rep.methods[(c.label, c.construction_method)] += 1
    return rep


def main(argv: list[str] | None = None) -> int:
    from pipeline.core.config import load_profile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("domain")
    ap.add_argument("--profile", default="lifted40")
    args = ap.parse_args(argv)
    prof = load_profile(args.profile)
    need = dict(prof.matrix[args.domain])
    rep = generate_verified(args.domain, need, profile=args.profile)
    short = 0
    for lab in LABELS:
        have = len(rep.kept[lab])
        mark = "ok" if have >= need[lab] else "SHORT"
        short += have < need[lab]
        methods = {m: n for (l, m), n in sorted(rep.methods.items()) if l == lab}
        print(f"{lab:15s} need {need[lab]:4d} have {have:4d} {mark:5s} {methods}")
    for reason, n in sorted(rep.drops.items()):
        print(f"  drop {reason}: {n}")
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
