"""Quota selection, ids and splits: pure functions over verified candidates (no Dagster).

Selection per (domain, label) cell:
1. candidates are grouped by construction method; inside a method they are ordered by content key,
   then shuffled by a generator seeded from the stable name `select/<domain>/<label>`, so the order
   never depends on generation order and a smaller profile selects a prefix of a larger one's
   per-method order;
2. rows mined from real traffic (PREFERRED: `real_traffic_mined`, the method the specification puts
   first for external validity, and the scarce one: a corpora build mines a few hundred against
   a mix target of 520) fill the cell first, up to its quota; the rest of the quota is shared
   among the other methods present in proportion to `method_mix` (largest remainder, ties in
   config order), capped by what each method has, the rest passed on to the other methods. The
   embedded default mines nothing, so this changes nothing there;
3. each method contributes the first n candidates of its order; the remainder is dropped as
   `surplus` (the stable documented order above). Inside a method, candidates of a FIRST_TEMPLATES
   template come first (order otherwise kept): a domain's curated hard rewordings (paraphrases
   that share few words, which embedders find hard) are not the ones LM rows displace from a cell.

Splits keep every test request out of train and dev: rows that share a normalised request (system
prompt, earlier turns and query) form one group, and groups go to test whole.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from domains.base import LABELS, Candidate, Outcome, request_key, stable_hash, stable_rng
from pipeline.core.config import Profile


PREFERRED = ("real_traffic_mined",)  # methods that fill a cell before the mix shares the rest (see 2. above)
FIRST_TEMPLATES = frozenset({"hard_rewording"})  # templates a method offers first (see 3. above)


@dataclass(frozen=True)
class SelectedRow:
    id: str
    candidate: Candidate
    outcome: Outcome
    split: str


@dataclass
class Selection:
    rows: list[SelectedRow]
    shortfalls: dict[tuple[str, str], int] = field(default_factory=dict)  # cell -> rows missing
    surplus: Counter = field(default_factory=Counter)                     # cell -> rows dropped as surplus
    methods: Counter = field(default_factory=Counter)                     # (domain, label, method) -> rows


def apportion(total: int, weights: Mapping[str, float], caps: Mapping[str, int] | None = None) -> dict[str, int]:
    """Largest-remainder apportionment of `total` over `weights` (dict order breaks ties), with
    optional caps; what a capped key cannot take goes to the others."""
    keys = [k for k, w in weights.items() if w > 0]
    out = {k: 0 for k in weights}
    remaining = total
    active = [k for k in keys if caps is None or caps.get(k, 0) > 0]
    while remaining > 0 and active:
        wsum = sum(weights[k] for k in active)
        raw = {k: remaining * weights[k] / wsum for k in active}
        give = {k: int(raw[k]) for k in active}
        left = remaining - sum(give.values())
        for k in sorted(active, key=lambda k: (-(raw[k] - give[k]), keys.index(k)))[:left]:
            give[k] += 1
        progressed = False
        for k in active:
            room = (caps[k] - out[k]) if caps is not None else give[k]
            take = min(give[k], room)
            out[k] += take
            remaining -= take
            progressed |= take > 0
        active = [k for k in active if caps is None or out[k] < caps[k]]
        if not progressed:
            break
    return out


def select_cell(domain: str, label: str, quota: int, candidates: Sequence[Candidate],
                method_mix: Mapping[str, int]) -> tuple[list[Candidate], Counter]:
    by_method: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(candidates, key=lambda c: c.key):
        by_method[c.construction_method].append(c)
    for method, items in by_method.items():
        stable_rng("select", domain, label, method).shuffle(items)
        items.sort(key=lambda c: c.provenance.template_id not in FIRST_TEMPLATES)   # stable: the shuffle stays
    weights = {m: float(method_mix.get(m, 0)) for m in method_mix if m in by_method and m not in PREFERRED}
    weights.update({m: 1.0 for m in sorted(by_method) if m not in weights and m not in PREFERRED})  # unknown methods count
    first: dict[str, int] = {}
    for m in (m for m in PREFERRED if m in by_method):
        first[m] = min(len(by_method[m]), quota)
        quota -= first[m]
    counts = {**first, **apportion(quota, weights, {m: len(v) for m, v in by_method.items()})}
    weights = {**first, **weights}
    chosen: list[Candidate] = []
    used: Counter = Counter()
    for method in weights:
        chosen.extend(by_method[method][:counts[method]])
        used[method] = counts[method]
    return chosen, used


def _components(items: Sequence[Candidate]) -> list[list[int]]:
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, c in enumerate(items):
        for key in (request_key(c.query_a, c.context_a, c.system_prompt_a), request_key(c.query_b, c.context_b, c.system_prompt_b)):
            if key in owner:
                parent[find(i)] = find(owner[key])
            else:
                owner[key] = i
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(items)):
        groups[find(i)].append(i)
    return list(groups.values())


def assign_splits(items: Sequence[Candidate], sizes: Mapping[str, int]) -> list[str]:
    """Split labels aligned with `items`: test takes whole request groups, stratified by
    domain × label as far as group sizes allow; train/dev are then stratified row by row."""
    n = len(items)
    if sum(sizes.values()) != n:
        raise ValueError(f"split sizes {dict(sizes)} do not add up to {n} rows")
    cells = Counter((c.domain, c.label) for c in items)
    cell_order = sorted(cells)
    out = [""] * n

    def targets(total: int, pool: Counter) -> dict:
        return apportion(total, {k: float(pool[k]) for k in cell_order if pool[k]}, dict(pool))

    comps = _components(items)
    comps.sort(key=lambda g: stable_hash("split", sorted(items[i].key for i in g)))
    t_target = targets(sizes["test"], cells)
    taken: Counter = Counter()
    total = 0
    for strict in (True, False):
        for g in comps:
            if out[g[0]] or total + len(g) > sizes["test"]:
                continue
            need = Counter((items[i].domain, items[i].label) for i in g)
            if strict and any(taken[k] + v > t_target.get(k, 0) for k, v in need.items()):
                continue
            for i in g:
                out[i] = "test"
            taken.update(need)
            total += len(g)
    if total != sizes["test"]:
        raise ValueError(f"could not fill the test split with whole request groups ({total} of {sizes['test']}); "
                         "groups of rows sharing a request are too large")
    rest = [i for i in range(n) if not out[i]]
    rest.sort(key=lambda i: stable_hash("dev", items[i].key))
    pool = Counter((items[i].domain, items[i].label) for i in rest)
    d_target = targets(sizes["dev"], pool)
    got: Counter = Counter()
    dev = 0
    for i in rest:
        k = (items[i].domain, items[i].label)
        if got[k] < d_target.get(k, 0):
            out[i] = "dev"
            got[k] += 1
            dev += 1
    for i in rest:
        if not out[i]:
            out[i] = "train"
    return out


def select(profile: Profile, verified: Mapping[str, Iterable[tuple[Candidate, Outcome]]]) -> Selection:
    """Select every cell of the profile, number rows per domain and assign splits."""
    outcomes: dict[str, Outcome] = {}
    per_cell: dict[tuple[str, str], list[Candidate]] = defaultdict(list)
    for domain, pairs in verified.items():
        for cand, outcome in pairs:
            per_cell[(domain, cand.label)].append(cand)
            outcomes[cand.key] = outcome
    sel = Selection(rows=[])
    chosen_all: list[Candidate] = []
    for domain, cells in profile.matrix.items():
        for label in LABELS:
            quota = cells.get(label, 0)
            cands = per_cell.get((domain, label), [])
            chosen, used = select_cell(domain, label, quota, cands, profile.method_mix)
            if len(chosen) < quota:
                sel.shortfalls[(domain, label)] = quota - len(chosen)
            sel.surplus[(domain, label)] = len(cands) - len(chosen)
            for m, k in used.items():
                if k:
                    sel.methods[(domain, label, m)] += k
            chosen_all.extend(chosen)
    if sel.shortfalls:
        return sel  # the quota check reports the cells; ids and splits need a complete selection
    splits = assign_splits(chosen_all, profile.splits)
    numbering: Counter = Counter()
    for cand, split in zip(chosen_all, splits):
        numbering[cand.domain] += 1
        rid = f"cb-{cand.domain}-{numbering[cand.domain]:04d}"
        sel.rows.append(SelectedRow(rid, cand, outcomes[cand.key], split))
    return sel
