"""The LLM response cache and providers: request keys, stores (SQLite, PostgreSQL), stats, the
cached provider with deterministic replay, local model providers, `cacheeval llm-cache`."""
