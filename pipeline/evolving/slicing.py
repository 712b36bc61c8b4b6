"""The quarterly adversarial slice: quarters, the held-out seed pool, candidates and the slice itself
(pure functions; the Dagster assets are assets/evolving.py, the scoring pipeline/evolving/scoring.py).

- Quarters are named `YYYY-QN`; Dagster's time-window partition of a quarter is keyed by its first
  day (`2026-10-01`: strftime has no quarter directive, and a key must parse back with its format).
- Held out: a candidate is held out when neither of its requests (system prompt, earlier turns and
  query, normalised as for the main build's duplicate and leakage checks: `request_key`) is a request
  of any row of the main benchmark (cachebench.jsonl) or of an earlier quarter's slice. Only
  ADVERSARIAL candidates (near misses: a typed operator's perturbation, a mined or an LM near-miss)
  are considered. The pool is a pure function of the quarter, the inputs and the committed files:
  every domain's generators run as in the main build (POOL_NEED ADVERSARIAL candidates asked for),
  then the quarter's seeded shuffle takes `candidates_per_domain` of each domain's held-out pairs.
- The slice: verified candidates the target serves a HIT on (a false hit: every candidate is a MISS),
  spread over domains, operators and subcategories (each domain's fooled rows interleaved by operator
  and, within one, by subcategory; the domains taking turns, no domain above `max_domain_share`), in
  an order seeded from the quarter and what decides the target's behaviour (its name, protocol,
  model snapshots and settings; not its code's hash, so moving its code re-orders nothing). It is never padded: a short slice is what the blocking check reports.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from domains.base import Candidate, GenContext, Outcome, request_key, stable_rng
from domains.families import round_robin, spread
from pipeline.core.config import ConfigError, check_keys, read_yaml, rel
from pipeline.core.errors import InputError
from pipeline.core.paths import CONFIGS

CONFIG_FILE = CONFIGS / "evolving.yaml"
LABEL = "ADVERSARIAL"
POOL_NEED = 800          # ADVERSARIAL candidates each domain is asked for (its caps: 20% more)
_QUARTER = re.compile(r"^(\d{4})-Q([1-4])$")
_KEY = re.compile(r"^(\d{4})-(01|04|07|10)-01$")


@dataclass(frozen=True)
class EvolvingConfig:
    start: str
    rows: int
    max_domain_share: float
    candidates_per_domain: int
    target: str

    @property
    def domain_cap(self) -> int:
        return max(1, math.floor(self.rows * self.max_domain_share + 1e-9))


def load_config(path: Path = CONFIG_FILE) -> EvolvingConfig:
    """configs/evolving.yaml, checked: a one-line ConfigError naming the file and key otherwise."""
    where = rel(path)
    data = read_yaml(path)
    keys = {"start", "rows", "max_domain_share", "candidates_per_domain", "target"}
    check_keys(where, data, keys, keys)
    parse_quarter(str(data["start"]), f"{where}: start")
    for key in ("rows", "candidates_per_domain"):
        if not isinstance(data[key], int) or isinstance(data[key], bool) or data[key] < 1:
            raise ConfigError(f"{where}: {key} must be a positive integer, got {data[key]!r}.")
    share = data["max_domain_share"]
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 < share <= 1:
        raise ConfigError(f"{where}: max_domain_share must be a number in (0, 1], got {share!r}.")
    if not isinstance(data["target"], str) or not data["target"].strip():
        raise ConfigError(f"{where}: target must name a reference (cacheeval references) or module:<file.py>.")
    return EvolvingConfig(str(data["start"]), data["rows"], float(share), data["candidates_per_domain"],
                          data["target"].strip())


# ---------------------------------------------------------------- quarters

def parse_quarter(text: str, what: str = "--quarter") -> tuple[int, int]:
    """(year, quarter) of `YYYY-QN`; InputError naming `what` otherwise."""
    m = _QUARTER.match(text.strip())
    if not m:
        raise InputError(f"{what} {text!r}: not a quarter. Write YYYY-QN, e.g. 2026-Q4")
    return int(m.group(1)), int(m.group(2))


def quarter_key(quarter: str) -> str:
    """The Dagster partition key of a quarter: its first day (2026-Q4 -> 2026-10-01)."""
    year, q = parse_quarter(quarter)
    return f"{year:04d}-{3 * (q - 1) + 1:02d}-01"


def quarter_name(key: str) -> str:
    """The quarter a partition key (its first day) names (2026-10-01 -> 2026-Q4); a quarter name as is."""
    if _QUARTER.match(key):
        return key
    m = _KEY.match(key)
    if not m:
        raise InputError(f"partition {key!r}: not the first day of a quarter. Use YYYY-MM-01 with MM 01, 04, 07 or 10")
    return f"{m.group(1)}-Q{(int(m.group(2)) - 1) // 3 + 1}"


def quarter_slug(quarter: str) -> str:
    """The quarter as it appears in row ids: 2026-Q4 -> 2026q4."""
    year, q = parse_quarter(quarter)
    return f"{year:04d}q{q}"


def earlier_slices(folder: Path, quarter: str) -> list[Path]:
    """The committed slices of quarters before `quarter` in `folder`, oldest first."""
    here = parse_quarter(quarter)
    found = []
    for path in sorted(Path(folder).glob("*.jsonl")) if Path(folder).is_dir() else []:
        if _QUARTER.match(path.stem) and parse_quarter(path.stem) < here:
            found.append(path)
    return found


# ---------------------------------------------------------------- the held-out pool

def read_rows(path: Path) -> list[dict]:
    """The rows of a benchmark JSONL file (a clear InputError when it is missing)."""
    if not Path(path).is_file():
        raise InputError(f"{path}: not found. Build the main benchmark first (cacheeval build)")
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def used_requests(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The normalised requests (both sides) of benchmark rows."""
    out = set()
    for r in rows:
        out.add(request_key(r["query_a"], r["context_a"], r["system_prompt_a"]))
        out.add(request_key(r["query_b"], r["context_b"], r["system_prompt_b"]))
    return out


