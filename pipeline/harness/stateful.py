"""Store/lookup caches: the second interface of the harness, for caches that are stateful objects.

Most caches in production are not pair classifiers: they hold entries and answer a lookup. Such a
cache exposes `store(request, response)`, `lookup(request) -> response | None` and `reset()`, where
a `Request` carries the query, the system prompt, the earlier turns (context) and the offered tools.
It may also set `last_confidence` (its score for the latest lookup, higher = more willing to hit)
and `tier` (what decides, e.g. "embedding"); the harness reads both when present.

Each row's A request is stored with a marker response that names the request (`marker`), so the
harness knows which entry a lookup served. Where the row says the response stored for A was an error
or a refusal (`status_a`), the marker is stored as a `Response`: a str (a cache that stores and
returns strings runs unchanged) whose `status` says so; a cache that checks
`getattr(response, "status", "ok")` can refuse to keep it. Serving it is a false hit. Two protocols turn such a cache into `Pair -> Verdict`
(it sees the requests only; the scorer joins the labels afterwards):

- `isolated` (Protocol A-prime): for every row, reset, store A, look up B. A hit is the cache
  serving A's response.
- `shared`: reset once, store every row's A, then look up every B. A lookup that serves another
  row's response is a *wrong-entry hit*: on a MISS row it is a false hit (FP, as any hit there);
  on a HIT row it is not the hit the row asks for, so it counts as a miss (FN) for recall and is
  listed in the report's protocol section with the false hits. This measures retrieval and decision
  errors together, as a cache in production makes them. Rows whose A requests are identical (query,
  system prompt, context and tools) share one marker: the same request has the same answer.

The verdict's `decision_ms` is the lookup alone (a user waits for the lookup, not for the store).
Standard library only, like the rest of the harness.
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from pipeline.core.errors import CacheEvalError
from pipeline.core.hashing import canonical_json, sha256_text
from pipeline.harness.interface import STATUSES, Pair, Request, Verdict

__all__ = ["PROTOCOLS", "PAIR", "Request", "Response", "StoreFailed", "StoreLookupCache", "is_store_lookup", "marker",
           "stored_response", "ProtocolRun", "apply_served", "protocol_summary", "pair_protocol"]

PROTOCOLS = ("isolated", "shared")
PAIR = "pair"  # the protocol name of a `Pair -> Verdict` cache: it sees both requests at once


class StoreFailed(CacheEvalError):
    """The shared protocol could not fill the cache: its store() or reset() raised. `position`: the
    pair whose A was being stored (None: reset), which the scorer names by its row id (`named`)."""

    position: int | None = None

    def named(self, ids: Sequence[str]) -> "StoreFailed":
        """The same failure naming the row instead of the pair's position."""
        if self.position is None or not 0 <= self.position < len(ids):
            return self
        out = StoreFailed(str(self).replace(f"storing pair {self.position + 1}'s A", f"storing row {ids[self.position]}'s A"))
        out.position = self.position
        return out


@runtime_checkable
class StoreLookupCache(Protocol):
    """What a stateful cache exposes to the harness."""

    def store(self, request: Request, response: str) -> None: ...

    def lookup(self, request: Request) -> str | None: ...

    def reset(self) -> None: ...


def is_store_lookup(obj: Any) -> bool:
    """True when `obj` has callable store, lookup and reset (a class or an instance)."""
    return all(callable(getattr(obj, name, None)) for name in ("store", "lookup", "reset"))


def marker(request: Request) -> str:
    """The response stored for `request`: named by the request's content, so that identical
    requests (which have the same answer) store the same response. The user, tenant and tool_choice
    enter the name only when given (a request without them is named as before they existed)."""
    fields = [request.query, request.system_prompt, request.context, request.tools]
    if request.user is not None or request.tenant is not None or request.tool_choice is not None:
        fields += [request.user, request.tenant, request.tool_choice]
    return f"cacheeval-response-{sha256_text(canonical_json(fields))[:20]}"


class Response(str):
    """A stored response with a status (one of STATUSES): the text itself, so it compares, hashes
    and serialises as the plain string; `status` is "error" or "refusal" when the model's answer was
    one (the harness stores a plain str for an ok answer)."""

    status: str

    def __new__(cls, text: str, status: str = "ok") -> "Response":
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        out = super().__new__(cls, text)
        out.status = status
        return out

    def __reduce__(self) -> Any:
        return (Response, (str(self), self.status))


def stored_response(text: str, status: str | None) -> str:
    """What the harness stores: `text` itself for an ok answer (None: not given), else a Response."""
    return text if status is None or status == "ok" else Response(text, status)


