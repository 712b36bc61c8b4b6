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
whatever its batch-mates and its position (tests/services/test_embed_runtime.py checks it, bit for
bit): a vector depends on its text only, never on which texts were missing from the cache or how
the work was split over workers. Eight rows keep the matrix products at the core's full rate (about
95 GFLOP/s on the 2-core machines, padding and filler rows counted); of the other shapes measured, none
embeds the benchmark's texts more than a tenth faster, most are slower (benchmarks/onnx_shapes.py).

Every file of an export is checked before use. `export.json` records the recipe (the weights'
sha256, the sha256 of every file of the source folder, max_length, the runtime) and the sha256 of
every file written: model.onnx, and tokenizer.json and the source's configs (*.json), copied. The
export is used only when that record is what the source and the recipe give now, each copy still has
its source's bytes, model.onnx still has the bytes recorded, and the folder holds nothing else;
anything else (missing, truncated or edited files, an edited max_length, a stray file) is one warning
line and a new export. The export's fingerprint (the sha256 of every file in it, export.json included)
goes into every embedding's cache key (embedders.model_identity): vectors made from any other export
can never be read back under an intact export's key. The export is deterministic (two exports of one
model have the same bytes, tests/services/test_export_integrity.py checks it), so an intact export's
fingerprint is a pure function of the installed model and the recipe: a cold and a warm build key
their vectors alike.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from pipeline.core.errors import BuildError
from pipeline.core.hashing import file_sha256, stable_hash, memo_file_sha256

OPSET = 17
EXPORT_VERSION = 1  # bump when the export wrapper below changes (it is part of runtime_id, so of the outputs)
BATCH_ROWS = 8  # rows in every run
PAD_TO = 8  # a text's width: its token count rounded up to a multiple of this


@functools.lru_cache(maxsize=None)
def runtime_id() -> str:
    """Everything outside the weights that can change an ONNX vector (read without importing torch;
    memoised: installed versions cannot change inside a process)."""
    versions = ";".join(f"{p}=={importlib.metadata.version(p)}" for p in ("onnxruntime", "torch", "tokenizers"))
    return f"onnx-export{EXPORT_VERSION};opset{OPSET};intra_op_threads=1;rows{BATCH_ROWS};pad{PAD_TO};{versions}"


@contextlib.contextmanager
def _no_loading_bar() -> Iterator[None]:
    """transformers 5 draws a "Loading weights" progress bar on stderr for every model it loads: two
    bars of tensor counts in the middle of a cold build's stage lines, which say nothing a user can act
    on. Off while the export loads its model, then as it was (the setting is process-wide)."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def _export(folder: Path, target: Path) -> None:
    """Export the sentence-transformers model in `folder` (input ids + mask -> sentence embedding)."""
    import torch
    from sentence_transformers import SentenceTransformer

    with _no_loading_bar():
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


RECORD = 2  # of export.json: 2 records every file and the recipe (1: model.onnx's sha256 only)


def _source_files(folder: Path) -> dict[str, str]:
    """sha256 of every file of the model folder an export is made from, by relative path."""
    return {p.relative_to(folder).as_posix(): memo_file_sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def _recipe(folder: Path, weights: str) -> dict[str, Any]:
    """Everything that decides an export's bytes, read from the source folder without exporting."""
    config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    return {"record": RECORD, "weights": weights, "source": _source_files(folder), "runtime": runtime_id(),
            "max_length": int(config["max_seq_length"])}


def _copies(source: dict[str, str]) -> list[str]:
    """The source files an export carries beside model.onnx: tokenizer.json and the configs."""
    return sorted(rel for rel in source if rel.endswith(".json"))


def fingerprint(target: Path) -> str:
    """sha256 over the sha256 of every file in the export folder, export.json included: what the
    loader reads, byte for byte. Every file of an intact export is a pure function of the installed
    model and the recipe (the export is deterministic), and so is this. Files are hashed once per
    process per (path, size, mtime), as the weights are: a reference cache checks its export on
    every request it embeds."""
    return stable_hash("onnx-export", {p.relative_to(target).as_posix(): memo_file_sha256(p)
                                       for p in sorted(target.rglob("*")) if p.is_file()})


