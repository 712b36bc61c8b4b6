"""The reference verified cache: a MiniLM recall gate, cheap structured and lexical features, and a
gradient-boosted verifier. The strongest cache in the repository, and the one the quarterly
adversarial slice attacks.

    cache = build(Path("outputs/cachebench.jsonl"))   # trains on <bench dir>/splits/train.jsonl
    verdict = cache(pair)                              # Verdict(is_hit, confidence=P(HIT)); a Pair: requests only

- Features (verified_features.py; one text in verified_text.py, word lists in verified_lexicon.py):
  only what a cache sees on any traffic (query texts, system prompts, earlier turns, offered tools);
  never the domain, subcategory, label, id, construction method or source of a row.
- Recall gate: a pair whose MiniLM cosine is below GATE is a MISS without asking the classifier
  (and gets confidence 0): the verifier only judges pairs an embedding cache would retrieve.
- Vetoes (v2): request-level rules that hold on any traffic, whatever the classifier learned from
  our generators: a pair whose system prompts differ (after normalising), whose offered tools share
  no tool, whose user, tenant or tool_choice differ, whose stored response was an error or a
  refusal, whose two requests are both creative, or both call a tool that changes state, or whose
  queries differ only by a negation added or removed ("has not shown up" / "has shown up"), is a
  MISS with confidence 0 (VETOES). Measured: with no loss of recall on dev, test or the
  leave-one-method-out table, the system traps' FHR falls from 0.838 to 0.144, the
  leave-one-method-out mean FHR from 0.159 to 0.128 (curated left out: 0.280 to 0.149), and the
  real-request polarity flips of the committed extract that the benchmark does not use are served
  0 times in 228 instead of 38.
- Verifier: scikit-learn HistGradientBoostingClassifier (CLASSIFIER: one thread, no early stopping,
  policy signals monotone non-increasing), trained on the train split only.
- Threshold: chosen on the dev split, the lowest predicted probability at which dev FHR <= MAX_FHR
  (so the highest recall the FHR budget allows).
- Deterministic: embeddings are computed one text at a time through the project's embedding cache
  (pipeline/services/embed_cache.py), cosines and probabilities are rounded to 6 decimals, the
  classifier and the folds have fixed seeds. `model_snapshot` names the embedders' weight sha256s
  and `settings` the threshold, feature version, classifier parameters and the sha256 of the train
  and dev files, so the evaluation-result cache keys on all of them.

Its full report (test split, 5-fold out of fold, transfer to a corpora build) is
verified_report.py.
Standard library at import; numpy, scikit-learn and the embedders load inside functions.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from pipeline.core.errors import InputError
from pipeline.harness.interface import Pair, Verdict
from pipeline.references import verified_features as vf
from pipeline.references.verified_text import request_view

NAME = "verified"
VERSION = "2"
EMBEDDERS = ("minilm_l6", "mpnet_base")        # names in configs/embedders.yaml: MiniLM first
GATE = 0.30                                    # MiniLM cosine below this: MISS without the classifier
MAX_FHR = 0.05
FOLDS = 5
SEED = 20251124
# Histogram gradient boosting on one thread (the same model on any machine), no early stopping (no
# random validation split); the policy signals may only lower P(HIT) (monotonic constraints).
CLASSIFIER = {"kind": "HistGradientBoostingClassifier", "max_iter": 400, "learning_rate": 0.05, "max_leaf_nodes": 15,
              "min_samples_leaf": 5, "l2_regularization": 1.0, "early_stopping": False, "random_state": SEED,
              "threads": 1, "non_increasing": list(vf.POLICY_FEATURES)}
# Groups of (feature, op, value) conditions: a pair that meets every condition of any group is a MISS
# with confidence 0, whatever the classifier says. Each holds on any traffic; none fires on a HIT row of
# the benchmark (tests/references/test_verified_cache.py).
VETOES = (
    (("system_norm_equal", "==", 0.0),),                             # another system prompt
    (("tools_any", "==", 1.0), ("tools_names_jaccard", "==", 0.0)),  # tools offered, none in common
    (("scope_differ", "==", 1.0),),                                  # another user, tenant or tool_choice
    (("stored_not_ok", "==", 1.0),),                                 # the stored response: error or refusal
    (("creative_min", ">", 0.0),),                                   # both requests creative
    (("tool_no_hit_min", ">", 0.0),),                                # both call a state-changing tool
    (("negation_toggle_only", "==", 1.0),),                          # only a negation added or removed
)


# ---- embeddings, through the project's embedding cache

class Vectors:
    """Text -> L2-normalised vector for the two embedders, from the embedding cache (a model loads
    only when a text misses, and then once per process)."""

    def __init__(self, cache_dir: str | Path | None = None, embedders: Sequence[str] = EMBEDDERS,
                 embeddings_db: str | Path | None = None) -> None:
        from pipeline.core import settings
        from pipeline.services.embed_cache import EmbeddingCache
        from pipeline.services.embedders import load_embedders_config, weights_sha256

        cfg = load_embedders_config()
        self.specs = [cfg.specs[name] for name in embedders]
        self.cache_dir = settings.cache_root(cache_dir)
        self.cache = EmbeddingCache(embeddings_db or settings.embeddings_db(self.cache_dir))
        self.weights = {s.name: weights_sha256(s) for s in self.specs}
        self._vecs: list[dict[str, Any]] = [{} for _ in self.specs]
        self._encoders: dict[str, Callable] = {}

    def _loader(self, spec, cache_dir):
        from pipeline.services.embedders import load_encoder

        if spec.name not in self._encoders:
            self._encoders[spec.name] = load_encoder(spec, cache_dir)
        return self._encoders[spec.name]

    def prepare(self, per_model: Sequence[Sequence[str]], pool: bool = False) -> None:
        """Fetch (or compute) the vectors of these texts, one list per embedder. Texts the cache
        lacks are embedded by this process's loaded model, or with `pool` on every core."""
        from pipeline.services.embed_cache import embed_texts

        for i, (spec, texts) in enumerate(zip(self.specs, per_model)):
            todo = sorted({t for t in texts if t not in self._vecs[i]})
            if todo:
                vecs, _ = embed_texts(spec, todo, self.cache, self.cache_dir, loader=None if pool else self._loader)
                self._vecs[i].update(zip(todo, vecs))

    def get(self, i: int) -> Callable[[str], Any]:
        def vec(text: str):
            if text not in self._vecs[i]:
                self.prepare([[text] if j == i else [] for j in range(len(self.specs))])
            return self._vecs[i][text]
        return vec

    def snapshot(self) -> str:
        from pipeline.services.embedders import runtime_key

        return ";".join(f"{s.name}={s.upstream}@sha256:{self.weights[s.name]}[{runtime_key(s)}]" for s in self.specs)


