"""A provider seen through the response cache, and the cache modes.

Modes (argument, else ``CACHEEVAL_LLM_CACHE_MODE`` as the settings read it, else the configured default):
``off`` bypasses the cache; ``read`` serves hits and calls the model on a miss without storing;
``write`` always calls the model and stores; ``both`` serves hits and stores misses; ``replay``
serves hits only and raises ``ReplayMissError`` on a miss, so a build never needs a model.
A request carrying ``CACHEEVAL_NOCACHE`` always reaches the model (and cannot be replayed).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

from pipeline.core.errors import CacheEvalError, InputError, warn
from pipeline.core.hashing import canonical_json
from pipeline.core import settings
from pipeline.services.llm.keys import (NOCACHE_MARKER, build_request, has_nocache_marker, make_entry, request_key,
                               response_problem, response_text)
from pipeline.services.llm.stores import CacheStore, Clock

MODES = ("off", "read", "write", "both", "replay")
MODE_ENV = settings.LLM_CACHE_MODE


class LLMError(CacheEvalError):
    """The model or endpoint answered with an error; nothing was stored."""


class ReplayMissError(CacheEvalError):
    """Replay mode found no cached response for a request."""


def resolve_mode(mode: str | None = None, default: str = "both", resolved: settings.Settings | None = None) -> str:
    """The cache mode: the argument, else $CACHEEVAL_LLM_CACHE_MODE (as `resolved` read it; without
    settings, as this process's environment holds it now), else `default`."""
    from_env = None if mode is not None else (resolved or settings.resolve()).llm_cache_mode
    value = mode if mode is not None else from_env or default
    if value not in MODES:
        source = "mode argument" if mode is not None else (MODE_ENV if from_env else "default mode")
        raise InputError(f"{source}: unknown LLM cache mode '{value}'. Use one of: {', '.join(MODES)}")
    return value


@dataclass(frozen=True)
class Completion:
    """A chat completion as returned to callers, whether it came from the cache or the model."""

    text: str
    raw: Mapping[str, Any]
    usage: Mapping[str, Any]
    key: str
    cached: bool


class Provider(Protocol):
    """What a provider gives the cache: its kind, its resolved snapshot, and one raw call."""

    name: str
    model_snapshot: str

    def key_settings(self) -> dict:
        """Provider settings that change the output (e.g. chat format); they enter the key."""

    def complete_raw(self, messages: list[dict], tools: list[dict] | None, params: dict) -> dict:
        """Call the model; return an OpenAI-shaped chat-completion dict. Raise LLMError on failure."""


def wire_messages(system: str | None, messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The messages a provider is sent for a request: its system prompt first, when it has one."""
    return ([{"role": "system", "content": system}] if system is not None else []) + [dict(m) for m in messages]


class CachedProvider:
    """A provider seen through the response cache: `complete(messages, **params)` like any provider.

    A request whose system prompt or messages contain ``CACHEEVAL_NOCACHE`` bypasses the cache
    entirely (never looked up, never stored); in replay mode it raises ReplayMissError.
    """

    def __init__(self, provider: Provider, store: CacheStore | None, mode: str | None = None,
                 clock: Clock = time.time, default_mode: str = "both", *, entry: str | None = None,
                 opener: Callable[[str], "CachedProvider"] | None = None) -> None:
        self.provider = provider
        # `entry`: the provider's name in configs/llm.yaml; `opener(name)`: another entry over the same
        # store and mode (open_llm sets both), so each prompt section may choose its model (`named`)
        self.entry, self._opener, self._named = entry, opener, {}
        self.mode = resolve_mode(mode, default_mode)
        if store is None and self.mode != "off":
            raise InputError(f"LLM cache mode {self.mode} needs a store. Configure one or use mode off")
        self.store = store
        self.clock = clock
        self.name = provider.name
        self.model_snapshot = provider.model_snapshot

    def named(self, entry: str | None) -> "CachedProvider":
        """The configured provider `entry` over this one's store and mode (opened once), or this one
        when `entry` is None or its own name. A provider opened `pinned` (a trial comparing models)
        answers every section itself."""
        if entry is None or entry == self.entry or self._opener is None:
            return self
        if entry not in self._named:
            self._named[entry] = self._opener(entry)
        return self._named[entry]

    def complete(self, messages: Sequence[Mapping[str, Any]], *, system: str | None = None,
                 tools: Sequence[Mapping[str, Any]] | None = None, **params: Any) -> Completion:
        """Answer a chat request from the cache or the model, following the mode."""
        request = build_request(self.name, self.model_snapshot, messages, system=system, tools=tools,
                                settings=self.provider.key_settings(), params=params)
        try:
            key = request_key(request)
        except (TypeError, ValueError) as exc:
            raise InputError(f"LLM request is not JSON-serialisable ({exc}). Pass only strings, numbers, "
                             f"booleans, None, lists and dicts") from None
        nocache = has_nocache_marker(request)
        if self.mode == "replay":
            if nocache:
                raise ReplayMissError(f"LLM request {key[:12]} carries {NOCACHE_MARKER} and cannot be replayed. "
                                      f"Remove the marker or run with {MODE_ENV}=both and a model")
            hit = self._lookup(key, request)
            if hit is None:
                raise ReplayMissError(
                    f"LLM cache miss in replay mode for key {key[:12]} (provider {self.name}, model "
                    f"{self.model_snapshot[:40]}). Run with {MODE_ENV}=both and the model installed to record it")
            return hit
        if self.mode in ("read", "both") and not nocache:
            hit = self._lookup(key, request)
            if hit is not None:
                return hit
        wire = wire_messages(system, messages)
        raw = self.provider.complete_raw(wire, [dict(t) for t in tools] if tools is not None else None, dict(params))
        problem = response_problem(raw)
        if problem and problem != "response is empty":
            raise LLMError(f"provider {self.name} ({self.model_snapshot[:40]}): {problem}. Check the model or endpoint")
        if problem is None:
            try:
                # callers see the same JSON-normalised answer whether it is fresh or replayed
                raw = json.loads(canonical_json(raw))
            except (TypeError, ValueError) as exc:
                warn(f"provider {self.name}: response for {key[:12]} is not plain JSON ({exc}); not cached")
                nocache = True
        if problem is None and not nocache and self.mode in ("write", "both"):
            self.store.put(make_entry(request, raw, int(self.clock())))
        return Completion(response_text(raw), raw, raw.get("usage") or {}, key, cached=False)

    def _lookup(self, key: str, request: Mapping[str, Any]) -> Completion | None:
        entry = self.store.get(key, canonical_json(request))
        if entry is None:
            return None
        raw = json.loads(entry.response)
        return Completion(response_text(raw), raw, json.loads(entry.usage), key, cached=True)
