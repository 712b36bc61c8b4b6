"""The scoring harness: load a benchmark file, ask a cache for a verdict on every row, report.

Standard library only, so that anyone can score a cache without installing the pipeline (a test
imports this module in a fresh interpreter and checks that no heavy library came with it).

A cache is any callable `row -> verdict`. The verdict may be a `Verdict`, any object with the same
attribute names (a cache written against the published CacheEval interface runs with only its
import line changed), a dict with those keys, or a plain bool. A cache that raises, or returns
something that is not a verdict, is scored MISS with tier `error` (or, with `on_error="raise"`,
the exception propagates with the row id attached as a note).

Metrics treat HIT as the positive class and use each row's `binary_label`:
precision TP/(TP+FP), recall TP/(TP+FN), F1 2TP/(2TP+FP+FN), FHR FP/(FP+TN), accuracy
(TP+TN)/n; every proportion carries a 95% Wilson interval. Latency percentiles interpolate
linearly between closest ranks (numpy's default method).

Confidence: `confidence` is read as the cache's score that the pair is a HIT (higher = more
willing to hit). The sweep predicts HIT when `confidence >= threshold`; rows without a confidence
(including errors) never hit. The two operating points (recall at FHR <= 5%, FHR at recall >= 80%)
are computed exactly over every distinct confidence. The sweep table lists every distinct
confidence when there are at most 50, else 21 of them at evenly spaced ranks (0%, 5%, ... 100%
of the sorted distinct values).
"""
from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from pipeline.core.errors import InputError

HARNESS_VERSION = "1"

ROW_FIELDS = (
    "id", "domain", "subcategory", "label", "binary_label", "difficulty", "query_a", "query_b",
    "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a", "tools_b",
    "expected_answer_a", "expected_answer_b", "rationale", "verification_method",
    "verification_payload", "construction_method", "source", "real_world_grounding",
)
_ROW_SET = frozenset(ROW_FIELDS)
MAX_ERROR_MESSAGES = 5

__all__ = ["HARNESS_VERSION", "ROW_FIELDS", "Row", "Verdict", "Report", "load_bench", "evaluate",
           "wilson"]


@dataclass(frozen=True)
class Row:
    """One benchmark pair: the 22 fields of BENCHMARK.md, plus provenance fields in `extra`.

    JSON values are kept as loaded (lists, dicts), so a Row compares by value but is not hashable
    when it holds a context or tools list."""

    id: str
    domain: str
    subcategory: str
    label: str
    binary_label: str
    difficulty: str
    query_a: str
    query_b: str
    context_a: Any
    context_b: Any
    system_prompt_a: str | None
    system_prompt_b: str | None
    tools_a: Any
    tools_b: Any
    expected_answer_a: str
    expected_answer_b: str
    rationale: str
    verification_method: str
    verification_payload: Any
    construction_method: str
    source: str
    real_world_grounding: str
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Row":
        """Build a Row from a mapping holding at least the 22 row fields (KeyError otherwise)."""
        extra = {k: v for k, v in data.items() if k not in _ROW_SET}
        return cls(*[data[k] for k in ROW_FIELDS], extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict: the 22 fields in ROW_FIELDS order, then the extra fields."""
        out = {k: getattr(self, k) for k in ROW_FIELDS}
        out.update(self.extra)
        return out

    def __getitem__(self, key: str) -> Any:
        # Dict-style access for caches written against rows as plain dicts.
        if key in _ROW_SET:
            return getattr(self, key)
        return self.extra[key]


@dataclass
class Verdict:
    """A cache's decision on one row. `confidence` is the cache's score for HIT (optional),
    `decision_ms` its own timing (the harness measures wall clock when absent or not positive),
    `tier_used` names what decided: exact, programmatic, rubric, judge, ... ."""

    is_hit: bool
    confidence: float | None = None
    decision_ms: float | None = None
    tier_used: str | None = None
    cost_usd: float = 0.0
    extra: dict = field(default_factory=dict)


class VerdictError(TypeError):
    """A cache returned something that is not a verdict."""


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials (95% by default); None when n == 0."""
    if n <= 0:
        return None
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    # The exact ends are known at k = 0 and k = n; floating error must not move them.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


# ---------------------------------------------------------------- loading

def _read_jsonl(path: Any) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line; InputError naming file:line otherwise."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found. Pass the path of a benchmark JSONL file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc}). Pass a UTF-8 JSONL file") from None
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno}). "
                             "Write one JSON object per line") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}. "
                             "Write one JSON object per line")
        out.append((lineno, obj))
    return out


