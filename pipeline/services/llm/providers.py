"""LLM providers behind the response cache, and `configs/llm.yaml`.

Two kinds: ``llama_cpp`` (a local GGUF through llama-cpp-python, the optional extra ``.[llm]``,
imported only when a request actually reaches the model) and ``openai_compatible`` (any endpoint
speaking ``POST {base_url}/chat/completions``, called with urllib). Each resolves its model identity
once, when it is built at the start of a run: ``gguf-sha256:<hex>`` of the weights file, or the
endpoint's dated snapshot. An alias is never a key.

A Dagster asset gets a cached provider with ``open_llm()`` and calls
``llm.complete(messages, system=..., temperature=0.7, seed=1, max_tokens=64)``.
"""
from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pipeline.core import settings
from pipeline.core.config import ConfigError, check_keys, read_yaml
from pipeline.core.errors import InputError
from pipeline.core.hashing import memo_file_sha256
from pipeline.services.llm.cached_provider import CachedProvider, LLMError, ReplayMissError, resolve_mode
from pipeline.services.llm.models import JOIN_KEYS, gguf_path
from pipeline.services.llm.stores import CacheStore, Clock, open_store
from pipeline.core.paths import CONFIGS, PROJECT_ROOT

LLM_CONFIG = CONFIGS / "llm.yaml"
_DATED = re.compile(r"(\d{4}-\d{2}-\d{2}|\d{8}|@sha256:[0-9a-f]{64})$")
_PROVIDER_KEYS = {
    "llama_cpp": {"kind", "gguf", "gguf_package", "gguf_glob", "join", "snapshot", "chat_format", "n_ctx", "n_threads",
                  "upstream", "licence", "output_licence"},
    "openai_compatible": {"kind", "base_url", "model", "snapshot", "api_key_env", "timeout_s", "upstream", "licence",
                          "output_licence"},
}


@dataclass(frozen=True)
class LLMConfig:
    """configs/llm.yaml, parsed: the selected provider, every provider entry, cache and prices."""

    path: Path
    provider: str
    providers: Mapping[str, Mapping[str, Any]]
    mode: str
    sqlite_path: Path
    postgres_url_env: str | None
    prices: Mapping[str, Any] = field(default_factory=dict)

    def price(self, provider: str, model: str) -> tuple[float, float]:
        """USD per million (input, output) tokens for a stored entry's provider kind and model."""
        p = self.prices.get("by_model", {}).get(model) or self.prices.get("by_model", {}).get(provider) \
            or self.prices.get("default") or {}
        return float(p.get("input", 0.0)), float(p.get("output", 0.0))

    def postgres_url(self, resolved: settings.Settings | None = None) -> str | None:
        """The PostgreSQL URL from the configured environment variable, or None (use SQLite), as
        `resolved` read it (without settings: as this process's environment holds it now)."""
        return (resolved or settings.resolve()).variable(self.postgres_url_env)


def load_llm_config(path: Path = LLM_CONFIG) -> LLMConfig:
    """Parse and check configs/llm.yaml; unknown keys are errors."""
    try:
        data = read_yaml(path)
        check_keys(str(path), data, {"provider", "providers", "cache", "prices"}, {"provider", "providers", "cache"})
        providers = data["providers"] or {}
        for name in sorted(providers):
            spec = providers[name]
            kind = spec.get("kind") if isinstance(spec, Mapping) else None
            if kind not in _PROVIDER_KEYS:
                raise ConfigError(f"{path}: providers.{name}.kind is '{kind}'. Use one of: {', '.join(sorted(_PROVIDER_KEYS))}")
            check_keys(f"{path}: providers.{name}", spec, _PROVIDER_KEYS[kind], {"kind"})
            if spec.get("join") is not None:
                check_keys(f"{path}: providers.{name}.join", spec["join"], JOIN_KEYS, JOIN_KEYS)
        if data["provider"] not in providers:
            raise ConfigError(f"{path}: provider '{data['provider']}' is not under providers. "
                              f"Available: {', '.join(sorted(providers))}")
        cache = data["cache"]
        check_keys(f"{path}: cache", cache, {"mode", "sqlite_path", "postgres_url_env"}, {"sqlite_path"})
        prices = data.get("prices") or {}
        check_keys(f"{path}: prices", prices, {"default", "by_model"})
    except ConfigError as exc:
        raise InputError(str(exc).rstrip(".")) from None
    sqlite_path = Path(cache["sqlite_path"])
    return LLMConfig(path=path, provider=data["provider"], providers=providers, mode=cache.get("mode") or "both",
                     sqlite_path=sqlite_path if sqlite_path.is_absolute() else PROJECT_ROOT / sqlite_path,
                     postgres_url_env=cache.get("postgres_url_env"), prices=prices)


