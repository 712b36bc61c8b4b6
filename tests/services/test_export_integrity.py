"""Every file of a model export is checked before use, and the embedding cache key holds the whole
export's fingerprint: an edited tokenizer.json, max_length or config is one warning line and a new
export whose vectors equal a clean export's, and vectors made from a damaged export are never read
back under the intact export's key (pipeline/services/onnx_runtime.py, embedders.model_identity)."""
import json
import shutil

import numpy as np
import pytest

from pipeline.core.hashing import file_sha256
from pipeline.services import onnx_runtime
from pipeline.services.embed_cache import EmbeddingCache, embed_texts
from pipeline.services.embedders import EmbedderSpec, load_embedders_config, load_encoder, model_identity

# Small texts; upper case (the tokenizer lower-cases) and more than 8 tokens (max_length edits bite).
TEXTS = ["Solve x + 2 = 8", "Wie spät ist es in Tokio?", "Reset the Router, then call Support about the outage",
         "the quick brown fox jumps over the lazy dog while the farmer watches from the porch"]


def _files(folder):
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _damage(export, how: str) -> None:
    if how == "tokenizer":  # the normaliser no longer lower-cases: other token ids for "Solve", "Router"
        tok = json.loads((export / "tokenizer.json").read_text(encoding="utf-8"))
        tok["normalizer"]["lowercase"] = False
        (export / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    elif how == "max_length":  # texts cut at 8 tokens
        record = json.loads((export / "export.json").read_text(encoding="utf-8"))
        record["max_length"] = 8
        (export / "export.json").write_text(json.dumps(record, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    else:  # "config": a config the export carries (its pooling)
        path = export / "1_Pooling" / "config.json"
        path.write_text(path.read_text(encoding="utf-8").replace('"pooling_mode_max_tokens": false',
                                                                   '"pooling_mode_max_tokens": true'), encoding="utf-8")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """One clean export of the real MiniLM member, its vectors for TEXTS, its identity and its files."""
    spec = load_embedders_config().specs["minilm_l6"]
    assert spec.options["runtime"] == "onnx"
    root = tmp_path_factory.mktemp("clean")
    vecs, _ = embed_texts(spec, TEXTS, EmbeddingCache(root / "e.sqlite"), root, loader=load_encoder)
    export = next((root / "models").glob("minilm_l6-*-onnx*"))
    return spec, root, vecs, model_identity(spec, root), export, _files(export)


def _copy(clean, tmp_path):
    """A cache folder holding a byte-for-byte copy of the clean export."""
    root = tmp_path / "cache"
    shutil.copytree(clean[1] / "models", root / "models")
    return root, root / "models" / clean[4].name


@pytest.mark.models
def test_the_export_is_deterministic(clean, tmp_path, capsys):
    # Two exports of one model into two cache folders: the same bytes in every file, so an intact
    # export's fingerprint (and every embedding key) is a pure function of the model and the recipe.
    from transformers.utils import logging as hf_logging

    spec, root, _, identity, export, files = clean
    assert set(files) >= {"model.onnx", "tokenizer.json", "export.json", "config.json", "1_Pooling/config.json",
                          "sentence_bert_config.json"}
    bars = hf_logging.is_progress_bar_enabled()
    capsys.readouterr()
    assert model_identity(spec, tmp_path / "other") == identity
    # and quietly: no "Loading weights" bar among a cold build's stage lines; the setting as it was
    assert "Loading weights" not in capsys.readouterr().err and hf_logging.is_progress_bar_enabled() == bars
    assert _files(next((tmp_path / "other" / "models").glob("minilm_l6-*-onnx*"))) == files
    assert identity.endswith(onnx_runtime.fingerprint(export)) and ";export:" in identity


@pytest.mark.models
@pytest.mark.parametrize("how", ["tokenizer", "max_length", "config"])  # the other damages: fake tests below
def test_a_damaged_export_is_detected_and_made_again(clean, tmp_path, capsys, how):
    spec, _, clean_vecs, identity, _, files = clean
    root, export = _copy(clean, tmp_path)
    _damage(export, how)
    if how in ("tokenizer", "max_length"):  # the damage matters: the damaged export embeds differently
        damaged = onnx_runtime.load_onnx_sentence_transformer(export)(TEXTS)
        assert not np.allclose(damaged / np.linalg.norm(damaged, axis=1, keepdims=True), clean_vecs, atol=1e-4)
    capsys.readouterr()
    vecs, _ = embed_texts(spec, TEXTS, EmbeddingCache(tmp_path / "e.sqlite"), root, loader=load_encoder)
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and export.name in warnings[0] and "exporting it again" in warnings[0], warnings
    assert np.array_equal(vecs, clean_vecs)
    assert _files(export) == files and model_identity(spec, root) == identity


@pytest.mark.models
@pytest.mark.parametrize("how", ["tokenizer", "max_length"])
def test_vectors_of_a_damaged_export_never_sit_under_the_good_key(clean, tmp_path, monkeypatch, how):
    # Suppose a damage got past the checks (they are switched off here): its vectors are stored under
    # the damaged export's fingerprint, so once the export is restored byte for byte, the build gives
    # the clean vectors again instead of reading the damaged ones back.
    spec, _, clean_vecs, identity, _, files = clean
    root, export = _copy(clean, tmp_path)
    good = {rel: (export / rel).read_bytes() for rel in files}
    _damage(export, how)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with monkeypatch.context() as m:
        m.setattr(onnx_runtime, "_problem", lambda target, recipe: None)
        damaged, _ = embed_texts(spec, TEXTS, cache, root, loader=load_encoder)
        assert model_identity(spec, root) != identity
    assert not np.allclose(damaged, clean_vecs, atol=1e-4)
    for rel, data in good.items():
        (export / rel).write_bytes(data)
    misses = cache.misses
    again, _ = embed_texts(spec, TEXTS, cache, root, loader=load_encoder)
    assert cache.misses == misses + len(TEXTS)  # nothing read back from the damaged export's vectors
    assert np.array_equal(again, clean_vecs) and model_identity(spec, root) == identity


# --- the same checks with a stand-in for torch's exporter (no model: fast)

@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    folder = tmp_path / "st"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "tokenizer.json").write_text('{"normalizer": {"lowercase": true}}')
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (folder / "model.safetensors").write_bytes(b"w" * 100)
    exports = []

    def fake_export(src, target):  # a test double for torch's exporter (the real one: tests above)
        exports.append(src)
        target.write_bytes(b"onnx-bytes")

    monkeypatch.setattr(onnx_runtime, "_export", fake_export)
    return folder, exports


@pytest.mark.parametrize("how", ["tokenizer", "max_length", "config", "stray_file", "model", "missing_config",
                                 "old_record", "recipe"])
def test_every_file_of_an_export_is_checked(fake_model, tmp_path, capsys, how):
    folder, exports = fake_model
    first, fp = onnx_runtime.verified_export("m", "ab" * 32, folder, tmp_path / "models")
    assert sorted(_files(first)) == ["1_Pooling/config.json", "export.json", "model.onnx",
                                     "sentence_bert_config.json", "tokenizer.json"]
    files = _files(first)
    assert onnx_runtime.verified_export("m", "ab" * 32, folder, tmp_path / "models") == (first, fp)
    assert len(exports) == 1 and capsys.readouterr().err == ""
    record = json.loads((first / "export.json").read_text())
    if how == "missing_config":
        (first / "1_Pooling" / "config.json").unlink()
    elif how == "old_record":  # written before every file was recorded
        (first / "export.json").write_text(json.dumps({"sha256": files["model.onnx"], "max_length": 128}))
    elif how == "recipe":  # a consistent-looking record for another source
        record["recipe"]["source"]["tokenizer.json"] = "0" * 64
        (first / "export.json").write_text(json.dumps(record))
    elif how == "model":
        (first / "model.onnx").write_bytes(b"onnx-bytez")  # same length
    else:
        if how == "tokenizer":
            (first / "tokenizer.json").write_text('{"normalizer": {"lowercase": false}}')
        elif how == "max_length":
            record["max_length"] = 512
            (first / "export.json").write_text(json.dumps(record))
        elif how == "config":
            (first / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": false}')
        else:
            (first / "stray.bin").write_bytes(b"x")
    assert onnx_runtime.verified_export("m", "ab" * 32, folder, tmp_path / "models") == (first, fp)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {first}") and err[0].endswith("exporting it again"), err
    assert len(exports) == 2 and _files(first) == files


def test_a_changed_source_is_another_export(fake_model, tmp_path):
    # The recipe holds every source file's sha256: a source config changed in place (weights hash
    # unchanged, as for a folder named by its parts) gives a new export and a new fingerprint.
    folder, exports = fake_model
    _, fp = onnx_runtime.verified_export("m", "ab" * 32, folder, tmp_path / "models")
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 64}')
    target, fp2 = onnx_runtime.verified_export("m", "ab" * 32, folder, tmp_path / "models")
    assert fp2 != fp and len(exports) == 2 and json.loads((target / "export.json").read_text())["max_length"] == 64


def test_the_identity_of_an_unpacked_zip_is_its_files(tmp_path, monkeypatch):
    import zipfile

    from pipeline.services import embedders

    site = tmp_path / "site"
    site.mkdir()
    with zipfile.ZipFile(site / "p1", "w") as zf:
        zf.writestr("model/modules.json", "[]")
        zf.writestr("model/weights.bin", b"w" * 500)
    monkeypatch.setattr(embedders, "site_packages", lambda: site)
    spec = EmbedderSpec("z", "split_zip_sentence_transformers", "z", {"parts": ["p1"], "runtime": "torch"}, "",
                        "mean", True)
    first = model_identity(spec, tmp_path / "a")
    assert first.startswith(embedders.weights_sha256(spec) + ";unpacked:")
    assert model_identity(spec, tmp_path / "b") == first  # a pure function of the parts
    weights = next((tmp_path / "a" / "models").rglob("weights.bin"))
    weights.write_bytes(b"x" * 500)
    assert model_identity(spec, tmp_path / "a") == first and weights.read_bytes() == b"w" * 500
