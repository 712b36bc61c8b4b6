"""How the embedding pool orders an ONNX member's texts: by characters (before) or by the padded width
each text runs at (pipeline/services/embedders.in_batch_order), on the prompts the extract embeds.

The texts are the distinct single-turn prompts of every shard of the shared corpora, as mining
prepares them (one list per shard, as each shard's prepare embeds them), or every k-th of them
(--every). For each order, each shard's list is cut into the pool's chunks (embed_pool.CHUNK) and
every chunk goes through the member's runner in this process, one thread, as a worker runs it; the
two orders run alternately per shard, so both see the same machine. Printed per order: the real
tokens, the tokens computed (filler rows and padding included), their ratio, and the CPU seconds of
the runner; then the ratio of the two CPU times. The vectors of the two orders must be the same bits
(checked: a vector depends on its text alone).

    .venv/bin/python benchmarks/embed_order.py [--datasets-dir ../shared/datasets] [--member minilm_l6] [--every 4]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shard_prompts(datasets_dir: Path, every: int) -> list[list[str]]:
    """Each shard's distinct single-turn prompts, as mining embeds them (every `every`-th)."""
    from domains.corpora import mining as M
    from domains.corpora.mining import near
    from sources.datasets_dir import DatasetsDir

    lists: list[list[str]] = []
    real_embed = near.embed
    near.embed = lambda texts, cache_dir=None: lists.append(list(texts)[::every]) or None  # collect, don't embed
    try:
        ds = DatasetsDir(datasets_dir)
        for shard in M.shards(ds):
            M.prepare_shard(ds, shard)
    finally:
        near.embed = real_embed
    return [texts for texts in lists if texts]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    ap.add_argument("--member", default="minilm_l6")
    ap.add_argument("--every", type=int, default=4, help="take every k-th prompt of a shard (1 = all)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from pipeline.core import settings
    from pipeline.services import embed_pool, onnx_runtime
    from pipeline.services.embedders import by_length, in_batch_order, load_embedders_config, load_encoder, prepare

    settings.single_thread()
    spec = load_embedders_config().specs[args.member]
    root = settings.cache_root()  # the member's export (made there once, as any build makes it)
    folder = prepare(spec, root)
    tok, _ = onnx_runtime._tokenizer(folder)
    encode = load_encoder(spec, root)
    lists = shard_prompts(args.datasets_dir, args.every)
    orders = {"characters": by_length, "width": lambda texts: in_batch_order(spec, folder, texts)}
    tokens = {k: [0, 0] for k in orders}
    cpu = Counter()
    vectors: dict[str, dict[str, bytes]] = {k: {} for k in orders}
    for texts in lists:
        width = dict(zip(texts, onnx_runtime.widths(folder, texts)))
        real = sum(len(tok.encode(t).ids) for t in texts)
        for name, order in orders.items():
            start = time.process_time()
            ordered = order(texts)  # the order's own cost (tokenizing, for the width) is timed too
            cpu[name] += time.process_time() - start
            chunks = [ordered[i:i + embed_pool.CHUNK] for i in range(0, len(ordered), embed_pool.CHUNK)]
            tokens[name][0] += real
            tokens[name][1] += sum(n * onnx_runtime.BATCH_ROWS * w for chunk in chunks
                                   for w, n in onnx_runtime.runs([width[t] for t in chunk]).items())
            start = time.process_time()
            out = [encode(chunk) for chunk in chunks]
            cpu[name] += time.process_time() - start
            for chunk, vecs in zip(chunks, out):
                vectors[name].update((t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(chunk, vecs))
    n_texts = sum(map(len, lists))
    print(f"{args.member}: {n_texts:,} prompts of {len(lists)} shards (every {args.every}), chunks of {embed_pool.CHUNK}")
    for name in orders:
        real, computed = tokens[name]
        print(f"  by {name:10s}: {real:,} real tokens, {computed:,} computed ({computed / real:.2f}x), "
              f"{cpu[name]:.1f} CPU-s")
    print(f"  CPU by width / by characters: {cpu['width'] / cpu['characters']:.2f}")
    same = vectors["width"] == vectors["characters"]
    print(f"  vectors of the two orders bit-identical: {same}")
    if not same:
        raise SystemExit("the order changed a vector")


if __name__ == "__main__":
    main()