class ProtocolRun:
    """A store/lookup cache run under one protocol, callable as `Pair -> Verdict` for the decision
    loop. It sees requests only, like any cache: a lookup that served something is a HIT here, and
    `last_served` says whose response the latest lookup served ("own", "other", or "none" when
    nothing was; None when the lookup raised), which the caller records by position after each call.
    The scorer, which alone holds the labels, turns a wrong-entry hit on a HIT row into a miss and
    writes the protocol section (`protocol_summary`).

    `pairs` are read once, by the shared protocol's `prepare`: a list, or a
    pipeline.harness.evaluation.PairStream (a new pass over the benchmark file), so every A is stored
    without the requests being held."""

    def __init__(self, cache: Any, protocol: str, pairs: Iterable[Pair] = ()) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        if not is_store_lookup(cache):
            raise TypeError(f"{type(cache).__name__} is not a store/lookup cache (store, lookup, reset)")
        self.cache = cache
        self.protocol = protocol
        self.pairs = pairs
        self.store_seconds = 0.0
        self.stored = 0
        self.last_served: str | None = None   # "own" | "other" | "none" of the latest lookup; None if it raised
        self._prepared = False

    def prepare(self, requests: Iterable[Request] | None = None) -> None:
        """The shared protocol stores every pair's A (or `requests`, the A requests in pair order, each a
        Request or a (Request, status of its stored response) tuple) before the first lookup (timed apart); StoreFailed when the cache raises meanwhile (naming
        the pair by its position)."""
        if self._prepared or self.protocol != "shared":
            self._prepared = True
            return
        # Marked first: a cache that fails here fails once, not again on every row.
        self._prepared = True
        t0 = time.perf_counter()
        where, position = "reset()", None
        try:
            self.cache.reset()
            items = requests if requests is not None else ((p.a, p.status_a) for p in self.pairs)
            for position, item in enumerate(items):
                a, status = item if isinstance(item, tuple) else (item, None)
                where = f"storing pair {position + 1}'s A"
                self.cache.store(a, stored_response(marker(a), status))
                self.stored += 1
        except Exception as exc:  # noqa: BLE001 - one line at the boundary, the cause chained
            first = (str(exc).strip().splitlines() or [""])[0]
            failed = StoreFailed(f"{type(self.cache).__name__} raised {type(exc).__name__}: {first} while {where} "
                                 "(shared protocol). Fix the cache's store, or run it --protocol isolated")
            failed.position = position
            raise failed from exc
        self.store_seconds = time.perf_counter() - t0

    def __call__(self, pair: Pair) -> Verdict:
        self.prepare()
        self.last_served = None
        a, b = pair.a, pair.b
        own = marker(a)
        if self.protocol == "isolated":
            t0 = time.perf_counter()
            self.cache.reset()
            self.cache.store(a, stored_response(own, pair.status_a))
            self.store_seconds += time.perf_counter() - t0
            self.stored += 1
        t0 = time.perf_counter()
        response = self.cache.lookup(b)
        ms = (time.perf_counter() - t0) * 1000.0
        confidence = getattr(self.cache, "last_confidence", None)
        self.last_served = "none" if response is None else "own" if response == own else "other"
        return Verdict(is_hit=response is not None, confidence=None if confidence is None else float(confidence),
                       decision_ms=max(ms, 1e-6), tier_used=getattr(self.cache, "tier", None))

    def meta(self) -> dict[str, Any]:
        """What the scorer needs besides the per-pair decisions: entries stored and the store time."""
        return {"name": self.protocol, "stored": self.stored, "store_seconds": self.store_seconds}


def apply_served(served: Sequence[str | None], gold: Sequence[str], hits: list, confs: list) -> None:
    """The scorer's half of a store/lookup run: a lookup that served another row's response on a HIT
    row is not the hit the row asks for, at any threshold (the score is the other entry's), so it is
    a miss with no confidence."""
    for i, s in enumerate(served):
        if s == "other" and gold[i] == "HIT":
            hits[i], confs[i] = False, None


def protocol_summary(meta: dict[str, Any], ids: Sequence[str], gold: Sequence[str],
                     served: Sequence[str | None]) -> dict[str, Any]:
    """The protocol section of a report: what was stored and what every lookup served, with the
    labels joined by the scorer (`served[i]` is None where the lookup raised)."""
    protocol, stored = meta["name"], meta["stored"]
    wrong = [i for i, s in enumerate(served) if s == "other"]
    on_hit = [ids[i] for i in wrong if gold[i] == "HIT"]
    on_miss = [ids[i] for i in wrong if gold[i] != "HIT"]
    n_served = sum(1 for s in served if s in ("own", "other"))
    own_on_miss = sum(1 for i, s in enumerate(served) if s == "own" and gold[i] != "HIT")
    false_hits = own_on_miss + len(wrong)
    text = (f"{protocol} (store/lookup cache: "
            + ("reset, store A, look up B for every row" if protocol == "isolated"
               else f"every row's A stored in one cache ({stored} entries), then every B looked up")
            + f"); {n_served} lookups served a response, {len(wrong)} of them another row's "
            f"({len(on_hit)} on HIT rows, scored FN; {len(on_miss)} on MISS rows, scored FP); "
            f"false hits {false_hits}")
    return {
        "name": protocol,
        "summary": text,
        "entries_stored": stored,
        "store_seconds": round(meta["store_seconds"], 3),
        "lookups": sum(1 for s in served if s is not None),
        "served": n_served,
        "served_own": n_served - len(wrong),
        "wrong_entry_hits": {"total": len(wrong), "on_hit_rows": len(on_hit),
                             "on_miss_rows": len(on_miss), "ids": [ids[i] for i in wrong]},
        # every response served that is not the right one: FP on MISS rows plus wrong entries on HIT rows
        "false_hits": false_hits,
        "served_precision": (n_served - false_hits) / n_served if n_served else None,
    }


def pair_protocol() -> dict[str, Any]:
    """The protocol section of a pair cache's report."""
    return {"name": PAIR, "summary": "pair (the cache decided each row from both requests: Row -> Verdict)"}
