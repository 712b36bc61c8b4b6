"""The embedding cache: keyed on the model's file hash, so a changed model never reuses vectors."""
import numpy as np
import pytest

from pipeline.services.embed_cache import EmbeddingCache, embed_texts
from pipeline.services.embedders import EmbedderSpec


def fake_loader(calls):
    # A test double at the model boundary: deterministic vectors from text length.
    def load(spec, cache_dir):
        def enc(texts):
            calls.append(list(texts))
            v = np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)  # as the real encoders: L2-normalised
        return enc
    return load


def spec_for(folder) -> EmbedderSpec:
    return EmbedderSpec("t", "sentence_transformers", "t", {"path": str(folder)}, "", "mean", True)


def model_and_cache(tmp_path):
    """A model folder whose one weights file reads v1, and an empty embedding cache beside it."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"v1")
    return model, EmbeddingCache(tmp_path / "emb.sqlite")


def test_hit_then_miss_when_weights_change(tmp_path):
    model, cache = model_and_cache(tmp_path)
    calls = []
    v1, w1 = embed_texts(spec_for(model), ["a", "bb"], cache, tmp_path, loader=fake_loader(calls))
    v2, w2 = embed_texts(spec_for(model), ["bb", "a"], cache, tmp_path, loader=fake_loader(calls))
    assert len(calls) == 1 and w1 == w2 and np.array_equal(v1[0], v2[1])
    (model / "weights.bin").write_bytes(b"v2-changed")
    _, w3 = embed_texts(spec_for(model), ["a"], cache, tmp_path, loader=fake_loader(calls))
    assert w3 != w1 and len(calls) == 2


def test_corrupt_entry_is_recomputed(tmp_path):
    model, cache = model_and_cache(tmp_path)
    calls = []
    embed_texts(spec_for(model), ["a"], cache, tmp_path, loader=fake_loader(calls))
    cache.db.execute("UPDATE embeddings SET vec = ?", (b"\x00\x01",))
    cache.db.commit()
    vec, _ = embed_texts(spec_for(model), ["a"], cache, tmp_path, loader=fake_loader(calls))
    assert len(calls) == 2 and vec.shape == (1, 3)


@pytest.mark.parametrize("overwrite", ["zeros", "random_unit", "another_entry", "long", "nan"])
def test_a_vector_overwritten_in_place_is_recomputed(tmp_path, overwrite, capsys):
    model, cache = model_and_cache(tmp_path)
    calls = []
    first, _ = embed_texts(spec_for(model), ["a", "bbb"], cache, tmp_path, loader=fake_loader(calls))
    rng = np.random.default_rng(0)
    unit = rng.normal(size=3).astype(np.float32)
    blob = {"zeros": np.zeros(3, np.float32).tobytes(), "random_unit": (unit / np.linalg.norm(unit)).tobytes(),
            "another_entry": first[1].tobytes(), "long": np.ones(4, np.float32).tobytes(),
            "nan": np.array([np.nan, 0, 0], np.float32).tobytes()}[overwrite]
    key = next(k for k, v in cache.db.execute("SELECT key, vec FROM embeddings") if v != first[1].tobytes())
    cache.db.execute("UPDATE embeddings SET vec = ? WHERE key = ?", (blob, key))
    cache.db.commit()
    again, _ = embed_texts(spec_for(model), ["a", "bbb"], cache, tmp_path, loader=fake_loader(calls))
    assert len(calls) == 2 and len(calls[1]) == 1 and np.array_equal(again, first)
    assert "1 embedding entry failed verification" in capsys.readouterr().err


@pytest.mark.models
@pytest.mark.parametrize("name", ["minilm_l6", "e5_small_q4", "paraphrase_minilm_l3", "use_multilingual_v3"])
def test_real_embedder_vectors_do_not_depend_on_batch_mates(name, tmp_path):
    # Warm and cold caches must give the same bytes: a text's vector may not depend on which
    # other texts were embedded with it.
    from pipeline.services.embedders import load_embedders_config, load_encoder

    enc = load_encoder(load_embedders_config().specs[name], tmp_path)
    together = enc(["Solve x + 2 = 8", "A much longer request about sorting a list of integers in Python, please."])
    alone = enc(["A much longer request about sorting a list of integers in Python, please."])
    assert np.array_equal(together[1], alone[0])