def gguf_identity(path: Path) -> str:
    """`gguf-sha256:<hex>` of a weights file (hashed once per process per file version)."""
    return "gguf-sha256:" + memo_file_sha256(path)


class LlamaCppProvider:
    """A local GGUF model through llama-cpp-python; the model loads on the first real call."""

    name = "llama_cpp"

    def __init__(self, gguf: Path | None, snapshot: str | None = None, chat_format: str | None = None,
                 n_ctx: int = 2048, n_threads: int | None = None, where: str = "llama_cpp") -> None:
        self.gguf = gguf if gguf is not None and gguf.is_file() else None
        if self.gguf is not None:
            actual = gguf_identity(self.gguf)
            if snapshot and snapshot != actual:
                raise InputError(f"{where}: snapshot is {snapshot} but {self.gguf} hashes to {actual}. "
                                 f"Update the snapshot or restore the pinned file")
            snapshot = actual
        if not snapshot:
            raise InputError(f"{where}: GGUF file not found ({gguf}) and no snapshot pinned. Install the model "
                             f"(bash .ci/install-llm, then cacheeval models fetch), or set snapshot to replay without it")
        self.model_snapshot = snapshot
        self.chat_format = chat_format
        self.n_ctx, self.n_threads = n_ctx, n_threads
        self._llama = None

    def key_settings(self) -> dict:
        """The chat format changes the prompt the model sees, so it enters the key."""
        return {"chat_format": self.chat_format}

    def _load(self):
        if self._llama is None:
            if self.gguf is None:
                raise LLMError(f"llama_cpp: no GGUF file for {self.model_snapshot[:40]}. Install the model (bash "
                               f".ci/install-llm, then cacheeval models fetch) or use replay mode")
            try:
                import llama_cpp  # optional extra, heavy: only when a request reaches the model
            except ImportError:
                raise LLMError("llama_cpp: llama-cpp-python is not installed. Run bash .ci/install-llm") from None
            self._llama = llama_cpp.Llama(model_path=str(self.gguf), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                          chat_format=self.chat_format, verbose=False)
        return self._llama

    def complete_raw(self, messages: list[dict], tools: list[dict] | None, params: dict) -> dict:
        """One chat completion from the local model (loaded on first use); LLMError on failure."""
        params = {k: v for k, v in params.items() if k not in ("timeout", "request_timeout")}
        try:
            return dict(self._load().create_chat_completion(messages=messages, tools=tools, **params))
        except LLMError:
            raise
        except Exception as exc:  # llama.cpp raises plain ValueError/RuntimeError for bad requests
            raise LLMError(f"llama_cpp: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}. "
                           f"Check the request parameters") from exc


