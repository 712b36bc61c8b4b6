"""Sentence-transformers members run through ONNX Runtime (`runtime: onnx` in configs/embedders.yaml).

The model's whole forward pass (transformer, pooling, normalisation modules) is exported once with
torch's TorchScript exporter into `<cache root>/models/<name>-<weights sha16>-onnx<version>/`;
afterwards only onnxruntime and tokenizers load (no torch import, ~0.5 s instead of ~14 s), and one
text costs about a third of torch's per-call time. The vectors differ from torch's in the 7th
decimal, so the runtime (exporter, opset, onnxruntime and torch versions, one intra-op thread, the
batch shape below) is part of every embedding's cache key (`runtime_id`).

Texts run in batches whose shape never depends on what else is embedded: every run has exactly
BATCH_ROWS rows (a short batch is filled with copies of its first row, whose outputs are dropped),
and a text's tokens are padded to the next multiple of PAD_TO, so its own length alone decides the
width of the batch it joins. With the shape fixed, ONNX Runtime computes each row the same way
whatever its batch-mates and its position (tests/stages/test_embed_runtime.py checks it, bit for
bit): a vector depends on its text only, never on which texts were missing from the cache or how
the work was split over workers. One weight pass serves eight texts: mpnet embeds about 1.5 times
as many texts per second as one text per run (benchmarks/build_time.py).

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
BATCH_ROWS = 8  # rows in every run
PAD_TO = 8  # a text's width: its token count rounded up to a multiple of this


def runtime_id() -> str:
    """Everything outside the weights that can change an ONNX vector (read without importing torch)."""
    versions = ";".join(f"{p}=={importlib.metadata.version(p)}" for p in ("onnxruntime", "torch", "tokenizers"))
    return f"onnx-export{EXPORT_VERSION};opset{OPSET};intra_op_threads=1;rows{BATCH_ROWS};pad{PAD_TO};{versions}"


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


def width(tokens: int, max_length: int) -> int:
    """The padded width of a text of `tokens` tokens (never past the model's maximum length)."""
    return min(-(-max(tokens, 1) // PAD_TO) * PAD_TO, max(max_length, tokens))


def load_onnx_sentence_transformer(model_dir: Path) -> Callable[[list[str]], Any]:
    """texts -> sentence embeddings (what the model's own modules output), in fixed-shape batches
    (see the module's docstring): a text's vector is the same in any list of texts."""
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
    max_length = int(meta["max_length"])
    tok.enable_truncation(max_length=max_length)

    def run(texts: list[str]):
        encoded = [tok.encode(text).ids for text in texts]
        groups: dict[int, list[int]] = {}
        for i, ids in enumerate(encoded):
            groups.setdefault(width(len(ids), max_length), []).append(i)
        out: list[Any] = [None] * len(texts)
        for w, members in sorted(groups.items()):
            for start in range(0, len(members), BATCH_ROWS):
                part = members[start:start + BATCH_ROWS]
                ids = np.zeros((BATCH_ROWS, w), dtype=np.int64)
                mask = np.zeros_like(ids)
                for row, i in enumerate(part):
                    ids[row, :len(encoded[i])] = encoded[i]
                    mask[row, :len(encoded[i])] = 1
                ids[len(part):], mask[len(part):] = ids[0], mask[0]  # filler rows: the shape stays fixed
                result = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
                for row, i in enumerate(part):
                    out[i] = result[row]
        return np.stack(out) if out else np.zeros((0, 1), dtype=np.float32)

    run.any_list = True  # type: ignore[attr-defined]  # embedders.load_encoder may pass many texts at once
    return run