def _index_labels(labels_path: Any) -> dict[str, dict]:
    by_id: dict[str, dict] = {}
    for lineno, obj in _read_jsonl(labels_path):
        rid = obj.get("id")
        if not isinstance(rid, str):
            raise InputError(f"{labels_path}:{lineno}: labels record has no string 'id'. "
                             "Give every labels record the id of its row")
        if rid in by_id:
            raise InputError(f"{labels_path}:{lineno}: duplicate id '{rid}'. Keep one labels record per id")
        by_id[rid] = obj
    return by_id


def load_bench(path: Any, labels_path: Any = None) -> list[Row]:
    """Read a benchmark JSONL file into Rows, in file order.

    A test split published without labels is joined with `labels_path` (JSONL records holding
    `id` and the withheld fields) by id; a field present in both files must agree. Every row needs
    all 22 fields after the join; problems raise InputError naming file:line."""
    labels = _index_labels(labels_path) if labels_path is not None else None
    rows: list[Row] = []
    seen: dict[str, int] = {}
    for lineno, obj in _read_jsonl(path):
        where = f"{path}:{lineno}"
        rid = obj.get("id")
        if not isinstance(rid, str) or not rid:
            raise InputError(f"{where}: row has no string 'id'. Give every row its id")
        if rid in seen:
            raise InputError(f"{where}: duplicate id '{rid}' (first on line {seen[rid]}). Give every row its own id")
        seen[rid] = lineno
        if labels is not None and rid in labels:
            obj = _join(obj, labels[rid], where, labels_path)
        missing = [k for k in ROW_FIELDS if k not in obj]
        if missing:
            fix = ("Pass --labels with the labels file of this split" if labels is None and
                   ("label" in missing or "binary_label" in missing) else
                   "Add the fields (see configs/row.schema.json)")
            raise InputError(f"{where}: row '{rid}' is missing {', '.join(missing)}. {fix}")
        if obj["binary_label"] not in ("HIT", "MISS"):
            raise InputError(f"{where}: binary_label is {obj['binary_label']!r}, expected 'HIT' or 'MISS'. "
                             "Fix the row")
        rows.append(Row.from_dict(obj))
    if not rows:
        raise InputError(f"{path}: no rows. Pass a benchmark JSONL file with at least one row")
    return rows


def _join(row: dict, lab: dict, where: str, labels_path: Any) -> dict:
    merged = dict(row)
    for k, v in lab.items():
        if k in merged and merged[k] != v:
            raise InputError(f"{where}: {k} is {merged[k]!r} here but {v!r} in {labels_path}. "
                             "Use the labels file of the same benchmark version")
        merged[k] = v
    return merged


# ---------------------------------------------------------------- scoring

def _as_bool(value: Any) -> bool:
    if value is None or isinstance(value, (str, bytes)):
        raise VerdictError(f"is_hit must be a bool, got {value!r}")
    b = bool(value)
    if value != b:  # accepts numpy bools and 0/1, refuses 0.5 or "yes"
        raise VerdictError(f"is_hit must be a bool, got {value!r}")
    return b