def embed_views(views: Iterable[Mapping[str, Any]], vectors: Vectors, pool: bool = False) -> None:
    """Every text the features of these request views read, embedded in one pass (see Vectors.prepare)."""
    first: set[str] = set()
    second: set[str] = set()
    for v in views:
        a, b = vf.texts_to_embed(v)
        first.update(a)
        second.update(b)
    vectors.prepare([sorted(first), sorted(second)], pool=pool)


def featurize(rows: Sequence[Any], vectors: Vectors) -> list[list[float]]:
    """Feature vectors of rows (Rows or dicts), embedding every needed text in one pass first."""
    views = [request_view(r) for r in rows]
    embed_views(views, vectors)
    m1, m2 = vectors.get(0), vectors.get(1)
    return [vf.pair_features(v, m1, m2) for v in views]


# ---- training and the threshold

def _gold(rows: Sequence[Any]) -> list[int]:
    return [int((r["binary_label"] if isinstance(r, Mapping) else r.binary_label) == "HIT") for r in rows]


@functools.lru_cache(maxsize=None)
def _threadpools():
    """threadpoolctl's view of the thread pools (BLAS, and the OpenMP runtime scikit-learn's trees run
    on, loaded first), found once per process: `threadpool_limits(n)` looks for every loaded library
    again each time it is entered, which cost a stream run 19 CPU-s of its lookups' predictions. A pool
    another library loads later (torch's own OpenMP) is not among them."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: F401 - loads its OpenMP runtime
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _limited():
    """The classifier's thread limit (CLASSIFIER["threads"]) while a block runs."""
    return _threadpools().limit(limits=CLASSIFIER["threads"])


