"""Texts embedded on every core: worker processes, one thread each.

A vector depends only on its text and the embedder (one text per run, or the ONNX members'
fixed-shape batches; one thread), so how the work is split over workers can never change a byte
of the output; the split only changes the time.
Work goes out in small chunks from every embedder at once, so the slow members (mpnet, e5) and the
fast ones share both cores to the end. Each worker loads a model the first time it gets one of
its chunks, and keeps it. Anything the workers need prepared once (an ONNX export, an unpacked
zip) is prepared here, in the calling process, before they start.

The number of workers is the caller's (the build passes its settings' `workers`), else the
process's settings: $CACHEEVAL_WORKERS, default the number of CPUs; 1 runs in this process.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pipeline.services.embedders import EmbedderSpec, in_batch_order, load_encoder, prepare

CHUNK = 48
_ENCODERS: dict[str, Callable] = {}


def _encode(spec: EmbedderSpec, cache_dir: str, texts: list[str]):
    enc = _ENCODERS.get(spec.name)
    if enc is None:
        enc = _ENCODERS[spec.name] = load_encoder(spec, Path(cache_dir))
    return enc(texts)


class Progress:
    """One line per embedder: counts, rate and time left; redrawn in place on a terminal, printed
    at every quarter otherwise (logs stay short)."""

    def __init__(self, totals: Mapping[str, int], stream: Any = None, log: Callable[[str], None] | None = None) -> None:
        self.totals = dict(totals)
        self.done = {k: 0 for k in totals}
        self.start = time.perf_counter()
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.log = log
        self._marks = {k: 0 for k in totals}
        self._bars: dict[str, Any] = {}
        if self.tty:
            from tqdm import tqdm

            for i, (name, total) in enumerate(self.totals.items()):
                self._bars[name] = tqdm(total=total, desc=f"embed {name}", unit="text", position=i, leave=True,
                                        file=self.stream, dynamic_ncols=True)

    def update(self, name: str, n: int) -> None:
        self.done[name] += n
        if name in self._bars:
            self._bars[name].update(n)
        quarter = 4 * self.done[name] // max(1, self.totals[name])
        if quarter > self._marks[name]:
            self._marks[name] = quarter
            line = self.line(name)
            if not self.tty:
                print(line, file=self.stream, flush=True)
            if self.log is not None:
                self.log(line)

    def line(self, name: str) -> str:
        done, total = self.done[name], self.totals[name]
        elapsed = time.perf_counter() - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else float("nan")
        return f"embed {name}: {done}/{total} texts, {rate:.0f}/s, {elapsed:.0f}s elapsed, ~{left:.0f}s left"

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def encode_all(jobs: Sequence[tuple[EmbedderSpec, list[str]]], cache_dir: Path,
               on_done: Callable[[EmbedderSpec, list[str], Any], None], n_workers: int | None = None,
               progress: Progress | None = None) -> None:
    """Embed each job's texts; `on_done(spec, texts, vectors)` is called in this process as each
    chunk finishes (so the caller can store it at once: a killed build keeps what it computed)."""
    jobs = [(spec, list(texts)) for spec, texts in jobs if texts]
    if not jobs:
        return
    if not n_workers:
        from pipeline.core import settings

        n_workers = settings.resolve().workers
    # the zip extraction and the ONNX export once, before the workers start
    folders = {spec.name: prepare(spec, cache_dir) for spec, _ in jobs}
    chunks = []  # round-robin over embedders, so every model is busy until the end
    jobs = [(spec, in_batch_order(spec, folders[spec.name], texts)) for spec, texts in jobs]
    per_job = [[(spec, texts[i:i + CHUNK]) for i in range(0, len(texts), CHUNK)] for spec, texts in jobs]
    for i in range(max(len(c) for c in per_job)):
        chunks.extend(c[i] for c in per_job if i < len(c))
    if n_workers == 1 or len(chunks) == 1:
        for spec, texts in chunks:
            on_done(spec, texts, _encode(spec, str(cache_dir), texts))
            if progress:
                progress.update(spec.name, len(texts))
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")  # never fork a process holding Dagster's or torch's threads
    from pipeline.core.settings import single_thread

    with ProcessPoolExecutor(max_workers=min(n_workers, len(chunks)), mp_context=ctx, initializer=single_thread) as pool:
        pending = {pool.submit(_encode, spec, str(cache_dir), texts): (spec, texts) for spec, texts in chunks}
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    spec, texts = pending.pop(fut)
                    on_done(spec, texts, fut.result())
                    if progress:
                        progress.update(spec.name, len(texts))
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
