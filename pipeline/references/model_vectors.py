"""What the store/lookup references that embed requests share (GPTCache, the vCache-style cache):
the cache root they embed under, the model loaded once for the texts the embedding cache lacks, and
how their vectors are computed, as their declared settings name it (code outside the harness)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


def embedder_identity(spec: Any) -> dict[str, str]:
    """The `embedder_code` (sha256 of the embedding modules) and `embedder_runtime` a reference
    declares in its settings, so its result-cache entries change when the vectors could."""
    from pipeline.core.hashing import file_sha256
    from pipeline.services import embedders, onnx_runtime

    return {"embedder_code": ";".join(file_sha256(m.__file__) for m in (embedders, onnx_runtime)),
            "embedder_runtime": embedders.runtime_key(spec)}


class ModelVectors:
    """Mixin: `cache_dir` (None: the configured cache root) and `_encode` (None until first needed)."""

    cache_dir: Any
    _encode: Callable[[list[str]], Any] | None

    def _root(self) -> Path:
        from pipeline.core import settings

        return settings.cache_root(self.cache_dir)

    def _loader(self, spec: Any, cache_dir: Path) -> Callable[[list[str]], Any]:
        """The model, loaded once, for the texts the embedding cache does not hold."""
        if self._encode is None:
            from pipeline.services.embedders import load_encoder

            self._encode = load_encoder(spec, cache_dir)
        return self._encode
