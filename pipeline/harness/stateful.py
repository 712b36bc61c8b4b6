"""Store/lookup caches: the second interface of the harness, for caches that are stateful objects.

Most caches in production are not pair classifiers: they hold entries and answer a lookup. Such a
cache exposes `store(request, response)`, `lookup(request) -> response | None` and `reset()`, where
a `Request` carries the query, the system prompt, the earlier turns (context) and the offered tools.
It may also set `last_confidence` (its score for the latest lookup, higher = more willing to hit)
and `tier` (what decides, e.g. "embedding"); the harness reads both when present.

Each row's A request is stored with a marker response that names the request (`marker`), so the
harness knows which entry a lookup served. Two protocols turn such a cache into `Row -> Verdict`:

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
from dataclasses import dataclass
from typing import Any, Iterable, Protocol, runtime_checkable

from pipeline.core.errors import CacheEvalError
from pipeline.core.hashing import canonical_json, sha256_text
from pipeline.harness.interface import Row, Verdict

PROTOCOLS = ("isolated", "shared")
PAIR = "pair"  # the protocol name of a `Row -> Verdict` cache: it sees both requests at once


class StoreFailed(CacheEvalError):
    """The shared protocol could not fill the cache: its store() or reset() raised."""


@dataclass(frozen=True)
class Request:
    """One request as a cache sees it: the query text, the system prompt (user identity or
    instructions), the earlier turns (a list of {"role", "content"} messages) and the tool schemas.
    JSON values are kept as loaded, so a Request compares by value but may not be hashable."""

    query: str
    system_prompt: str | None = None
    context: Any = None
    tools: Any = None

    @classmethod
    def from_row(cls, row: Row, side: str) -> "Request":
        """Request A (`side="a"`) or B (`side="b"`) of a benchmark row."""
        if side not in ("a", "b"):
            raise ValueError(f"side must be 'a' or 'b', got {side!r}")
        return cls(getattr(row, f"query_{side}"), getattr(row, f"system_prompt_{side}"),
                   getattr(row, f"context_{side}"), getattr(row, f"tools_{side}"))

    def messages(self) -> list[dict[str, Any]]:
        """The request as chat messages: system prompt, earlier turns, then the query as the user."""
        out: list[dict[str, Any]] = []
        if self.system_prompt:
            out.append({"role": "system", "content": self.system_prompt})
        out.extend(self.context or [])
        out.append({"role": "user", "content": self.query})
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
    requests (which have the same answer) store the same response."""
    body = canonical_json([request.query, request.system_prompt, request.context, request.tools])
    return f"cacheeval-response-{sha256_text(body)[:20]}"


class ProtocolRun:
    """A store/lookup cache run under one protocol, callable as `Row -> Verdict` for `evaluate`.

    It counts what every lookup served (its own row's response, another row's, or nothing);
    `summary()` is the report's protocol section."""

    def __init__(self, cache: Any, protocol: str, rows: Iterable[Row] = ()) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        if not is_store_lookup(cache):
            raise TypeError(f"{type(cache).__name__} is not a store/lookup cache (store, lookup, reset)")
        self.cache = cache
        self.protocol = protocol
        self.rows = list(rows)
        self.store_seconds = 0.0
        self.stored = 0
        self.served: dict[str, str] = {}   # row id -> "own" | "other"
        self.wrong_entry: list[str] = []   # row ids whose lookup served another row's response
        self._gold: dict[str, str] = {}
        self._prepared = False

    def prepare(self) -> None:
        """The shared protocol stores every row's A before the first lookup (timed apart);
        StoreFailed when the cache raises meanwhile."""
        if self._prepared or self.protocol != "shared":
            self._prepared = True
            return
        # Marked first: a cache that fails here fails once, not again on every row.
        self._prepared = True
        t0 = time.perf_counter()
        row_id = None
        try:
            self.cache.reset()
            for row in self.rows:
                row_id = row.id
                a = Request.from_row(row, "a")
                self.cache.store(a, marker(a))
                self.stored += 1
        except Exception as exc:  # noqa: BLE001 - one line at the boundary, the cause chained
            where = f"storing row {row_id}'s A" if row_id else "reset()"
            first = (str(exc).strip().splitlines() or [""])[0]
            raise StoreFailed(f"{type(self.cache).__name__} raised {type(exc).__name__}: {first} while {where} "
                              "(shared protocol). Fix the cache's store, or run it --protocol isolated") from exc
        self.store_seconds = time.perf_counter() - t0

    def __call__(self, row: Row) -> Verdict:
        self.prepare()
        a, b = Request.from_row(row, "a"), Request.from_row(row, "b")
        own = marker(a)
        if self.protocol == "isolated":
            t0 = time.perf_counter()
            self.cache.reset()
            self.cache.store(a, own)
            self.store_seconds += time.perf_counter() - t0
            self.stored += 1
        t0 = time.perf_counter()
        response = self.cache.lookup(b)
        ms = (time.perf_counter() - t0) * 1000.0
        confidence = getattr(self.cache, "last_confidence", None)
        self._gold[row.id] = row.binary_label
        is_hit = response is not None
        if is_hit:
            self.served[row.id] = "own" if response == own else "other"
            if response != own:
                self.wrong_entry.append(row.id)
                if row.binary_label == "HIT":
                    # Served someone else's answer: not the hit this row asks for, at any threshold
                    # (the score is the other entry's), so no confidence either.
                    is_hit, confidence = False, None
        return Verdict(is_hit=is_hit, confidence=None if confidence is None else float(confidence),
                       decision_ms=max(ms, 1e-6), tier_used=getattr(self.cache, "tier", None))

    def summary(self) -> dict[str, Any]:
        """The protocol section of a report: what was stored and what every lookup served."""
        on_hit = [i for i in self.wrong_entry if self._gold.get(i) == "HIT"]
        on_miss = [i for i in self.wrong_entry if self._gold.get(i) != "HIT"]
        own_on_miss = sum(1 for i, s in self.served.items() if s == "own" and self._gold.get(i) != "HIT")
        served = len(self.served)
        false_hits = own_on_miss + len(self.wrong_entry)
        text = (f"{self.protocol} (store/lookup cache: "
                + ("reset, store A, look up B for every row" if self.protocol == "isolated"
                   else f"every row's A stored in one cache ({self.stored} entries), then every B looked up")
                + f"); {served} lookups served a response, {len(self.wrong_entry)} of them another row's "
                f"({len(on_hit)} on HIT rows, scored FN; {len(on_miss)} on MISS rows, scored FP); "
                f"false hits {false_hits}")
        return {
            "name": self.protocol,
            "summary": text,
            "entries_stored": self.stored,
            "store_seconds": round(self.store_seconds, 3),
            "lookups": len(self._gold),
            "served": served,
            "served_own": served - len(self.wrong_entry),
            "wrong_entry_hits": {"total": len(self.wrong_entry), "on_hit_rows": len(on_hit),
                                 "on_miss_rows": len(on_miss), "ids": list(self.wrong_entry)},
            # every response served that is not the right one: FP on MISS rows plus wrong entries on HIT rows
            "false_hits": false_hits,
            "served_precision": (served - false_hits) / served if served else None,
        }


def pair_protocol() -> dict[str, Any]:
    """The protocol section of a pair cache's report."""
    return {"name": PAIR, "summary": "pair (the cache decided each row from both requests: Row -> Verdict)"}