def _requests(c: Candidate) -> tuple[str, str]:
    ctx = [dict(t) for t in c.context_a] if c.context_a is not None else None
    ctx_b = [dict(t) for t in c.context_b] if c.context_b is not None else None
    return request_key(c.query_a, ctx, c.system_prompt_a), request_key(c.query_b, ctx_b, c.system_prompt_b)


def pool_context(domain: str, datasets: Any = None, llm: Any = None) -> GenContext:
    """What the domain's generators get: the main build's context, asking for POOL_NEED near misses."""
    return GenContext(domain=domain, profile="evolving", need={LABEL: POOL_NEED}, datasets=datasets, llm=llm)


def held_out(domain: str, quarter: str, generated: Sequence[Candidate], used: set[str],
             per_domain: int) -> tuple[list[Candidate], Counter]:
    """The quarter's held-out candidates of one domain (see the module docstring) and the drops by reason."""
    drops: Counter = Counter()
    keep = []
    for c in generated:
        if c.label != LABEL:
            continue
        a, b = _requests(c)
        if a in used or b in used:
            drops["seed_in_main_benchmark_or_earlier_quarter"] += 1
            continue
        keep.append(c)
    keep.sort(key=lambda c: c.key)
    stable_rng("evolving", quarter, domain).shuffle(keep)
    if len(keep) > per_domain:
        drops["beyond_candidates_per_domain"] += len(keep) - per_domain
    return keep[:per_domain], drops


# ---------------------------------------------------------------- rows

def operator_of(c: Candidate) -> str:
    """The operator type of a near miss: its perturbation operator, else its construction method."""
    return c.provenance.operator or c.construction_method


def to_row(c: Candidate, outcome: Outcome, rid: str, difficulty: str, votes: Mapping[str, bool],
           extra: Mapping[str, Any]) -> dict:
    """A benchmark row (the main build's schema and key order) with provenance.evolving = `extra`."""
    from pipeline.stages.assembly import assemble_rows
    from pipeline.stages.selection import SelectedRow

    row = assemble_rows([SelectedRow(rid, c, outcome, "test")], {"votes": [dict(votes)], "difficulty": [difficulty]})[0]
    prov = dict(row["provenance"])
    del prov["split"]  # a slice row belongs to no split of the main benchmark
    prov["evolving"] = json.loads(json.dumps(dict(extra), sort_keys=True))
    row["provenance"] = dict(sorted(prov.items()))
    return row


def numbered(domain_order: Sequence[str], quarter: str, items: Sequence[Candidate]) -> list[tuple[str, Candidate]]:
    """(id, candidate): per domain in content-key order, cb-<domain>-<YYYY>q<N>-<4 digits>."""
    slug = quarter_slug(quarter)
    out = []
    for domain in domain_order:
        mine = sorted((c for c in items if c.domain == domain), key=lambda c: c.key)
        out += [(f"cb-{domain}-{slug}-{i:04d}", c) for i, c in enumerate(mine, 1)]
    return out


