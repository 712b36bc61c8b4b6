"""The stream protocol: a store/lookup cache (pipeline.harness.stateful) as it runs in production.

The isolated and shared protocols ask one question per row. Here the cache serves a *workload*: a
seeded sequence of requests built from the benchmark, every row's A and B interleaved with the
other rows' requests, each request handled as an application would:

    response = cache.lookup(request)
    if response is None:                       # a miss: the model answers, the answer is stored
        cache.store(request, marker(request))

so what a lookup can serve depends on everything that came before it (what was stored, evicted,
and learned), and a cache that learns online (vCache) learns here.

**The workload** (`arrivals`): the rows in a seeded random order; row i's A arrives at step 2i and
its B at 2i + gap_i, gap_i uniform in [G - G//2, G + G//2] (`--gap G`); sorted by step, A before B
on a tie. About as many A's as B's arrive meanwhile, so about G other requests come between a row's
A and its B (the report gives the realised gaps). `--orders N` runs N arrival orders, seeds
`seed, seed+1, ...`; the cache is reset before each.

**Capacity and eviction** are the harness's, around the cache: it keeps its own ordered index of
the stored responses (markers) and, when a store would exceed `--capacity` entries, evicts the
oldest (`fifo`: by store; `lru`: by store or last served) by calling `cache.evict(request)` with the
request stored under that marker. A cache without `evict` cannot be bounded this way (resetting and
storing again would forget what it learned): it runs with capacity unbounded and the report says
so. `--eviction none` stores nothing more once the index is full.

**The oracle** judges every served response. A response is *correct* when it is the marker of a
request equivalent to the one looked up: the identical request, or the other request of a HIT row
(transitively: requests linked by HIT rows share an answer), unless a MISS row names that very
pair. A request of a policy row (`policy_no_cache` for a reason of the request itself: mutation,
time-sensitive, creative) is never correctly served from a cache, not even to an identical
request; `cross_user` is a policy of the pair only. A response stored with an error or refusal
status (a row's `status_a`: stored as a stateful.Response) is never correct. Anything else served is a *false hit*, as
under the shared protocol (serving another entry's response is wrong however it happened).

**Feedback** (optional): a cache with `feedback(request, response, correct)` is told the oracle's
verdict after every served hit, and after a miss for which it names, in `last_candidate`, the
response it declined to serve (its *exploration*: in vCache's evaluation the model's fresh answer
shows whether the declined entry would have been right). A cache without it runs unchanged.

**Scored**, for every lookup (A and B alike; an A can only be served correctly from an identical or
HIT-linked request stored before it): a lookup is *positive* when an equivalent entry is in the
harness's index at that moment, else *negative*.

- FHR = false hits on negative lookups / negative lookups (cumulative along the stream: the curve);
- hit rate = served / lookups; precision = correct / served; recall = correct / positive lookups;
- error rate = wrong / served (every false hit, on negative and positive lookups alike), tested
  against a declared `error_bound` (pipeline.harness.bound) in every order;
- wrong-entry hits: false hits on positive lookups (an equivalent entry was there, another served);
- answer instability: the share of rows whose B got a different answer (a miss, or which entry's
  response) in some order than in another; and the share decided differently as hit or miss.

Breakdowns: per domain, and per label of the row (for B lookups; A lookups apart). Counts are summed
over the orders; the bound test takes the worst order. Timings (lookup latency, the cache's own
time and the harness's bookkeeping) are kept apart in `timing`, which committed reports drop.
Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from pipeline.harness.bound import declared_bound
from pipeline.harness.interface import Row
from pipeline.harness.interface import optional_fields
from pipeline.harness.stateful import Request, is_store_lookup, stored_response
from pipeline.harness.stream_scores import (CORRECT_NEG, CORRECT_POS, MISS_NEG, MISS_POS, STREAM, WRONG_NEG,
                                            WRONG_POS, OrderRun, check_bound, realised_gaps, render_markdown,
                                            stream_report, summary_line, untimed_stream, with_bound)

__all__ = ["STREAM", "EVICTIONS", "StreamConfig", "Oracle", "arrivals", "realised_gaps", "run_order", "run_stream",
           "score_stream", "check_bound", "render_markdown", "summary_line", "untimed_stream", "with_bound"]

EVICTIONS = ("lru", "fifo", "none")
DEFAULT_GAP = 100
DEFAULT_ORDERS = 3
DEFAULT_SEED = 0
# policies of the pair (a request answered for one user, looked up by another), not of the request
# (and the system traps': the stored response is wrong for the other request, not the request uncacheable)
PAIR_POLICIES = frozenset({"cross_user", "cross_tenant", "stored_error", "stored_refusal"})


@dataclass(frozen=True)
class StreamConfig:
    """The workload and the harness's cache management: mean gap between a row's A and B (in
    requests), capacity in entries (None: unbounded), eviction policy, number of arrival orders and
    the first seed."""

    gap: int = DEFAULT_GAP
    capacity: int | None = None
    eviction: str = "lru"
    orders: int = DEFAULT_ORDERS
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if self.gap < 0:
            raise ValueError(f"gap must be >= 0, got {self.gap}")
        if self.capacity is not None and self.capacity < 1:
            raise ValueError(f"capacity must be >= 1 entry, got {self.capacity}")
        if self.eviction not in EVICTIONS:
            raise ValueError(f"eviction must be one of {', '.join(EVICTIONS)}, got {self.eviction!r}")
        if self.orders < 1:
            raise ValueError(f"orders must be >= 1, got {self.orders}")

    def seeds(self) -> list[int]:
        return [self.seed + i for i in range(self.orders)]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def arrivals(n_rows: int, seed: int, gap: int) -> list[int]:
    """The arrival order of one workload: request codes 2 x row + side (0 = A, 1 = B), see the
    module docstring. Deterministic for (n_rows, seed, gap) on every Python 3."""
    rng = random.Random(seed)
    order = list(range(n_rows))
    rng.shuffle(order)
    half = gap // 2
    keyed = []
    for i, row in enumerate(order):
        keyed.append((2 * i, 0, row))
        keyed.append((2 * i + gap + (int(rng.random() * (2 * half + 1)) - half if half else 0), 1, row))
    keyed.sort()
    return [2 * row + side for _, side, row in keyed]


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_string = json.encoder.encode_basestring  # how that encoder writes a string (ensure_ascii=False)


def fast_marker(request: Request) -> str:
    """pipeline.harness.stateful.marker(request), the same string (tested), without building a JSON
    encoder per call: the oracle names every request of the workload."""
    q, sp = request.query, request.system_prompt
    scoped = request.user is not None or request.tenant is not None or request.tool_choice is not None
    if (not scoped and request.context is None and request.tools is None and q.__class__ is str
            and (sp is None or sp.__class__ is str)):
        # the canonical JSON of [query, system prompt, null, null], string by string
        body = f"[{_string(q)},{'null' if sp is None else _string(sp)},null,null]"
    elif scoped:
        body = _CANONICAL.encode([q, sp, request.context, request.tools, request.user, request.tenant,
                                  request.tool_choice])
    else:
        body = _CANONICAL.encode([q, sp, request.context, request.tools])
    return "cacheeval-response-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:20]


class Oracle:
    """Which served responses are correct for which request (see the module docstring): equivalence
    classes of request markers, joined by HIT rows; MISS pairs inside a class; uncacheable requests;
    responses stored with a status other than ok (a row's `status_a`), which are never correct."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.requests: list[Request] = []
        self.markers: list[str] = []
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            root = x
            while parent[root] != root:
                root = parent[root]
            while parent[x] != root:
                parent[x], x = root, parent[x]
            return root

        self.uncacheable: set[str] = set()
        self.bad: set[str] = set()          # markers stored with an error or refusal status
        self.responses: list[str] = []      # what the harness stores when request k misses
        miss_pairs: list[tuple[str, str]] = []
        for row in rows:
            opt = optional_fields(row)
            ra_, rb_ = Request.from_row(row, "a"), Request.from_row(row, "b")
            a, b = fast_marker(ra_), fast_marker(rb_)
            self.requests += (ra_, rb_)
            self.markers += (a, b)
            status = opt.get("status_a")
            self.responses += (stored_response(a, status), b)
            if status not in (None, "ok"):
                self.bad.add(a)
            parent.setdefault(a, a)
            parent.setdefault(b, b)
            ms = (a, b)
            if row.binary_label == "HIT":
                ra, rb = find(a), find(b)
                if ra != rb:
                    parent[ra] = rb
            else:
                miss_pairs.append((a, b))
                payload = row.verification_payload if isinstance(row.verification_payload, Mapping) else {}
                if row.verification_method == "policy_no_cache" and payload.get("policy") not in PAIR_POLICIES:
                    self.uncacheable.update(ms)
        ids: dict[str, int] = {}
        self.class_of: dict[str, int] = {m: ids.setdefault(find(m), len(ids)) for m in parent}
        # MISS pairs whose requests HIT rows link anyway (the labels disagree): never correct
        self.conflicts: set[tuple[str, str]] = set()
        for a, b in miss_pairs:
            if a != b and self.class_of[a] == self.class_of[b]:
                self.conflicts.update({(a, b), (b, a)})
        self.request_class = [self.class_of[m] for m in self.markers]
        self.request_uncacheable = [m in self.uncacheable for m in self.markers]

    def correct(self, k: int, served: Any) -> bool:
        """Is `served` a correct answer to request k (code 2 x row + side)?"""
        if self.request_uncacheable[k] or (self.bad and served in self.bad):
            return False
        c = self.class_of.get(served) if isinstance(served, str) else None
        if c is None or c != self.request_class[k]:
            return False
        return not self.conflicts or (self.markers[k], served) not in self.conflicts


class _Raised(Exception):
    pass


def run_order(cache: Any, oracle: Oracle, rows: Sequence[Row], seed: int, config: StreamConfig,
              on_error: str = "miss") -> OrderRun:
    """One arrival order through `cache` (reset first). See the module docstring."""
    t_start = time.perf_counter()
    codes = arrivals(len(rows), seed, config.gap)
    can_evict = callable(getattr(cache, "evict", None))
    feedback = getattr(cache, "feedback", None)
    feedback = feedback if callable(feedback) else None
    capacity = config.capacity
    evicting = capacity is not None and config.eviction != "none" and can_evict
    refusing = capacity is not None and config.eviction == "none"
    if capacity is not None and config.eviction != "none" and not can_evict:
        capacity = None  # the cache cannot evict: unbounded, said in the report
    lru = config.eviction == "lru"
    perf = time.perf_counter
    requests, markers, classes, unc = oracle.requests, oracle.markers, oracle.request_class, oracle.request_uncacheable
    responses = oracle.responses
    class_of, correct = oracle.class_of, oracle.correct
    index: OrderedDict[str, Request] = OrderedDict()
    in_class = [0] * (max(class_of.values(), default=-1) + 1)
    outcomes = [0] * len(codes)
    b_answers: list[str | None] = [None] * len(rows)
    lookup_s = [0.0] * len(codes)
    counters = {"stores": 0, "evictions": 0, "refused_full": 0, "feedback_calls": 0, "explorations": 0, "errors": 0}
    errors: list[str] = []
    cache_s = 0.0
    lookup, store = cache.lookup, cache.store
    evict = cache.evict if evicting else None

    def failed(exc: BaseException, k: int, what: str) -> None:
        row_id = rows[k >> 1].id
        if on_error == "raise":
            exc.add_note(f"cacheeval: while the stream protocol called {what} for row {row_id}")
            exc.cacheeval_row_id = row_id  # type: ignore[attr-defined]
            raise _Raised() from exc
        if len(errors) < 5:
            first = (str(exc).strip().splitlines() or [""])[0]
            errors.append(f"{row_id}: {what}: {type(exc).__name__}: {first}"[:300])
        counters["errors"] += 1

    t0 = perf()
    try:
        cache.reset()
    except Exception as exc:  # noqa: BLE001 - the first request's row names where it happened
        if on_error == "raise":
            raise
        errors.append(f"reset(): {type(exc).__name__}: {exc}"[:300])
        counters["errors"] += 1
    cache_s += perf() - t0
    try:
        for i, k in enumerate(codes):
            req = requests[k]
            m = markers[k]
            cls = classes[k]
            positive = not unc[k] and in_class[cls] > 0
            t0 = perf()
            try:
                resp = lookup(req)
            except Exception as exc:  # noqa: BLE001
                resp = None
                failed(exc, k, "lookup()")
            t1 = perf()
            cache_s += t1 - t0
            lookup_s[i] = t1 - t0
            if resp is not None:
                ok = correct(k, resp)
                if ok:
                    outcomes[i] = CORRECT_POS if positive else CORRECT_NEG
                else:
                    outcomes[i] = WRONG_POS if positive else WRONG_NEG
                if k & 1:
                    b_answers[k >> 1] = resp if isinstance(resp, str) else repr(resp)
                if lru and resp.__class__ is str and resp in index:
                    index.move_to_end(resp)
                if feedback is not None:
                    t0 = perf()
                    try:
                        feedback(req, resp, ok)
                    except Exception as exc:  # noqa: BLE001
                        failed(exc, k, "feedback()")
                    cache_s += perf() - t0
                    counters["feedback_calls"] += 1
                continue
            outcomes[i] = MISS_POS if positive else MISS_NEG
            if feedback is not None:
                candidate = getattr(cache, "last_candidate", None)
                if candidate is not None:
                    verdict = correct(k, candidate)
                    t0 = perf()
                    try:
                        feedback(req, candidate, verdict)
                    except Exception as exc:  # noqa: BLE001
                        failed(exc, k, "feedback()")
                    cache_s += perf() - t0
                    counters["feedback_calls"] += 1
                    counters["explorations"] += 1
            # the miss is answered and the answer stored
            if m in index:
                index.move_to_end(m)
            elif capacity is not None and len(index) >= capacity:
                if refusing:
                    counters["refused_full"] += 1
                    continue
                victim, victim_req = index.popitem(last=False)
                in_class[class_of[victim]] -= 1
                t0 = perf()
                try:
                    evict(victim_req)
                except Exception as exc:  # noqa: BLE001
                    failed(exc, k, "evict()")
                cache_s += perf() - t0
                counters["evictions"] += 1
                index[m] = req
                in_class[cls] += 1
            else:
                index[m] = req
                in_class[cls] += 1
            t0 = perf()
            try:
                store(req, responses[k])
            except Exception as exc:  # noqa: BLE001
                failed(exc, k, "store()")
            cache_s += perf() - t0
            counters["stores"] += 1
    except _Raised as wrapped:
        raise wrapped.__cause__ from None  # type: ignore[misc]
    counters["entries_at_end"] = len(index)
    return OrderRun(seed, codes, outcomes, b_answers, counters, cache_s, perf() - t_start, lookup_s, errors)


# ---- running and scoring

def run_stream(cache: Any, rows: Sequence[Row], config: StreamConfig, *, cache_name: str = "cache",
               on_error: str = "miss", error_bound: float | None = None, domain_order: Sequence[str] = ()) -> dict:
    """Every arrival order of `config` through the store/lookup `cache`, and the report.
    `error_bound`: δ to test instead of the cache's declared `error_bound`."""
    if not is_store_lookup(cache):
        raise TypeError(f"{type(cache).__name__} is not a store/lookup cache (store, lookup, reset)")
    if on_error not in ("miss", "raise"):
        raise ValueError(f"on_error must be 'miss' or 'raise', got {on_error!r}")
    rows = list(rows)
    declared = declared_bound(cache)
    delta = error_bound if error_bound is not None else declared
    source = "given" if error_bound is not None else ("declared" if declared is not None else None)
    note = None
    if config.capacity is not None and config.eviction != "none" and not callable(getattr(cache, "evict", None)):
        note = (f"{type(cache).__name__} has no evict(request), so the harness cannot remove entries from it: "
                f"capacity {config.capacity} was not applied (ran unbounded)")
    oracle = Oracle(rows)
    runs = [run_order(cache, oracle, rows, seed, config, on_error) for seed in config.seeds()]
    return stream_report(runs, rows, config.to_dict(), cache_name=cache_name, delta=delta, delta_source=source,
                         eviction_note=note, feedback=callable(getattr(cache, "feedback", None)),
                         domain_order=domain_order)


def score_stream(name: str, subject: Any, bench: Any, rows: Sequence[Row], config: StreamConfig, *,
                 labels: Any = None, reference: str | None = None, on_error: str = "miss", use_cache: bool = True,
                 store: Any = None, error_bound: float | None = None,
                 domain_order: Sequence[str] = ()) -> tuple[dict, bool]:
    """(stream report, served from the evaluation-result cache): `run_stream` through the EvalCache,
    keyed on the benchmark, the cache's code and declared model and settings (its declared
    error_bound included), the stream configuration and these options. A δ given here
    (`error_bound`) is tested on the counts afterwards: it does not key the run."""
    from pipeline.core.hashing import file_sha256
    from pipeline.harness.cache import EvalCache

    if store is None:
        store = EvalCache()
    harness_config = {"protocol": STREAM, "stream": config.to_dict(), "cache_name": name, "reference": reference,
                      "on_error": on_error, "labels_sha256": file_sha256(labels) if labels else None,
                      "declared_error_bound": declared_bound(subject), "domain_order": list(domain_order)}
    identity = store.identity(bench, subject, harness_config)
    report, cached = store.cached_run(identity, lambda: run_stream(subject, rows, config, cache_name=name,
                                                                   on_error=on_error, domain_order=domain_order),
                                      use_cache=use_cache)
    if error_bound is not None:
        report = with_bound(report, error_bound, "given")
    return report, cached
