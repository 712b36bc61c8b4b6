"""The quarterly adversarial slice: quarters, the held-out seed pool, candidates and the slice itself
(pure functions; the Dagster assets are assets/evolving.py, the scoring pipeline/evolving/scoring.py).

- Quarters are named `YYYY-QN`; Dagster's time-window partition of a quarter is keyed by its first
  day (`2026-10-01`: strftime has no quarter directive, and a key must parse back with its format).
- Held out: a candidate is held out when neither of its requests (system prompt, earlier turns and
  query, normalised as for the main build's duplicate and leakage checks: `request_key`) is a request
  of any row of the main benchmark (cachebench.jsonl) or of an earlier quarter's slice. Only
  ADVERSARIAL candidates (near misses: a typed operator's perturbation, a mined or an LM near-miss)
  are considered. The pool is a pure function of the quarter, the inputs and the committed files:
  every domain's generators run as in the main build (its datasets dir, language model and committed
  extract of real corpus pairs: `pool_extract`; POOL_NEED ADVERSARIAL candidates asked for), then the
  quarter's seeded shuffle takes `candidates_per_domain` of each domain's held-out pairs.
- The slice: verified candidates the target serves a HIT on (a false hit: every candidate is a MISS),
  the domains taking turns; on its turn a domain takes a row of the construction method, then of the
  operator (`operator_of`), the slice holds fewest of so far, in an order seeded from the quarter and
  what decides the target's behaviour (its name, protocol, model snapshots and settings; not its
  code's hash, so moving its code re-orders nothing), within `max_domain_share` and
  `max_operator_share` and one row per request. It is never padded: a short slice, or one in fewer
  than `min_domains` domains, is what the blocking checks report.
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
    max_operator_share: float
    min_domains: int

    @property
    def domain_cap(self) -> int:
        return _cap(self.rows, self.max_domain_share)

    @property
    def operator_cap(self) -> int:
        return _cap(self.rows, self.max_operator_share)


def _cap(rows: int, share: float) -> int:
    return max(1, math.floor(rows * share + 1e-9))


_SHARES = ("max_domain_share", "max_operator_share")
_COUNTS = ("rows", "candidates_per_domain", "min_domains")


def load_config(path: Path = CONFIG_FILE) -> EvolvingConfig:
    """configs/evolving.yaml, checked: a one-line ConfigError naming the file and key otherwise."""
    where = rel(path)
    data = read_yaml(path)
    keys = {"start", "target", *_SHARES, *_COUNTS}
    check_keys(where, data, keys, keys)
    parse_quarter(str(data["start"]), f"{where}: start")
    for key in _COUNTS:
        if not isinstance(data[key], int) or isinstance(data[key], bool) or data[key] < 1:
            raise ConfigError(f"{where}: {key} must be a positive integer, got {data[key]!r}.")
    for key in _SHARES:
        share = data[key]
        if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 < share <= 1:
            raise ConfigError(f"{where}: {key} must be a number in (0, 1], got {share!r}.")
    if data["min_domains"] > data["rows"]:
        raise ConfigError(f"{where}: min_domains ({data['min_domains']}) cannot exceed rows ({data['rows']}).")
    if not isinstance(data["target"], str) or not data["target"].strip():
        raise ConfigError(f"{where}: target must name a reference (cacheeval references) or module:<file.py>.")
    return EvolvingConfig(str(data["start"]), data["rows"], float(data["max_domain_share"]),
                          data["candidates_per_domain"], data["target"].strip(),
                          float(data["max_operator_share"]), data["min_domains"])


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


def pool_extract() -> Any:
    """The build's committed extract of real corpus pairs (domains.corpora.extract reading
    pipeline.core.paths.EXTRACT: mined real-traffic near misses and the open-world trap operators
    applied to real requests). The one place the pool reads it."""
    from domains.corpora import extract
    from pipeline.core import paths

    return extract.read(paths.EXTRACT)


def pool_context(domain: str, datasets: Any = None, llm: Any = None, extract: Any = None) -> GenContext:
    """What the domain's generators get: the main build's context (its datasets dir, language model
    and extract), asking for POOL_NEED near misses."""
    return GenContext(domain=domain, profile="evolving", need={LABEL: POOL_NEED}, datasets=datasets, llm=llm,
                      extract=extract)


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
    """The operator type of a near miss, what max_operator_share caps: its perturbation operator
    (provenance.operator), else for a pair mined from real traffic its mining rule (template_id),
    else its construction method."""
    p = c.provenance
    if p.operator:
        return p.operator
    if c.construction_method == "real_traffic_mined" and p.template_id:
        return p.template_id
    return c.construction_method


def to_row(c: Candidate, outcome: Outcome, rid: str, difficulty: str | None, votes: Mapping[str, bool],
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
    candidates: int            # verified candidates scored
    shared: int = 0            # fooled rows left out: a request of theirs is in a row taken before
    domain_capped: int = 0     # fooled rows left out: their domain held its cap
    operator_capped: int = 0   # fooled rows left out: their operator held its cap
    domains: int = 0           # domains with a fooled row

    @property
    def usable(self) -> int:
        """The fooled rows the caps and the one-row-per-request rule let in."""
        return self.fooled - self.shared - self.domain_capped - self.operator_capped


def choose_slice(rows: Sequence[Mapping[str, Any]], target_hits: Mapping[str, bool], cfg: EvolvingConfig,
                 quarter: str, target_key: str, domain_order: Sequence[str]) -> SliceChoice:
    """The slice's candidate ids: the fooled rows, the domains taking turns (in `domain_order`) until
    `rows` are taken. On its turn a domain takes a row of the construction method, then of the
    operator, the slice holds fewest of so far (ties: the domain's seeded order of its groups; within
    a group its rows spread over subcategories), skipping a row whose operator holds `operator_cap`
    rows or one of whose requests a row taken before has; a domain stops at `domain_cap` rows. What
    is left out is counted, never replaced by a row that does not fool the target."""
    fooled = [r for r in rows if target_hits.get(r["id"]) and r["binary_label"] == "MISS"]
    lanes: dict[str, list[tuple[str, str, list]]] = {}
    for domain in domain_order:
        mine = sorted((r for r in fooled if r["domain"] == domain), key=lambda r: r["id"])
        if mine:
            lanes[domain] = _groups(mine, stable_rng("evolving-slice", quarter, target_key, domain))
    taken: list[str] = []
    counts = {"method": Counter(), "operator": Counter(), "domain": Counter(), "left": Counter()}
    seen: set[str] = set()
    open_domains = list(lanes)
    while open_domains and len(taken) < cfg.rows:
        for domain in list(open_domains):
            if len(taken) >= cfg.rows:
                break
            row = _next_row(lanes[domain], counts, seen, cfg.operator_cap)
            if row is not None:
                taken.append(row["id"])
                seen |= used_requests([row])
                for what, key in (("method", row["construction_method"]), ("operator", _op(row)), ("domain", domain)):
                    counts[what][key] += 1
            if row is None or counts["domain"][domain] >= cfg.domain_cap:
                counts["left"]["domain"] += sum(len(g[2]) for g in lanes[domain])
                open_domains.remove(domain)
    left = counts["left"]
    return SliceChoice(tuple(taken), len(fooled), len(rows), left["shared"], left["domain"], left["operator"],
                       len(lanes))


def _op(row: Mapping[str, Any]) -> str:
    return row["provenance"]["evolving"]["operator"]


def _groups(rows: Sequence[Mapping[str, Any]], rng) -> list[tuple[str, str, list]]:
    """One domain's fooled rows as (method, operator, rows) groups in a seeded order, each group's
    rows spread over their subcategories (shuffled by `rng`)."""
    groups: dict[tuple[str, str], list] = {}
    for r in rows:
        groups.setdefault((r["construction_method"], _op(r)), []).append(r)
    keys = sorted(groups)
    rng.shuffle(keys)
    return [(m, o, spread(groups[(m, o)], lambda r: r["subcategory"], rng)) for m, o in keys]


def _next_row(groups: list[tuple[str, str, list]], counts: Mapping[str, Counter], seen: set[str],
              operator_cap: int) -> Mapping[str, Any] | None:
    """The domain's next row (see `choose_slice`), its groups consumed; None when it has none left.
    The rows it passes over are counted in counts["left"] (operator, shared)."""
    while True:
        for g in [g for g in groups if g[2] and counts["operator"][g[1]] >= operator_cap]:
            counts["left"]["operator"] += len(g[2])
            g[2].clear()
        live = [i for i, g in enumerate(groups) if g[2]]
        if not live:
            return None
        best = min(live, key=lambda i: (counts["method"][groups[i][0]], counts["operator"][groups[i][1]], i))
        row = groups[best][2].pop(0)
        if used_requests([row]) & seen:   # one seed (or perturbation) per slice: the row taken first keeps it
            counts["left"]["shared"] += 1
            continue
        return row


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
        capped = (f" ({choice.usable} usable under the caps of {cfg.domain_cap} rows per domain, max_domain_share "
                  f"{cfg.max_domain_share:g}, and {cfg.operator_cap} per operator, max_operator_share "
                  f"{cfg.max_operator_share:g}, and one row per request)")
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