# ---------------------------------------------------------------- the slice

@dataclass(frozen=True)
class SliceChoice:
    chosen: tuple[str, ...]    # candidate ids, in selection order
    fooled: int                # verified candidates the target served a HIT on
    usable: int                # of those, what the domain cap lets in
    candidates: int            # verified candidates scored
    shared: int = 0            # fooled rows left out: a request of theirs is in a row taken before


def choose_slice(rows: Sequence[Mapping[str, Any]], target_hits: Mapping[str, bool], cfg: EvolvingConfig,
                 quarter: str, target_key: str, domain_order: Sequence[str]) -> SliceChoice:
    """The slice's candidate ids: fooled rows spread over domains and operators (module docstring)."""
    fooled = [r for r in rows if target_hits.get(r["id"]) and r["binary_label"] == "MISS"]
    lanes = []
    usable = shared = 0
    for domain in domain_order:
        mine = sorted((r for r in fooled if r["domain"] == domain), key=lambda r: r["id"])
        lane, seen = [], set()
        for r in _lane(mine, stable_rng("evolving-slice", quarter, target_key, domain)):
            keys = used_requests([r])
            if keys & seen:  # one seed (or perturbation) per slice: the first row in lane order keeps it
                shared += 1
                continue
            seen |= keys
            lane.append(r)
        usable += len(lane[:cfg.domain_cap])
        lanes.append(lane[:cfg.domain_cap])
    order = round_robin(lanes)
    return SliceChoice(tuple(r["id"] for r in order[:cfg.rows]), len(fooled), usable, len(rows), shared)


def _lane(rows: Sequence[Mapping[str, Any]], rng) -> list:
    """One domain's fooled rows in the order the slice takes them: the operators taking turns, each
    operator's rows spread over their subcategories (shuffled by `rng`), so any prefix is varied."""
    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(r["provenance"]["evolving"]["operator"], []).append(r)
    return round_robin(spread(groups[op], lambda r: r["subcategory"], rng) for op in sorted(groups))


def slice_rows(rows: Sequence[Mapping[str, Any]], choice: SliceChoice, quarter: str,
               domain_order: Sequence[str]) -> list[dict]:
    """The chosen rows renumbered within the slice (per domain, in candidate-id order), sorted by id."""
    by_id = {r["id"]: r for r in rows}
    chosen = [by_id[i] for i in choice.chosen]
    slug = quarter_slug(quarter)
    out = []
    for domain in domain_order:
        mine = sorted((r for r in chosen if r["domain"] == domain), key=lambda r: r["id"])
        for n, r in enumerate(mine, 1):
            prov = dict(r["provenance"])
            prov["evolving"] = {**prov["evolving"], "candidate_id": r["id"]}
            out.append({**r, "id": f"cb-{domain}-{slug}-{n:04d}", "provenance": prov})
    return sorted(out, key=lambda r: r["id"])


def shortfall(choice: SliceChoice, cfg: EvolvingConfig, target: str) -> str | None:
    """Why the slice is short (None when it holds exactly `rows`), with the numbers."""
    short = cfg.rows - len(choice.chosen)
    if short <= 0:
        return None
    capped = ""
    if choice.usable < choice.fooled:
        capped = (f" ({choice.usable} usable under the cap of {cfg.domain_cap} rows per domain, "
                  f"max_domain_share {cfg.max_domain_share:g}, and one row per request)")
    return (f"the target {target} was fooled by {choice.fooled:,} of {choice.candidates:,} verified candidates"
            f"{capped}; the slice is {short} short")


def provenance_extra(quarter: str, c: Candidate) -> dict:
    """provenance.evolving of a candidate row: the quarter, the operator and the seed it perturbed."""
    p = c.provenance
    seed = {"source_file": p.source_file, "source_record": p.source_record, "template_id": p.template_id,
            "query": c.query_a}
    return {"quarter": quarter, "operator": operator_of(c), "seed": seed}


def with_verdict(row: Mapping[str, Any], target: Mapping[str, Any], verdict: tuple[bool, float | None]) -> dict:
    """The row with the target's identity and its verdict on the row in provenance.evolving.target."""
    hit, confidence = verdict
    prov = dict(row["provenance"])
    prov["evolving"] = {**prov["evolving"], "target": {
        **dict(target), "verdict": {"decision": "HIT" if hit else "MISS",
                                    "confidence": None if confidence is None else round(float(confidence), 6)}}}
    return {**row, "provenance": prov}
