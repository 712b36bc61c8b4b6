"""Sentence-transformers members run through ONNX Runtime (`runtime: onnx` in configs/embedders.yaml).

The model's whole forward pass (transformer, pooling, normalisation modules) is exported once with
torch's TorchScript exporter into `<cache root>/models/<name>-<weights sha16>-onnx<version>/`;
afterwards only onnxruntime and tokenizers load (no torch import, ~0.5 s instead of ~14 s), and one
text costs about a third of torch's per-call time. The vectors differ from torch's in the 7th
decimal, so the runtime (exporter, opset, onnxruntime and torch versions, one intra-op thread) is
part of every embedding's cache key (`runtime_id`). A text is always run alone on one thread: its
vector never depends on what else is embedded, nor on how many workers share the work.

The exported file is trusted only when its sha256 matches the one recorded beside it when it was
written; anything else (missing, truncated, edited) is exported again.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from pipeline.core.errors import BuildError
from pipeline.core.hashing import file_sha256

OPSET = 17
EXPORT_VERSION = 1  # bump when the export wrapper below changes


def runtime_id() -> str:
    """Everything outside the weights that can change an ONNX vector (read without importing torch)."""
    versions = ";".join(f"{p}=={importlib.metadata.version(p)}" for p in ("onnxruntime", "torch", "tokenizers"))
    return f"onnx-export{EXPORT_VERSION};opset{OPSET};intra_op_threads=1;{versions}"


def _export(folder: Path, target: Path) -> None:
    """Export the sentence-transformers model in `folder` (input ids + mask -> sentence embedding)."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")

    class Forward(torch.nn.Module):
        def __init__(self, st: Any) -> None:
            super().__init__()
            self.st = st

        def forward(self, input_ids, attention_mask):  # noqa: ANN001 - traced tensors
            return self.st({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]

    sample = model.tokenizer(["an example sentence to trace"], return_tensors="pt")
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes about constant shapes checks: the mask always matches
        torch.onnx.export(Forward(model).eval(), (sample["input_ids"], sample["attention_mask"]), str(target),
                          input_names=["input_ids", "attention_mask"], output_names=["sentence_embedding"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                        "attention_mask": {0: "batch", 1: "tokens"},
                                        "sentence_embedding": {0: "batch"}},
                          opset_version=OPSET, dynamo=False)


def exported_model(name: str, weights: str, folder: Path, models_dir: Path) -> Path:
    """The folder holding model.onnx, tokenizer.json and max_length for this model, exported if
    absent or not matching its recorded sha256."""
    target = models_dir / f"{name}-{weights[:16]}-onnx{EXPORT_VERSION}"
    record = target / "export.json"
    try:
        meta = json.loads(record.read_text(encoding="utf-8"))
        if file_sha256(target / "model.onnx") == meta["sha256"] and (target / "tokenizer.json").is_file():
            return target
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if target.exists() or target.is_symlink():
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() and not target.is_symlink() else target.unlink()
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        if not (folder / "tokenizer.json").is_file():
            raise BuildError(f"{folder}: no tokenizer.json beside the model; `runtime: onnx` needs a fast tokenizer file "
                             "(set `runtime: torch` for this embedder in configs/embedders.yaml)")
        _export(folder, tmp / "model.onnx")
        shutil.copyfile(folder / "tokenizer.json", tmp / "tokenizer.json")
        max_length = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
        (tmp / "export.json").write_text(json.dumps({"sha256": file_sha256(tmp / "model.onnx"), "weights": weights,
                                                     "max_length": int(max_length), "runtime": runtime_id()},
                                                    sort_keys=True, indent=1) + "\n", encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:  # another process finished first; its export is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load_onnx_sentence_transformer(model_dir: Path) -> Callable[[list[str]], Any]:
    """texts -> sentence embeddings (what the model's own modules output), one text per run."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    meta = json.loads((model_dir / "export.json").read_text(encoding="utf-8"))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model_dir / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=int(meta["max_length"]))

    def run(texts: list[str]):
        out = []
        for text in texts:
            ids = np.asarray([tok.encode(text).ids], dtype=np.int64)
            out.append(sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0])
        return np.stack(out)

    return run
