"""The LLM response cache and providers. One module per job, read in this order:

- `keys`: the normalised request, its content-addressed key, what may be cached, the stored Entry;
- `stores`: where entries live (SQLite or PostgreSQL, one table) and the checks before serving;
- `stats`: what `cacheeval llm-cache stats` reports (hit rate, top prompts, USD saved);
- `cached_provider`: a provider seen through the cache, the cache modes, replay misses;
- `providers`: the local and endpoint model providers and configs/llm.yaml;
- `replay`: the committed replay file that lets a build run with no model.
"""
