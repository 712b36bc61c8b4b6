"""Generating groups and the splits that measure transfer (issue #27 item 4): pure functions.

A cache trained on rows of one generator learns that generator (its phrasings, its operators),
so a test split that shares generators with train says little about what a cache meets
elsewhere. Every row therefore gets one *group key*, the generator that made it, from its
construction method and provenance:

| construction method | group key | the generator |
|---|---|---|
| `adversarial_perturbation` | `operator:<operator>` | the perturbation operator, across domains |
| `real_traffic_mined` | `mining:<template_id>` | the mining rule (`Provenance.template_id`) |
| `curated`, template `real_rewording` | `corpus:<source>` | the corpus whose requests the team reworded (with its corpus rows) |
| `existing_benchmark` | `corpus:<source>` | the source corpus |
| `intent_bottom_up` from a corpus | `corpus:<source>` | the source corpus |
| `lm_generated` | `lm:<prompt kind>:<domain>/<family>` | the LM prompt (template id without its `.vN`) and the item family |
| `curated`, `intent_bottom_up` from `curated` | `template:<domain>/<family>` | the template family |
| any other method | `<method>:<source>:<domain>/<family>` | its own group |

The *family* is the head of the row's subcategory (`time_sensitive+advice` -> `time_sensitive`):
in every curated domain the subcategory names the set of item templates the texts are rendered
from (qa_factual `capital`, code `sorting`, tool `holiday_lookup`, conversational `advice`),
whereas `template_id` names either one item (`liberia.capital#2`) or a pair-construction kind
tied to one label (`surface_variant` is every conversational EQUIV row, so holding it out would
empty a label). A row with no operator (adversarial) or no rule (mined) falls back to its family.
Unknown operators, rules, corpora and prompts are simply new keys, so new generators form their
own groups.

Rows sharing a normalised request (system prompt, earlier turns, query) are joined too (union-find
over group keys and request keys): a component is what goes to a split whole.

`assign_splits`:
1. test takes whole components, in an order seeded by their rows' content keys: a component
   is taken when it brings the test's domain x label counts closer to their targets (L1), while
   the test stays within `tolerance` rows of its size; then, if still short, the least harmful
   components until within the tolerance. Test groups are therefore unseen by train and dev.
2. dev takes rows (not components) of the remaining groups, stratified by domain x label, never
   the last train row of a group: dev holds groups that train also holds. Dev is exact when it can
   be; train takes the rest, so train absorbs the test's deviation.

The tolerance (`size_tolerance`): 5% of the test split's size, at least 3 rows. The
`split_sizes` invariant (pipeline/stages/assembly.py) accepts the same band.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Mapping, Sequence

from domains.base import REAL_REWORDING, Candidate, request_key, stable_hash

TOLERANCE = 0.05       # test within this fraction of its size (see size_tolerance)
MIN_TOLERANCE = 3      # ... and at least this many rows
_VERSION = re.compile(r"\.v\d+$")


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


def size_tolerance(size: int) -> int:
    """Rows a split's size may differ from the profile's: whole groups rarely sum to it exactly."""
    return max(MIN_TOLERANCE, round(TOLERANCE * size)) if size else 0


def family(subcategory: str | None) -> str:
    return (subcategory or "").split("+", 1)[0] or "-"


def group_key(c: Candidate) -> str:
    """The generating group of a candidate (see the module docstring)."""
    m, p = c.construction_method, c.provenance
    fam = f"{c.domain}/{family(c.subcategory)}"
    if m == "adversarial_perturbation" and p.operator:
        return f"operator:{p.operator}"
    if m == "real_traffic_mined" and p.template_id:
        return f"mining:{p.template_id}"
    if p.template_id == REAL_REWORDING:  # the team's rewordings of a corpus's requests: that corpus's group
        return f"corpus:{c.source}"
    if m == "existing_benchmark" or (m == "intent_bottom_up" and c.source != "curated"):
        return f"corpus:{c.source}"
    if m == "lm_generated":
        return f"lm:{_VERSION.sub('', p.template_id or '-')}:{fam}"
    if m in ("curated", "intent_bottom_up", "adversarial_perturbation", "real_traffic_mined"):
        return f"template:{fam}"
    return f"{m}:{c.source}:{fam}"


def components(items: Sequence[Candidate], keys: Sequence[str]) -> list[list[int]]:
    """Indices joined by a shared group key or a shared normalised request, each list ascending."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, c in enumerate(items):
        for k in ("g" + keys[i], "r" + request_key(c.query_a, c.context_a, c.system_prompt_a),
                  "r" + request_key(c.query_b, c.context_b, c.system_prompt_b)):
            if k in owner:
                parent[find(i)] = find(owner[k])
            else:
                owner[k] = i
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(items)):
        groups[find(i)].append(i)
    return list(groups.values())


