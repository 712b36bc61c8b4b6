"""Is there a faster ONNX Runtime batch shape for the embedders than the one the build uses?

The runtime (pipeline/services/onnx_runtime.py) runs every text in a run of BATCH_ROWS rows (filler
rows fill a short run) at its token count rounded up to a multiple of PAD_TO, so that a vector never
depends on its batch-mates. The shape is part of a vector's bits, so another shape is another runtime
(every output rebuilt); this measures whether one would be worth it. For each shape (rows, pad) the
same texts (a seeded sample of the committed benchmark's requests) run through one ONNX session, one
intra-op thread, as a pool worker runs them, grouped by padded width as the runner groups them; the
shapes take turns, twice, and the faster round counts. Printed per shape: the CPU seconds, texts per
second, the tokens computed (padding and filler rows included) against the texts' own tokens, and the
arithmetic rate: 2 x the weights of the model's matrix products x the tokens computed, per CPU second
(attention's own products left out, so a lower bound).

    .venv/bin/python benchmarks/onnx_shapes.py [--member mpnet_base] [--texts 800] [--cache-dir DIR]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = [(8, 8), (1, 1), (1, 8), (8, 1), (16, 8), (32, 8), (32, 16)]   # (rows, pad); (8, 8) is the build's


def benchmark_texts(n: int) -> list[str]:
    texts: set[str] = set()
    for line in (ROOT / "outputs" / "cachebench.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        texts.update((row["query_a"], row["query_b"]))
    ordered = sorted(texts)
    random.Random(0).shuffle(ordered)
    return ordered[:n]


def matmul_weights(model_path: Path) -> int:
    """Weights that enter a MatMul or Gemm (the per-token multiply-adds; the embedding tables are lookups)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(model_path))
    sizes = {t.name: numpy_helper.to_array(t).size for t in model.graph.initializer}
    return sum(sizes.get(i, 0) for node in model.graph.node if node.op_type in ("MatMul", "Gemm") for i in node.input)


def run_shape(sess, encoded: list[list[int]], rows: int, pad: int, max_length: int) -> tuple[float, int]:
    """CPU seconds and tokens computed for every text at this shape, grouped and filled as the
    runner does it (onnx_runtime.width, batches and run_inputs, with this shape's rows and pad)."""
    from pipeline.services.onnx_runtime import batches, run_inputs, width

    runs = batches([width(len(ids), max_length, pad) for ids in encoded], rows)
    start = time.process_time()
    for w, part in runs:
        sess.run(None, run_inputs(encoded, w, part, rows))
    return time.process_time() - start, sum(rows * w for w, _ in runs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--member", default="mpnet_base", help="an ONNX member of configs/embedders.yaml")
    p.add_argument("--texts", type=int, default=800, help="how many of the benchmark's requests (seeded sample)")
    p.add_argument("--cache-dir", type=Path, default=None, help="cache root holding (or receiving) the export")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import onnxruntime as ort

    from pipeline.core import settings
    from pipeline.services import onnx_runtime
    from pipeline.services.embedders import load_embedders_config, prepare

    spec = load_embedders_config().specs[args.member]
    if spec.options.get("runtime", "torch") != "onnx":
        raise SystemExit(f"error: {args.member} does not run on ONNX Runtime (configs/embedders.yaml runtime)")
    folder = prepare(spec, settings.cache_root(args.cache_dir))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    tok, max_length = onnx_runtime._tokenizer(folder)
    texts = benchmark_texts(args.texts)
    encoded = [tok.encode(t).ids for t in texts]
    own = sum(len(ids) for ids in encoded)
    weights = matmul_weights(folder / "model.onnx")
    run_shape(sess, encoded[:16], 8, 8, max_length)  # warm-up
    best: dict[tuple[int, int], tuple[float, int]] = {}
    for _ in range(2):
        for shape in SHAPES:
            cpu, computed = run_shape(sess, encoded, *shape, max_length)
            if shape not in best or cpu < best[shape][0]:
                best[shape] = (cpu, computed)
    print(f"{args.member}: {len(texts)} texts, {own} tokens of their own ({own / len(texts):.1f} per text), "
          f"{weights / 1e6:.1f}M weights in matrix products; one thread, best of 2 rounds")
    print(f"{'rows':>4} {'pad':>4} {'CPU s':>8} {'texts/s':>8} {'tokens computed':>16} {'x own':>6} {'GFLOP/s':>8}")
    base = best[(8, 8)][0]
    for (rows, pad), (cpu, computed) in best.items():
        note = "  (the build's shape)" if (rows, pad) == (8, 8) else f"  ({base / cpu:.2f}x the build's speed)"
        print(f"{rows:>4} {pad:>4} {cpu:>8.2f} {len(texts) / cpu:>8.1f} {computed:>16,} {computed / own:>6.2f} "
              f"{2 * weights * computed / cpu / 1e9:>8.1f}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
