"""What several stages and caches share: the embedders, their content-addressed cache, the worker
pool and the ONNX runtime (`embedders`, `embed_cache`, `embed_pool`, `onnx_runtime`), and the LLM
providers, response stores and replay (`llm`). Imports only pipeline.core (layer map: pipeline/README.md)."""