def _harm(taken: Counter, need: Counter, target: Mapping) -> int:
    """Change of the L1 distance between the test's cell counts and their targets."""
    return sum(abs(taken[k] + v - target.get(k, 0)) - abs(taken[k] - target.get(k, 0)) for k, v in need.items())


def assign_splits(items: Sequence[Candidate], sizes: Mapping[str, int]) -> list[str]:
    """Split labels aligned with `items` (see the module docstring)."""
    n = len(items)
    if sum(sizes.values()) != n:
        raise ValueError(f"split sizes {dict(sizes)} do not add up to {n} rows")
    cell = [(c.domain, c.label) for c in items]
    cells = Counter(cell)
    order = sorted(cells)

    def targets(total: int, pool: Counter) -> dict:
        return apportion(total, {k: float(pool[k]) for k in order if pool[k]}, dict(pool))

    keys = [group_key(c) for c in items]
    comps = components(items, keys)
    comps.sort(key=lambda g: stable_hash("split", sorted(items[i].key for i in g)))
    needs = [Counter(cell[i] for i in g) for g in comps]
    size, tol = sizes["test"], size_tolerance(sizes["test"])
    target = targets(size, cells)
    out = [""] * n
    taken: Counter = Counter()
    chosen = [False] * len(comps)
    total = 0

    def take(j: int) -> None:
        nonlocal total
        chosen[j] = True
        for i in comps[j]:
            out[i] = "test"
        taken.update(needs[j])
        total += len(comps[j])

    progress = True
    while progress:
        progress = False
        for j, g in enumerate(comps):
            if not chosen[j] and total + len(g) <= size + tol and _harm(taken, needs[j], target) < 0:
                take(j)
                progress = True
    while total < size - tol:
        fits = [j for j, g in enumerate(comps) if not chosen[j] and total + len(g) <= size + tol]
        if not fits:
            break
        take(min(fits, key=lambda j: (_harm(taken, needs[j], target), j)))
    if abs(total - size) > tol:
        raise ValueError(f"could not fill the test split with whole generating groups ({total} of {size}, "
                         f"tolerance {tol}); the groups (template families, operators, corpora) are too large")
    _assign_dev(items, keys, cell, out, sizes["dev"], targets)
    return out


def _assign_dev(items: Sequence[Candidate], keys: Sequence[str], cell: Sequence, out: list[str], size: int,
                targets) -> None:
    rest = sorted((i for i in range(len(items)) if not out[i]), key=lambda i: stable_hash("dev", items[i].key))
    left = Counter(keys[i] for i in rest)   # rows of each group still in train
    d_target = targets(size, Counter(cell[i] for i in rest))
    got: Counter = Counter()
    dev = 0
    for strict in (True, False):
        for i in rest:
            if dev >= size:
                break
            if out[i] or left[keys[i]] < 2 or (strict and got[cell[i]] >= d_target.get(cell[i], 0)):
                continue
            out[i] = "dev"
            got[cell[i]] += 1
            left[keys[i]] -= 1
            dev += 1
    if dev != size:
        raise ValueError(f"could not fill the dev split ({dev} of {size}) without taking the last train row of a group")
    for i in rest:
        if not out[i]:
            out[i] = "train"
