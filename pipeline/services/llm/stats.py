"""What `cacheeval llm-cache stats` reports, computed from the rows a store reads for it: entries and
bytes, the 7-day hit rate, the most-hit prompts, and the USD the hits saved at configured prices."""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Sequence

DAY = 86400
# The hit rate counts lookups over this many UTC days, today included.
WINDOW_DAYS = 7
TOP_PROMPTS = 10
PriceFn = Callable[[str, str], "tuple[float, float]"]  # (provider, model) → USD per 1M (input, output) tokens


def prompt_preview(request_text: str, width: int = 80) -> str:
    """The last user message of a stored request, on one line, cut to `width` characters."""
    try:
        messages = json.loads(request_text).get("messages") or []
    except (ValueError, AttributeError):
        return "(unreadable request)"
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"] or messages[-1:]
    content = users[-1].get("content", "") if users and isinstance(users[-1], dict) else ""
    if isinstance(content, list):  # OpenAI content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = " ".join(str(content).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def usd_saved(hit_rows: Iterable[Sequence[Any]], price: PriceFn | None) -> float:
    """USD not spent thanks to hits: for each (provider, model, usage JSON, hit count), the entry's
    tokens at the provider's prices, times its hits. An unreadable usage counts nothing."""
    saved = 0.0
    for provider, model, usage_text, hits in hit_rows:
        try:
            usage = json.loads(usage_text)
            tokens_in, tokens_out = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        except (ValueError, TypeError, AttributeError):
            continue
        p_in, p_out = price(provider, model) if price else (0.0, 0.0)
        saved += hits * (tokens_in * p_in + tokens_out * p_out) / 1_000_000
    return saved


def summarize(where: str, count: Sequence[Any], window: Sequence[Any], top: Iterable[Sequence[Any]],
              hit_rows: Iterable[Sequence[Any]], price: PriceFn | None) -> dict:
    """The stats dict from a store's query results: `count` is (entries, payload bytes), `window`
    (hits, misses) over the last WINDOW_DAYS days, `top` (key, hits, request JSON) rows most-hit
    first, `hit_rows` as usd_saved reads them."""
    hits, misses = int(window[0]), int(window[1])
    return {
        "store": where,
        "entries": int(count[0]),
        "bytes": int(count[1]),
        "hits_7d": hits,
        "misses_7d": misses,
        "hit_rate_7d": round(hits / (hits + misses), 4) if hits + misses else None,
        "top_prompts": [{"key": k[:12], "hits": int(h), "prompt": prompt_preview(r)} for k, h, r in top],
        "estimated_usd_saved": round(usd_saved(hit_rows, price), 6),
    }