def _as_number(value: Any, name: str, *, allow_none: bool) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise VerdictError(f"{name} must be a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise VerdictError(f"{name} must be finite, got {value!r}")
    return out


def _unpack(v: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(is_hit, confidence, decision_ms, tier_used, cost_usd) of a non-Verdict verdict."""
    if isinstance(v, Mapping):
        if "is_hit" not in v:
            raise VerdictError(f"verdict dict has no 'is_hit' key (keys: {', '.join(sorted(map(str, v)))})")
        return v["is_hit"], v.get("confidence"), v.get("decision_ms"), v.get("tier_used"), v.get("cost_usd", 0.0)
    if not hasattr(v, "is_hit"):
        raise VerdictError(f"cache returned {type(v).__name__}, expected a Verdict, an object with "
                           "is_hit, a dict with 'is_hit', or a bool")
    return (v.is_hit, getattr(v, "confidence", None), getattr(v, "decision_ms", None),
            getattr(v, "tier_used", None), getattr(v, "cost_usd", 0.0))


def _message(row: Row, exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{row.id}: {type(exc).__name__}: {first}"[:300]


def evaluate(cache: Callable[[Row], Any], rows: Iterable[Row], cache_name: str = "cache",
             on_error: str = "miss") -> "Report":
    """Ask `cache` for a verdict on every row and score the decisions (see the module docstring).

    on_error="miss" scores a raising cache as MISS with tier `error` and counts it;
    on_error="raise" re-raises the exception with a note naming the row."""
    if on_error not in ("miss", "raise"):
        raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
    rows = list(rows)
    n = len(rows)
    hits: list[bool] = [False] * n
    confs: list[float | None] = [None] * n
    lats: list[float] = [0.0] * n
    tiers: list[str | None] = [None] * n
    costs: list[float] = [0.0] * n
    own_ms = 0
    n_errors = 0
    messages: list[str] = []
    perf = time.perf_counter
    verdict_cls = Verdict
    # The per-row path is kept lean on purpose: benchmarks/harness_overhead.py holds it to
    # >= 200,000 decisions/s, so checks run only when a value is not already the expected type.
    for i, row in enumerate(rows):
        t0 = perf()
        try:
            v = cache(row)
            wall = (perf() - t0) * 1000.0
            if v.__class__ is verdict_cls:
                is_hit, conf, ms, tier, cost = v.is_hit, v.confidence, v.decision_ms, v.tier_used, v.cost_usd
            elif v is True or v is False:
                is_hit, conf, ms, tier, cost = v, None, None, None, 0.0
            else:
                is_hit, conf, ms, tier, cost = _unpack(v)
            if is_hit is not True and is_hit is not False:
                is_hit = _as_bool(is_hit)
            # `x - x != 0.0` is true exactly for nan and inf.
            if conf is not None and (conf.__class__ is not float or conf - conf != 0.0):
                conf = _as_number(conf, "confidence", allow_none=True)
            if ms is not None:
                if ms.__class__ is not float or ms - ms != 0.0:
                    ms = _as_number(ms, "decision_ms", allow_none=True)
                if ms > 0.0:
                    wall = ms
                    own_ms += 1
            if cost.__class__ is not float or cost - cost != 0.0 or cost < 0.0:
                cost = _as_number(0.0 if cost is None else cost, "cost_usd", allow_none=False)
                if cost < 0.0:
                    raise VerdictError(f"cost_usd must not be negative, got {cost!r}")
            if tier is not None and tier.__class__ is not str:
                raise VerdictError(f"tier_used must be a string, got {tier!r}")
        except Exception as exc:  # noqa: BLE001 - scored and counted, or re-raised on request
            if on_error == "raise":
                exc.add_note(f"cacheeval: while scoring row {row.id} with cache '{cache_name}'")
                exc.cacheeval_row_id = row.id  # type: ignore[attr-defined]  # for the CLI's one line
                raise
            wall = (perf() - t0) * 1000.0
            is_hit, conf, tier, cost = False, None, "error", 0.0
            n_errors += 1
            if len(messages) < MAX_ERROR_MESSAGES:
                messages.append(_message(row, exc))
        hits[i] = is_hit
        confs[i] = conf
        lats[i] = wall
        tiers[i] = tier
        costs[i] = cost
    return Report(_build_report(
        rows, hits, confs, lats, tiers, costs, own_ms=own_ms, n_errors=n_errors,
        messages=messages, cache_name=cache_name, harness_version=HARNESS_VERSION,
    ))


class Report:
    """The scored result of one cache on one benchmark file."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (no NaN), keys in a fixed order."""
        return json.loads(json.dumps(self._data, allow_nan=False))

    def to_markdown(self) -> str:
        """The report as a Markdown document."""
        return _render_markdown(self._data)

    def _value(self, name: str) -> float | None:
        return self._data["metrics"][name]["value"]

    @property
    def n(self) -> int:
        return self._data["bench"]["n"]

    @property
    def precision(self) -> float | None:
        return self._value("precision")

    @property
    def recall(self) -> float | None:
        return self._value("recall")

    @property
    def f1(self) -> float | None:
        return self._value("f1")

    @property
    def fhr(self) -> float | None:
        return self._value("fhr")

    @property
    def accuracy(self) -> float | None:
        return self._value("accuracy")


# ---------------------------------------------------------------- metrics

# Preferred display orders; values not listed here follow, sorted.
_DOMAINS = ("qa_factual", "qa_open", "math", "code", "conversational", "tool", "creative",
            "personalized", "multi_turn", "multilingual")
_DIFFICULTIES = ("easy", "medium", "hard")
_METHODS = ("real_traffic_mined", "intent_bottom_up", "adversarial_perturbation", "lm_generated",
            "existing_benchmark", "curated")
_MISS_LABELS = ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED")
_HIT_LABELS = ("EQUIV", "PARA_SAFE")
_TIERS = ("exact", "programmatic", "rubric", "judge", "error")
_UNSPECIFIED = "unspecified"
_SWEEP_MAX_DISTINCT = 50
_SWEEP_RANKS = 21
# Outcome codes: 2 * gold_hit + predicted_hit.
_TN, _FP, _FN, _TP = 0, 1, 2, 3


def _ratio(k: int, n: int) -> float | None:
    return k / n if n else None


def _proportion(k: int, n: int) -> dict[str, Any]:
    ci = wilson(k, n)
    return {"value": _ratio(k, n), "k": k, "n": n, "ci95": list(ci) if ci else None}


def _f1(tp: int, fp: int, fn: int) -> float | None:
    return _ratio(2 * tp, 2 * tp + fp + fn)


def _ordered(keys: Iterable[str], preferred: tuple[str, ...]) -> list[str]:
    present = set(keys)
    head = [k for k in preferred if k in present]
    return head + sorted(present - set(preferred))


def _group(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    ci = wilson(fp, fp + tn)
    return {
        "n": tp + fp + fn + tn, "hit": tp + fn, "miss": fp + tn,
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn), "f1": _f1(tp, fp, fn),
        "fhr": _ratio(fp, fp + tn), "fhr_ci95": list(ci) if ci else None,
        "accuracy": _ratio(tp + tn, tp + fp + fn + tn),
    }


def _breakdown(keys: list[str], codes: list[int], preferred: tuple[str, ...]) -> dict[str, Any]:
    # Counter over zip runs in C: one pass per dimension, no per-row Python branching.
    counts = Counter(zip(keys, codes))
    return {k: _group(counts[(k, _TP)], counts[(k, _FP)], counts[(k, _FN)], counts[(k, _TN)])
            for k in _ordered(keys, preferred)}


def _miss_entry(fp: int, tn: int) -> dict[str, Any]:
    ci = wilson(fp, fp + tn)
    return {"n": fp + tn, "fp": fp, "fhr": _ratio(fp, fp + tn), "ci95": list(ci) if ci else None}


def _by_miss_label(rows: list[Row], codes: list[int]) -> dict[str, Any]:
    counts = Counter(zip([r.label for r in rows], codes))
    out = {label: _miss_entry(counts[(label, _FP)], counts[(label, _TN)]) for label in _MISS_LABELS}
    # Rows whose 5-class label says HIT but the policy override makes MISS (creative, mutations, ...).
    fp = sum(counts[(label, _FP)] for label in _HIT_LABELS)
    tn = sum(counts[(label, _TN)] for label in _HIT_LABELS)
    if fp + tn:
        out["policy_no_cache"] = _miss_entry(fp, tn)
    return out


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return None
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _confidence(gold: list[bool], confs: list[float | None]) -> dict[str, Any] | None:
    scored = [(c, g) for c, g in zip(confs, gold) if c is not None]
    if not scored:
        return None
    pos = sum(gold)
    neg = len(gold) - pos
    per_value: dict[float, list[int]] = {}
    for c, g in scored:
        per_value.setdefault(c, [0, 0])[0 if g else 1] += 1
    # points[j]: threshold and cumulative (tp, fp) predicting HIT for confidence >= threshold,
    # thresholds descending; the first point (threshold None) never hits.
    points: list[tuple[float | None, int, int]] = [(None, 0, 0)]
    tp = fp = 0
    for c in sorted(per_value, reverse=True):
        tp += per_value[c][0]
        fp += per_value[c][1]
        points.append((c, tp, fp))

    def point(p: tuple[float | None, int, int]) -> dict[str, Any]:
        t, tp_, fp_ = p
        return {"threshold": t, "tp": tp_, "fp": fp_, "precision": _ratio(tp_, tp_ + fp_),
                "recall": _ratio(tp_, pos), "fhr": _ratio(fp_, neg)}

    recall_at = None
    if neg:
        # fp only grows as the threshold falls, so the feasible points are a prefix; within it,
        # the first point reaching the best tp has the highest threshold and the fewest FP.
        feasible = [p for p in points if p[2] * 20 <= neg]
        best_tp = feasible[-1][1]
        recall_at = point(next(p for p in feasible if p[1] == best_tp))
    fhr_at = None
    if pos:
        fhr_at = next((point(p) for p in points if p[1] * 5 >= pos * 4), None)
    distinct = points[1:][::-1]  # ascending thresholds
    if len(distinct) <= _SWEEP_MAX_DISTINCT:
        grid = "every distinct confidence"
        table = distinct
    else:
        grid = f"{_SWEEP_RANKS} evenly spaced ranks of the {len(distinct)} distinct confidences"
        last = len(distinct) - 1
        table = [distinct[round(i * last / (_SWEEP_RANKS - 1))] for i in range(_SWEEP_RANKS)]
    return {
        "rows_with_confidence": len(scored),
        "distinct_confidences": len(distinct),
        "rule": "HIT when confidence >= threshold; rows without a confidence never hit",
        "sweep_grid": grid,
        "sweep": [point(p) for p in table],
        "recall_at_fhr_le_5pct": recall_at,
        "fhr_at_recall_ge_80pct": fhr_at,
    }


def _build_report(rows: list[Row], hits: list[bool], confs: list[float | None], lats: list[float],
                  tiers: list[str | None], costs: list[float], *, own_ms: int, n_errors: int,
                  messages: list[str], cache_name: str, harness_version: str) -> dict[str, Any]:
    n = len(rows)
    gold = [r.binary_label == "HIT" for r in rows]
    codes = [2 * g + h for g, h in zip(gold, hits)]
    c = Counter(codes)
    tp, fp, fn, tn = c[_TP], c[_FP], c[_FN], c[_TN]
    tier_counts = Counter(_UNSPECIFIED if t is None else t for t in tiers)
    tier_counts.setdefault("error", 0)
    lat_sorted = sorted(lats)
    total_cost = math.fsum(costs)
    return {
        "harness_version": harness_version,
        "cache_name": cache_name,
        "bench": {"n": n, "hit": tp + fn, "miss": fp + tn},
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "metrics": {
            "precision": _proportion(tp, tp + fp),
            "recall": _proportion(tp, tp + fn),
            "f1": {"value": _f1(tp, fp, fn)},
            "fhr": _proportion(fp, fp + tn),
            "accuracy": _proportion(tp + tn, n),
        },
        "by_domain": _breakdown([r.domain for r in rows], codes, _DOMAINS),
        "by_miss_label": _by_miss_label(rows, codes),
        "by_difficulty": _breakdown([r.difficulty for r in rows], codes, _DIFFICULTIES),
        "by_construction_method": _breakdown([r.construction_method for r in rows], codes, _METHODS),
        "by_subcategory": _breakdown([f"{r.domain}/{r.subcategory}" for r in rows], codes, ()),
        "latency_ms": {
            "p50": _percentile(lat_sorted, 0.50), "p95": _percentile(lat_sorted, 0.95),
            "p99": _percentile(lat_sorted, 0.99),
            "mean": math.fsum(lats) / n if n else None, "max": lat_sorted[-1] if n else None,
            "cache_timed": own_ms, "wall_clock": n - own_ms,
        },
        "cost": {"total_usd": total_cost, "per_1000_usd": total_cost / n * 1000 if n else None},
        "tiers": {t: tier_counts[t] for t in _ordered(tier_counts, _TIERS + (_UNSPECIFIED,))},
        "errors": {"count": n_errors, "messages": list(messages)},
        "confidence": _confidence(gold, confs),
    }


# ---------------------------------------------------------------- markdown

def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ci(ci: list[float] | None) -> str:
    return "–" if ci is None else f"{ci[0]:.3f} – {ci[1]:.3f}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], body: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in body]
    return lines + [""]


def _group_table(title: str, column: str, groups: dict[str, Any]) -> list[str]:
    body = [[name, g["n"], g["hit"], g["miss"], _num(g["precision"]), _num(g["recall"]), _num(g["f1"]),
             _num(g["fhr"]), _ci(g["fhr_ci95"]), _num(g["accuracy"])] for name, g in groups.items()]
    header = [column, "n", "HIT", "MISS", "precision", "recall", "F1", "FHR", "FHR 95% CI", "accuracy"]
    return [f"## {title}", ""] + _table(header, body)


def _render_markdown(d: dict[str, Any]) -> str:
    m, b, cm = d["metrics"], d["bench"], d["confusion"]
    out = [f"# CacheEval report: {d['cache_name']}", "",
           f"Harness v{d['harness_version']} · {b['n']} rows ({b['hit']} HIT, {b['miss']} MISS) · "
           "HIT is the positive class; FHR = FP / (FP + TN).", "", "## Headline", ""]
    body = []
    for key, name in (("fhr", "FHR"), ("precision", "precision"), ("recall", "recall"), ("f1", "F1"),
                      ("accuracy", "accuracy")):
        e = m[key]
        frac = f" ({e['k']}/{e['n']})" if "k" in e else ""
        body.append([name, _num(e["value"]) + frac, _ci(e.get("ci95"))])
    out += _table(["metric", "value", "95% Wilson CI"], body)
    out += [f"Confusion: TP {cm['tp']} · FP {cm['fp']} · FN {cm['fn']} · TN {cm['tn']}", ""]
    out += _group_table("By domain", "domain", d["by_domain"])
    out += ["## FHR by MISS label", ""]
    out += _table(["label", "n", "FP", "FHR", "95% Wilson CI"],
                  [[k, e["n"], e["fp"], _num(e["fhr"]), _ci(e["ci95"])] for k, e in d["by_miss_label"].items()])
    out += _group_table("By difficulty", "difficulty", d["by_difficulty"])
    out += _group_table("By construction method", "method", d["by_construction_method"])
    out += _group_table("By subcategory", "domain/subcategory", d["by_subcategory"])
    lat = d["latency_ms"]
    out += ["## Decision latency (ms)", ""]
    out += _table(["p50", "p95", "p99", "mean", "max", "timed by cache", "wall clock"],
                  [[_num(lat["p50"]), _num(lat["p95"]), _num(lat["p99"]), _num(lat["mean"]), _num(lat["max"]),
                    lat["cache_timed"], lat["wall_clock"]]])
    cost = d["cost"]
    out += ["## Cost", "", f"Total ${cost['total_usd']:.6f} · per 1,000 decisions "
            + ("–" if cost["per_1000_usd"] is None else f"${cost['per_1000_usd']:.6f}"), ""]
    n = b["n"]
    out += ["## Tiers", ""]
    out += _table(["tier", "decisions", "share"],
                  [[t, k, _num(k / n if n else None)] for t, k in d["tiers"].items()])
    err = d["errors"]
    if err["count"]:
        out += [f"## Errors (rows scored MISS: {err['count']})", ""]
        out += [f"- {_cell(msg)}" for msg in err["messages"]]
        if err["count"] > len(err["messages"]):
            out.append(f"- … and {err['count'] - len(err['messages'])} more")
        out.append("")
    if d["confidence"]:
        out += _render_confidence(d["confidence"])
    return "\n".join(out).rstrip("\n") + "\n"


def _render_confidence(c: dict[str, Any]) -> list[str]:
    def op(p: dict[str, Any] | None, fmt: str) -> str:
        if p is None:
            return "not reached"
        t = "never hit" if p["threshold"] is None else f"threshold {p['threshold']:.6g}"
        return fmt.format(**{k: _num(v) for k, v in p.items() if k != "threshold"}) + f" ({t})"

    out = ["## Confidence", "",
           f"{c['rows_with_confidence']} rows carry a confidence; {c['rule']}.", "",
           "- recall at FHR ≤ 5%: " + op(c["recall_at_fhr_le_5pct"], "{recall} (FHR {fhr}, precision {precision})"),
           "- FHR at recall ≥ 80%: " + op(c["fhr_at_recall_ge_80pct"], "{fhr} (recall {recall}, precision {precision})"),
           "", f"Threshold sweep over {c['sweep_grid']}:", ""]
    out += _table(["threshold", "TP", "FP", "precision", "recall", "FHR"],
                  [[f"{p['threshold']:.6g}", p["tp"], p["fp"], _num(p["precision"]), _num(p["recall"]),
                    _num(p["fhr"])] for p in c["sweep"]])
    return out