class OpenAICompatibleProvider:
    """Any endpoint that speaks the OpenAI chat-completions API (llama.cpp server, vLLM, hosted)."""

    name = "openai_compatible"

    def __init__(self, base_url: str, model: str, snapshot: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, where: str = "openai_compatible") -> None:
        if not snapshot:
            if not _DATED.search(model):
                raise InputError(f"{where}: model '{model}' is an alias. Set snapshot to the dated snapshot it "
                                 f"resolves to, so that cache keys never depend on an alias")
            snapshot = model
        self.base_url = base_url.rstrip("/")
        self.model, self.model_snapshot = model, snapshot
        self.api_key, self.timeout_s = api_key, timeout_s

    def key_settings(self) -> dict:
        """Nothing beyond the dated model snapshot changes an endpoint's output."""
        return {}

    def complete_raw(self, messages: list[dict], tools: list[dict] | None, params: dict) -> dict:
        """One POST to {base_url}/chat/completions; LLMError on an HTTP, network or JSON failure."""
        timeout = float(params.pop("timeout", params.pop("request_timeout", self.timeout_s)))
        body = {"model": self.model, "messages": messages, **params}
        if tools is not None:
            body["tools"] = tools
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=json.dumps(body).encode("utf-8"),
                                     headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace").strip().splitlines()[:1]
            raise LLMError(f"{self.base_url}: HTTP {exc.code} {detail[0][:200] if detail else ''}. "
                           f"Check the endpoint and model name") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise LLMError(f"{self.base_url}: unreachable ({getattr(exc, 'reason', exc)}). Start the server "
                           f"or use replay mode") from None
        except ValueError:
            raise LLMError(f"{self.base_url}: the answer is not JSON. Check base_url points at /v1") from None
        answered = raw.get("model") if isinstance(raw, dict) else None
        if isinstance(answered, str) and _DATED.search(answered) and answered not in (self.model, self.model_snapshot):
            # the endpoint served another snapshot than the run resolved: never file it under ours
            raise LLMError(f"{self.base_url}: answered with model {answered}, but this run resolved "
                           f"{self.model_snapshot}. Update snapshot in configs/llm.yaml")
        return raw


def build_provider(config: LLMConfig, name: str | None = None, resolved: settings.Settings | None = None):
    """Build (and resolve the identity of) the named provider, or the configured one; an endpoint's
    API key is the variable its entry names, as `resolved` read it (default: this process's now)."""
    name = name or config.provider
    if name not in config.providers:
        raise InputError(f"{config.path}: no provider '{name}'. Available: {', '.join(sorted(config.providers))}")
    spec, where = config.providers[name], f"{config.path}: providers.{name}"
    if spec["kind"] == "llama_cpp":
        return LlamaCppProvider(gguf_path(spec), snapshot=spec.get("snapshot"), chat_format=spec.get("chat_format"),
                                n_ctx=int(spec.get("n_ctx") or 2048), n_threads=spec.get("n_threads"), where=where)
    return OpenAICompatibleProvider(spec["base_url"], spec["model"], snapshot=spec.get("snapshot"),
                                    api_key=(resolved or settings.resolve()).variable(spec.get("api_key_env")),
                                    timeout_s=float(spec.get("timeout_s") or 120), where=where)


def open_llm(mode: str | None = None, *, provider: str | None = None, config_path: Path = LLM_CONFIG,
             store: CacheStore | None = None, clock: Clock = time.time, pinned: bool = False,
             resolved: settings.Settings | None = None) -> CachedProvider:
    """The configured provider behind the cache; call once at run start (resolves the snapshot then).

    Mode: the argument, else $CACHEEVAL_LLM_CACHE_MODE, else `cache.mode` in configs/llm.yaml.
    Store: the one given, else PostgreSQL when $<postgres_url_env> is set, else the SQLite file.
    `.named(entry)` opens another entry of configs/llm.yaml over the same store and mode (a prompt
    section's `provider:`), resolving its snapshot then; `pinned`: this provider answers every
    section (a trial comparing models). The environment is as `resolved` read it (the caller's
    settings; default: this process's, read now).
    """
    resolved = resolved or settings.resolve()
    config = load_llm_config(config_path)
    effective = resolve_mode(mode, config.mode, resolved)
    name = provider or config.provider
    model = build_provider(config, name, resolved)  # resolves the snapshot once, before any request
    if store is None and effective != "off":
        store = open_store(config.sqlite_path, config.postgres_url(resolved), clock=clock)

    def opener(entry: str) -> CachedProvider:
        return open_llm(effective, provider=entry, config_path=config_path, store=store, clock=clock,
                        resolved=resolved)

    return CachedProvider(model, store, effective, clock=clock, entry=name, opener=None if pinned else opener)


__all__ = ["LLMConfig", "LlamaCppProvider", "OpenAICompatibleProvider", "ReplayMissError", "build_provider",
           "gguf_identity", "load_llm_config", "open_llm"]
