"""Generate and verify one domain's candidates, and print what survives per label.

    python -m domains.check math [--profile lifted40]

Used by domain authors while writing content, and by the domain contract test.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

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


def generate_verified(domain: str, need: dict[str, int], datasets=None, profile: str = "v1.1") -> DomainReport:
    """All generators of a domain, then its verifiers, then de-duplication by pair signature
    (first in content-key order wins)."""
    spec = get_domain(domain)
    ctx = GenContext(domain=domain, profile=profile, need=need, datasets=datasets)
    rep = DomainReport(domain)
    seen: set = set()
    cands: list[Candidate] = []
    for method, gen in spec.generators.items():
        for c in gen(ctx):
            if c.construction_method != method:
                rep.drops[f"method_mismatch:{method}"] += 1
                continue
            cands.append(c)
    for c in sorted(cands, key=lambda c: c.key):
        if c.domain != domain or c.label not in LABELS:
            rep.drops["bad_domain_or_label"] += 1
            continue
        sig = c.pair_signature()
        if sig in seen:
            rep.drops[f"{c.label}:duplicate_pair"] += 1
            continue
        out = verify(c)
        if not out.passed:
            rep.drops[f"{c.label}:{out.reason}"] += 1
            continue
        seen.add(sig)
        rep.outcomes[c.key] = out
        rep.kept[c.label].append(c)
        rep.methods[(c.label, c.construction_method)] += 1
    return rep


def main(argv: list[str] | None = None) -> int:
    from pipeline.config import load_profile

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