def fit(X: Sequence[Sequence[float]], y: Sequence[int]):
    """The gradient-boosted verifier (CLASSIFIER) fitted on the rows of X that pass the recall gate."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    params = {k: v for k, v in CLASSIFIER.items() if k not in ("kind", "threads", "non_increasing")}
    down = set(CLASSIFIER["non_increasing"])
    clf = HistGradientBoostingClassifier(**params, monotonic_cst=[-1 if n in down else 0 for n in vf.feature_names()])
    Xa = np.asarray(X, dtype=np.float64)
    keep = Xa[:, _gate_index()] >= GATE
    with _limited():
        clf.fit(Xa[keep], np.asarray(y)[keep])
    return clf


def _gate_index() -> int:
    return vf.feature_names().index("cos_minilm")


def vetoed(X: Sequence[Sequence[float]]):
    """A boolean numpy array: which rows of X match a VETOES rule."""
    import numpy as np

    Xa = np.asarray(X, dtype=np.float64)
    names = vf.feature_names()
    out = np.zeros(len(Xa), dtype=bool)
    for group in VETOES:
        hit = np.ones(len(Xa), dtype=bool)
        for name, op, value in group:
            col = Xa[:, names.index(name)]
            hit &= (col == value) if op == "==" else (col > value)
        out |= hit
    return out


def scores(clf, X: Sequence[Sequence[float]]) -> list[float]:
    """P(HIT) per row, rounded to 6 decimals; 0.0 for a row below the recall gate or vetoed (VETOES)."""
    import numpy as np

    Xa = np.asarray(X, dtype=np.float64)
    if not len(Xa):
        return []
    with _limited():
        p = clf.predict_proba(Xa)[:, 1]
    gate = (Xa[:, _gate_index()] >= GATE) & ~vetoed(Xa)
    return [round(float(x), 6) if g else 0.0 for x, g in zip(p, gate)]


def choose_threshold(conf: Sequence[float], gold: Sequence[int], max_fhr: float = MAX_FHR) -> float:
    """The lowest confidence t such that predicting HIT for confidence >= t keeps FHR <= max_fhr
    (the highest recall within the budget). Above every confidence (never hit) when no t does."""
    neg = sum(1 for g in gold if not g)
    by_value: dict[float, list[int]] = {}
    for c, g in zip(conf, gold):
        by_value.setdefault(c, [0, 0])[0 if g else 1] += 1
    best = max(conf, default=1.0) + 1e-6
    fp = 0
    for c in sorted(by_value, reverse=True):
        fp += by_value[c][1]
        if fp > max_fhr * neg:
            break
        best = c
    return best


# ---- the cache

class VerifiedCache:
    """Callable `pair -> Verdict`: is_hit when P(HIT) >= threshold, confidence = P(HIT). It reads the
    requests only (verified_text.request_view), so a Pair is all it needs."""

    def __init__(self, clf, threshold: float, vectors: Vectors, data_sha256: Mapping[str, str]) -> None:
        self.clf = clf
        self.threshold = threshold
        self.vectors = vectors
        self.model_snapshot = vectors.snapshot()
        self.settings = {
            "name": NAME, "version": VERSION, "feature_version": vf.FEATURE_VERSION,
            "n_features": len(vf.feature_names()), "embedders": list(EMBEDDERS), "gate_minilm_cosine": GATE,
            "vetoes": [list(map(list, g)) for g in VETOES],
            "classifier": dict(CLASSIFIER), "threshold": threshold, "max_dev_fhr": MAX_FHR,
            "trained_on": dict(data_sha256),
        }

    def confidence_many(self, rows: Sequence[Any]) -> list[float]:
        return scores(self.clf, featurize(rows, self.vectors))

    def prefetch_pairs(self, pairs: Iterable[Pair]) -> None:
        """Embed every text the features of `pairs` read (requests, contexts, system prompts, the
        changed spans, tools) in one pass over every core, before they are decided one by one (the
        same vectors: each text is embedded on its own)."""
        embed_views((request_view(pair) for pair in pairs), self.vectors, pool=True)

    def prepare_pairs(self, pairs: Iterable[Pair]) -> None:
        """Embed, in this process and in one call per embedder, every text the features of `pairs`
        read that is not at hand yet (references/pair_store.py asks this before deciding a lookup's
        nearest entries: their changed spans are new texts, which one call per text would run as a
        whole fixed-shape batch each). The same vectors: each text is embedded on its own."""
        embed_views((request_view(pair) for pair in pairs), self.vectors)

    def __call__(self, pair: Pair) -> Verdict:
        view = request_view(pair)
        x = vf.pair_features(view, self.vectors.get(0), self.vectors.get(1))
        p = scores(self.clf, [x])[0]
        return Verdict(is_hit=p >= self.threshold, confidence=p, tier_used="programmatic")


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def splits_dir(bench_path: Path) -> Path:
    """The folder holding train.jsonl and dev.jsonl for a benchmark file: <bench dir>/splits/ for
    cachebench.jsonl, or the bench's own folder when the bench is a split (splits/test.jsonl), or
    <bench dir>/../splits/ for a quarterly adversarial slice (outputs/evolving/2026-Q4.jsonl), else
    the project's published splits (outputs/splits/: a pair file from elsewhere is scored by the
    verified cache trained on them). InputError naming what is missing otherwise."""
    from pipeline.core.paths import OUTPUTS

    bench_path = Path(bench_path)
    # the third: outputs/evolving/<quarter>.jsonl, a quarterly slice, is scored by the main benchmark's verified cache
    for folder in (bench_path.parent / "splits", bench_path.parent, bench_path.parent.parent / "splits",
                   OUTPUTS / "splits"):
        if (folder / "train.jsonl").is_file() and (folder / "dev.jsonl").is_file():
            return folder
    raise InputError(f"--reference verified: no train.jsonl and dev.jsonl beside {bench_path}, in "
                     f"{bench_path.parent / 'splits'} or in the project's {OUTPUTS / 'splits'}; the verified cache "
                     "trains on them. Build the benchmark (cacheeval build), or name a labelled file with --train")


def _labelled(path: Path) -> list:
    """The rows of a --train or dev file, held to the scoring contract (a pair file from anywhere)."""
    from pipeline.harness.load import load_bench

    return load_bench(path, strict=False)


def build(bench_path: Path, cache_dir: str | Path | None = None, train: Path | None = None) -> VerifiedCache:
    """Train on the benchmark's train.jsonl, choose the threshold on dev.jsonl (see splits_dir).
    `train`: a labelled pair file to train on instead; the threshold is then chosen on the dev.jsonl
    beside it, else on the published dev split."""
    if train is None:
        splits = splits_dir(bench_path)
        train_file, dev_file = splits / "train.jsonl", splits / "dev.jsonl"
        train_rows, dev = read_jsonl(train_file), read_jsonl(dev_file)
    else:
        train_file = Path(train)
        if not train_file.is_file():
            raise InputError(f"--train {train}: file not found. Name a labelled pair file (JSONL)")
        beside = train_file.parent / "dev.jsonl"
        dev_file = beside if beside.is_file() and beside.resolve() != train_file.resolve() else (
            splits_dir(bench_path) / "dev.jsonl")
        train_rows, dev = _labelled(train_file), _labelled(dev_file)
    vectors = Vectors(cache_dir)
    clf = fit(featurize(train_rows, vectors), _gold(train_rows))
    dev_conf = scores(clf, featurize(dev, vectors))
    threshold = choose_threshold(dev_conf, _gold(dev))
    data = {"train.jsonl": _sha256(train_file), "dev.jsonl": _sha256(dev_file)}
    cache = VerifiedCache(clf, threshold, vectors, data)
    cache.dev_confidence = dev_conf  # kept for the report
    return cache
