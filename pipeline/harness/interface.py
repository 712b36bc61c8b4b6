"""The published interface between the harness and a cache: a Pair of requests in, a Verdict out.

A cache is any callable `pair -> verdict`. It sees what a cache sees in production and nothing
else: the two requests (`Request`: query, earlier turns, system prompt, tools; optionally the user,
the tenant and the tool_choice) and an opaque key, new on every run, and the status of the stored
response to A (ok, error, refusal) when the benchmark gives one. The benchmark `Row` (with its label, expected answers, rationale, verification,
difficulty, domain, ...) stays with the scorer, which joins the labels to the decisions afterwards.
The verdict may be a `Verdict`, any object with the same attribute names (a cache written against
the published CacheEval interface runs with only its import line changed), a dict with those keys,
or a plain bool.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

# Enters every report and the build manifest; bump it when a score could change for the same input.
HARNESS_VERSION = "1"

ROW_FIELDS = (
    "id", "domain", "subcategory", "label", "binary_label", "difficulty", "query_a", "query_b",
    "context_a", "context_b", "system_prompt_a", "system_prompt_b", "tools_a", "tools_b",
    "expected_answer_a", "expected_answer_b", "rationale", "verification_method",
    "verification_payload", "construction_method", "source", "real_world_grounding",
)
_ROW_SET = frozenset(ROW_FIELDS)


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


# What a cache may read of a row: the two requests, under their row names.
REQUEST_FIELDS = ("query_a", "query_b", "context_a", "context_b", "system_prompt_a", "system_prompt_b",
                  "tools_a", "tools_b")
# Optional, since the system traps (#29 item 4): who asks (user, tenant), the tool_choice, and the
# status of the response stored for A. A benchmark row gives them as provenance-style fields after the
# 22; a Pair always has them as attributes (None when not given), and lists them in keys() only when set,
# so a cache that iterates a pair's keys sees exactly what it saw before on rows that give none.
OPTIONAL_FIELDS = ("user_a", "user_b", "tenant_a", "tenant_b", "tool_choice_a", "tool_choice_b", "status_a")
STATUSES = ("ok", "error", "refusal")   # of a stored response: only "ok" may ever be served
_REQUEST_SET = frozenset(REQUEST_FIELDS)
_PAIR_SET = frozenset(REQUEST_FIELDS + OPTIONAL_FIELDS)
SEES_REQUESTS_ONLY = ("a cache sees requests only: query_a/query_b, context_*, system_prompt_*, tools_*, user_*, "
                      "tenant_*, tool_choice_*, status_a (or pair.a / pair.b) and the opaque pair.key; labels are "
                      "joined by the scorer afterwards")


def optional_fields(row: Any) -> dict[str, Any]:
    """The OPTIONAL_FIELDS a row gives (not None): from a Row's extra fields, a mapping, or the
    attributes of a Pair or any other object."""
    extra = row if isinstance(row, Mapping) else getattr(row, "extra", None) if isinstance(row, Row) else None
    if extra is not None:
        return {k: extra[k] for k in OPTIONAL_FIELDS if extra.get(k) is not None}
    return {k: v for k in OPTIONAL_FIELDS if (v := getattr(row, k, None)) is not None}


@dataclass(frozen=True)
class Request:
    """One request as a cache sees it: the query text, the system prompt (user identity or
    instructions), the earlier turns (a list of {"role", "content"} messages) and the tool schemas;
    optionally who sends it (`user`, `tenant`: opaque ids) and the `tool_choice` ("auto", "none",
    "required" or a {"type": "function", ...} object, as chat APIs take it). None: not given.
    JSON values are kept as loaded, so a Request compares by value but may not be hashable."""

    query: str
    system_prompt: str | None = None
    context: Any = None
    tools: Any = None
    user: str | None = None
    tenant: str | None = None
    tool_choice: Any = None

    @classmethod
    def from_row(cls, row: Any, side: str) -> "Request":
        """Request A (`side="a"`) or B (`side="b"`) of a benchmark row or a Pair."""
        if side not in ("a", "b"):
            raise ValueError(f"side must be 'a' or 'b', got {side!r}")
        opt = optional_fields(row)
        return cls(getattr(row, f"query_{side}"), getattr(row, f"system_prompt_{side}"),
                   getattr(row, f"context_{side}"), getattr(row, f"tools_{side}"), opt.get(f"user_{side}"),
                   opt.get(f"tenant_{side}"), opt.get(f"tool_choice_{side}"))

    def scope(self) -> dict[str, Any]:
        """The optional fields that are given: {"user": ..., "tenant": ..., "tool_choice": ...}."""
        return {k: v for k in ("user", "tenant", "tool_choice") if (v := getattr(self, k)) is not None}

    def messages(self) -> list[dict[str, Any]]:
        """The request as chat messages: system prompt, earlier turns, then the query as the user."""
        out: list[dict[str, Any]] = []
        if self.system_prompt:
            out.append({"role": "system", "content": self.system_prompt})
        out.extend(self.context or [])
        out.append({"role": "user", "content": self.query})
        return out


class Pair:
    """What a pair cache receives: an opaque `key` (new on every run: it names no row) and the two
    requests, `a` (the earlier, cached one) and `b` (the new one). For caches written against rows,
    the request fields are also attributes under their row names (`query_a`, `context_b`, ...) and
    dict-style keys (`pair["tools_a"]`); any other row field (id, label, binary_label, expected
    answers, rationale, verification, difficulty, domain, subcategory, construction method,
    source) raises AttributeError / KeyError: the cache sees requests only. The OPTIONAL_FIELDS
    (user_*, tenant_*, tool_choice_*, status_a: the status of the response stored for A) are
    attributes too, None when the row gives none; keys() and to_dict() list them only when set."""

    __slots__ = REQUEST_FIELDS + OPTIONAL_FIELDS + ("key",)

    def __init__(self, key: str, query_a: str, query_b: str, context_a: Any = None, context_b: Any = None,
                 system_prompt_a: str | None = None, system_prompt_b: str | None = None, tools_a: Any = None,
                 tools_b: Any = None, user_a: str | None = None, user_b: str | None = None,
                 tenant_a: str | None = None, tenant_b: str | None = None, tool_choice_a: Any = None,
                 tool_choice_b: Any = None, status_a: str | None = None) -> None:
        self.key = key
        self.query_a, self.query_b = query_a, query_b
        self.context_a, self.context_b = context_a, context_b
        self.system_prompt_a, self.system_prompt_b = system_prompt_a, system_prompt_b
        self.tools_a, self.tools_b = tools_a, tools_b
        self.user_a, self.user_b, self.tenant_a, self.tenant_b = user_a, user_b, tenant_a, tenant_b
        self.tool_choice_a, self.tool_choice_b, self.status_a = tool_choice_a, tool_choice_b, status_a

    @classmethod
    def from_requests(cls, key: str, a: Request, b: Request, status_a: str | None = None) -> "Pair":
        return cls(key, a.query, b.query, a.context, b.context, a.system_prompt, b.system_prompt, a.tools, b.tools,
                   a.user, b.user, a.tenant, b.tenant, a.tool_choice, b.tool_choice, status_a)

    @classmethod
    def of(cls, row: Any, key: str) -> "Pair":
        """The requests of a Row (or any object with the request fields), under `key`."""
        return cls(key, row.query_a, row.query_b, row.context_a, row.context_b, row.system_prompt_a,
                   row.system_prompt_b, row.tools_a, row.tools_b, **optional_fields(row))

    @property
    def a(self) -> Request:
        return Request(self.query_a, self.system_prompt_a, self.context_a, self.tools_a, self.user_a, self.tenant_a,
                       self.tool_choice_a)

    @property
    def b(self) -> Request:
        return Request(self.query_b, self.system_prompt_b, self.context_b, self.tools_b, self.user_b, self.tenant_b,
                       self.tool_choice_b)

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not slots: every row field but the requests
        raise AttributeError(f"Pair has no attribute {name!r}: {SEES_REQUESTS_ONLY}")

    def __getitem__(self, name: str) -> Any:
        if name in _PAIR_SET:
            return getattr(self, name)
        raise KeyError(f"{name!r}: {SEES_REQUESTS_ONLY}")

    def get(self, name: str, default: Any = None) -> Any:
        """Dict-style get of a request field; any other name raises KeyError (never a silent default)."""
        return self[name]

    def keys(self) -> tuple[str, ...]:
        """The request fields, then the optional ones that are set."""
        return REQUEST_FIELDS + tuple(k for k in OPTIONAL_FIELDS if getattr(self, k) is not None)

    def __contains__(self, name: object) -> bool:
        return name in _REQUEST_SET or (name in _PAIR_SET and getattr(self, name) is not None)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """The key and the request fields (the optional ones when set): what the harness sends to a
        cache in another process."""
        return {"key": self.key, **{k: getattr(self, k) for k in self.keys()}}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pair) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # JSON values inside: compared by value, not hashable

    def __repr__(self) -> str:
        return f"Pair(key={self.key!r}, query_a={self.query_a!r}, query_b={self.query_b!r})"


class VerdictError(TypeError):
    """A cache returned something that is not a verdict."""