def _problem(target: Path, recipe: dict[str, Any]) -> str | None:
    """Why the export in `target` cannot be used for `recipe` (None: it can; every file checked)."""
    try:
        record = json.loads((target / "export.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "export.json is missing or unreadable"
    if not isinstance(record, dict) or record.get("recipe", {}) != recipe:
        return "export.json's recipe is not this model's (edited, or written by an older exporter)"
    if record.get("max_length") != recipe["max_length"]:
        return f"export.json's max_length {record.get('max_length')!r} is not the model's {recipe['max_length']}"
    files = record.get("files")
    expected = {"model.onnx", *_copies(recipe["source"])}
    if not isinstance(files, dict) or set(files) != expected:
        return "export.json does not list the files an export holds"
    present = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()} - {"export.json"}
    if present != expected:
        odd = sorted(present ^ expected)[0]
        return f"{odd} is {'missing' if odd in expected else 'not part of the export'}"
    for rel in sorted(expected):
        want = files[rel] if rel == "model.onnx" else recipe["source"][rel]
        if files[rel] != want or memo_file_sha256(target / rel) != want:
            return f"{rel} does not have the bytes it was exported with"
    return None


def verified_export(name: str, weights: str, folder: Path, models_dir: Path) -> tuple[Path, str]:
    """The folder holding this model's export (model.onnx, tokenizer.json, the configs, export.json)
    and its fingerprint, every file checked against the record (see the module's docstring); exported
    again, with one warning line when an export was there, if anything does not match."""
    target = models_dir / f"{name}-{weights[:16]}-onnx{EXPORT_VERSION}"
    if not (folder / "tokenizer.json").is_file():
        raise BuildError(f"{folder}: no tokenizer.json beside the model; `runtime: onnx` needs a fast tokenizer file "
                         "(set `runtime: torch` for this embedder in configs/embedders.yaml)")
    recipe = _recipe(folder, weights)
    problem = _problem(target, recipe) if target.is_dir() and not target.is_symlink() else "no export yet"
    if problem is None:
        return target, fingerprint(target)
    if target.exists() or target.is_symlink():
        print(f"warning: {target}: {problem}; exporting it again", file=sys.stderr)
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() and not target.is_symlink() else target.unlink()
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        _export(folder, tmp / "model.onnx")
        for rel in _copies(recipe["source"]):
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / rel, tmp / rel)
        files = {rel: file_sha256(tmp / rel) for rel in ["model.onnx", *_copies(recipe["source"])]}
        if any(files[rel] != recipe["source"][rel] for rel in files if rel != "model.onnx"):
            raise BuildError(f"{folder}: a file changed while {name} was being exported; build again")
        record = {"recipe": recipe, "files": files, "max_length": recipe["max_length"]}
        (tmp / "export.json").write_text(json.dumps(record, sort_keys=True, indent=1) + "\n", encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:  # another process finished first; its export is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    problem = _problem(target, recipe)
    if problem is not None:  # the other process's export, or a file changed under us
        raise BuildError(f"{target}: {problem} right after the export; remove the folder and build again")
    return target, fingerprint(target)


def exported_model(name: str, weights: str, folder: Path, models_dir: Path) -> Path:
    """The checked export's folder (verified_export without the fingerprint)."""
    return verified_export(name, weights, folder, models_dir)[0]


def width(tokens: int, max_length: int, pad: int = PAD_TO) -> int:
    """The padded width of a text of `tokens` tokens (never past the model's maximum length)."""
    return min(-(-max(tokens, 1) // pad) * pad, max(max_length, tokens))


def _tokenizer(model_dir: Path) -> tuple[Any, int]:
    """The export's tokenizer (no padding, truncated at the model's maximum length) and that length."""
    from tokenizers import Tokenizer

    max_length = int(json.loads((model_dir / "export.json").read_text(encoding="utf-8"))["max_length"])
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_length)
    return tok, max_length


def widths(model_dir: Path, texts: list[str]) -> list[int]:
    """The padded width each text runs at (the width of the batch it joins)."""
    tok, max_length = _tokenizer(model_dir)
    return [width(len(tok.encode(text).ids), max_length) for text in texts]


def batches(ws: list[int], rows: int = BATCH_ROWS) -> list[tuple[int, list[int]]]:
    """The fixed-shape runs one call of the runner below makes for texts of these padded widths, in
    its order: (width, the indices of the texts in the run, at most `rows`; filler fills the rest)."""
    groups: dict[int, list[int]] = {}
    for i, w in enumerate(ws):
        groups.setdefault(w, []).append(i)
    return [(w, members[start:start + rows]) for w, members in sorted(groups.items())
            for start in range(0, len(members), rows)]


def run_inputs(encoded: list[list[int]], w: int, part: list[int], rows: int = BATCH_ROWS) -> dict[str, Any]:
    """One run's input_ids and attention_mask (`rows` x `w`): the token ids of the texts `part` indexes
    in `encoded`, zero-padded, and filler rows copying the first, so the shape stays fixed."""
    import numpy as np

    ids = np.zeros((rows, w), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, i in enumerate(part):
        ids[row, :len(encoded[i])] = encoded[i]
        mask[row, :len(encoded[i])] = 1
    ids[len(part):], mask[len(part):] = ids[0], mask[0]
    return {"input_ids": ids, "attention_mask": mask}


def runs(ws: list[int]) -> dict[int, int]:
    """width -> how many of those runs (BATCH_ROWS rows each, filler included)."""
    counts: dict[int, int] = {}
    for w, _ in batches(ws):
        counts[w] = counts.get(w, 0) + 1
    return counts


def load_onnx_sentence_transformer(model_dir: Path) -> Callable[[list[str]], Any]:
    """texts -> sentence embeddings (what the model's own modules output), in fixed-shape batches
    (see the module's docstring): a text's vector is the same in any list of texts."""
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model_dir / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    tok, max_length = _tokenizer(model_dir)

    def run(texts: list[str]):
        encoded = [tok.encode(text).ids for text in texts]
        out: list[Any] = [None] * len(texts)
        for w, part in batches([width(len(ids), max_length) for ids in encoded]):
            result = sess.run(None, run_inputs(encoded, w, part))[0]
            for row, i in enumerate(part):
                out[i] = result[row]
        return np.stack(out) if out else np.zeros((0, 1), dtype=np.float32)

    run.any_list = True  # type: ignore[attr-defined]  # embedders.load_encoder may pass many texts at once
    return run
