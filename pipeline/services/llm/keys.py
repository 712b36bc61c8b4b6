"""What the LLM response cache is keyed on, and what one cached response looks like.

The key is the sha256 of the canonical JSON (sorted keys at every level, separators ``(",", ":")``)
of the semantic request: provider, resolved model snapshot, provider settings that change the
output, system prompt, messages, tools and every sampling parameter, plus ``SCHEMA``. Operational
settings (threads, batch size, timeouts) never enter the key.

Never stored: errors, empty responses, and any request whose system prompt or messages contain the
marker ``CACHEEVAL_NOCACHE`` (such a request is not looked up either: it always reaches the model).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pipeline.core.errors import InputError
from pipeline.core.hashing import canonical_json, sha256_text

SCHEMA = 1
NOCACHE_MARKER = "CACHEEVAL_NOCACHE"
# Settings that change how fast a call runs, never what it returns: kept out of the key.
OPERATIONAL_PARAMS = frozenset({"timeout", "request_timeout", "n_threads", "n_batch", "n_threads_batch"})
# Written as 0 or 0.0 by different callers; normalised to float so both give one key.
FLOAT_PARAMS = frozenset({"temperature", "top_p", "min_p", "typical_p", "presence_penalty",
                          "frequency_penalty", "repeat_penalty", "tfs_z", "mirostat_tau", "mirostat_eta"})


def build_request(provider: str, model: str, messages: Sequence[Mapping[str, Any]], *,
                  system: str | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                  settings: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None) -> dict:
    """The normalised semantic request that the key hashes (operational params removed)."""
    if not model:
        raise InputError(f"provider {provider}: no resolved model snapshot. Resolve the alias before calling")
    clean: dict[str, Any] = {}
    for name, value in (params or {}).items():
        if name in OPERATIONAL_PARAMS:
            continue
        if name == "stream" and value:
            raise InputError("stream=True cannot go through the LLM cache. Drop the stream parameter")
        if name in FLOAT_PARAMS and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        clean[name] = value
    return {
        "schema": SCHEMA,
        "provider": provider,
        "model": model,
        "settings": dict(settings or {}),
        "system": system,
        "messages": [dict(m) for m in messages],
        "tools": [dict(t) for t in tools] if tools is not None else None,
        "params": clean,
    }


def request_key(request: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a normalised request."""
    return sha256_text(canonical_json(request))


def has_nocache_marker(request: Mapping[str, Any]) -> bool:
    """True when the system prompt or any message carries CACHEEVAL_NOCACHE."""
    return NOCACHE_MARKER in canonical_json([request.get("system"), request.get("messages")])


def response_problem(raw: Any) -> str | None:
    """Why a raw chat-completion response must not be cached (error or empty), or None."""
    if not isinstance(raw, Mapping):
        return "response is not a JSON object"
    if raw.get("error"):
        return f"response carries an error: {str(raw['error'])[:200]}"
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return "response has no choices"
    if choices[0].get("finish_reason") == "error":
        return "finish_reason is error"
    if not response_text(raw).strip() and not (choices[0].get("message") or {}).get("tool_calls"):
        return "response is empty"
    return None


def response_text(raw: Mapping[str, Any]) -> str:
    """The first choice's text (chat message content, or completion text)."""
    try:
        choice = raw["choices"][0]
    except (KeyError, IndexError, TypeError):
        return ""
    message = choice.get("message") or {}
    content = message.get("content") if isinstance(message, Mapping) else None
    if content is None:
        content = choice.get("text")
    return content if isinstance(content, str) else ""


@dataclass(frozen=True)
class Entry:
    """One cached response as stored (request and response are canonical JSON text)."""

    key: str
    provider: str
    model: str
    request: str
    response: str
    usage: str
    created_at: int
    last_hit_at: int | None = None
    hit_count: int = 0

    @property
    def checksum(self) -> str:
        """The checksum stored beside the entry (see entry_checksum)."""
        return entry_checksum(self.key, self.response, self.usage)


def entry_checksum(key: str, response: str, usage: str) -> str:
    """sha256 over key, response and usage: a stored response edited or damaged fails it."""
    return sha256_text(f"{key}\x00{response}\x00{usage}")


def make_entry(request: Mapping[str, Any], raw: Mapping[str, Any], created_at: int) -> Entry:
    """An Entry for a request and its raw response (usage taken from the response)."""
    text = canonical_json(request)
    return Entry(key=sha256_text(text), provider=str(request["provider"]), model=str(request["model"]),
                 request=text, response=canonical_json(raw), usage=canonical_json(raw.get("usage") or {}),
                 created_at=created_at)
