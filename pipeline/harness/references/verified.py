"""The reference verified cache: a MiniLM recall gate, cheap structured and lexical features, and a
gradient-boosted verifier. The strongest cache in the repository, and the one the quarterly
adversarial slice attacks.

    cache = build(Path("outputs/cachebench.jsonl"))   # trains on <bench dir>/splits/train.jsonl
    verdict = cache(row)                               # Verdict(is_hit, confidence=P(HIT))

- Features (verified_features.py): only what a cache sees on any traffic (query texts, system
  prompts, earlier turns, offered tools); never the domain, subcategory, label, id, construction
  method or source of a row.
- Recall gate: a pair whose MiniLM cosine is below GATE is a MISS without asking the classifier
  (and gets confidence 0): the verifier only judges pairs an embedding cache would retrieve.
- Verifier: scikit-learn HistGradientBoostingClassifier (CLASSIFIER: one thread, no early stopping,
  policy signals monotone non-increasing), trained on the train split only.
- Threshold: chosen on the dev split, the lowest predicted probability at which dev FHR <= MAX_FHR
  (so the highest recall the FHR budget allows).
- Deterministic: embeddings are computed one text at a time through the project's embedding cache
  (pipeline/stages/embed_cache.py), cosines and probabilities are rounded to 6 decimals, the
  classifier and the folds have fixed seeds. `model_snapshot` names the embedders' weight sha256s
  and `settings` the threshold, feature version, classifier parameters and the sha256 of the train
  and dev files, so the evaluation-result cache keys on all of them.

`full_report` scores it on the test split (labels joined), as 5-fold out-of-fold predictions over
every row, and on the rows a corpora build adds (transfer); `report_markdown` renders that dict.
Standard library at import; numpy, scikit-learn and the embedders load inside functions.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pipeline.core.errors import InputError
from pipeline.harness.interface import Row, Verdict
from pipeline.harness.references import verified_features as vf

NAME = "verified"
VERSION = "1"
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


# ---- embeddings, through the project's embedding cache

class Vectors:
    """Text -> L2-normalised vector for the two embedders, from the embedding cache (a model loads
    only when a text misses, and then once per process)."""

    def __init__(self, cache_dir: str | Path | None = None, embedders: Sequence[str] = EMBEDDERS,
                 embeddings_db: str | Path | None = None) -> None:
        from pipeline.core import settings
        from pipeline.stages.embed_cache import EmbeddingCache
        from pipeline.stages.embedders import load_embedders_config, weights_sha256

        cfg = load_embedders_config()
        self.specs = [cfg.specs[name] for name in embedders]
        self.cache_dir = settings.cache_root(cache_dir)
        self.cache = EmbeddingCache(embeddings_db or settings.embeddings_db(self.cache_dir))
        self.weights = {s.name: weights_sha256(s) for s in self.specs}
        self._vecs: list[dict[str, Any]] = [{} for _ in self.specs]
        self._encoders: dict[str, Callable] = {}

    def _loader(self, spec, cache_dir):
        from pipeline.stages.embedders import load_encoder

        if spec.name not in self._encoders:
            self._encoders[spec.name] = load_encoder(spec, cache_dir)
        return self._encoders[spec.name]

    def prepare(self, per_model: Sequence[Sequence[str]]) -> None:
        """Fetch (or compute) the vectors of these texts, one list per embedder."""
        from pipeline.stages.embed_cache import embed_texts

        for i, (spec, texts) in enumerate(zip(self.specs, per_model)):
            todo = sorted({t for t in texts if t not in self._vecs[i]})
            if todo:
                vecs, _ = embed_texts(spec, todo, self.cache, self.cache_dir, loader=self._loader)
                self._vecs[i].update(zip(todo, vecs))

    def get(self, i: int) -> Callable[[str], Any]:
        def vec(text: str):
            if text not in self._vecs[i]:
                self.prepare([[text] if j == i else [] for j in range(len(self.specs))])
            return self._vecs[i][text]
        return vec

    def snapshot(self) -> str:
        return ";".join(f"{s.name}={s.upstream}@sha256:{self.weights[s.name]}" for s in self.specs)


def featurize(rows: Sequence[Any], vectors: Vectors) -> list[list[float]]:
    """Feature vectors of rows (Rows or dicts), embedding every needed text in one pass first."""
    views = [vf.request_view(r) for r in rows]
    first: set[str] = set()
    second: set[str] = set()
    for v in views:
        a, b = vf.texts_to_embed(v)
        first.update(a)
        second.update(b)
    vectors.prepare([sorted(first), sorted(second)])
    m1, m2 = vectors.get(0), vectors.get(1)
    return [vf.pair_features(v, m1, m2) for v in views]


# ---- training and the threshold

def _gold(rows: Sequence[Any]) -> list[int]:
    return [int((r["binary_label"] if isinstance(r, Mapping) else r.binary_label) == "HIT") for r in rows]


def fit(X: Sequence[Sequence[float]], y: Sequence[int]):
    """The gradient-boosted verifier (CLASSIFIER) fitted on the rows of X that pass the recall gate."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    params = {k: v for k, v in CLASSIFIER.items() if k not in ("kind", "threads", "non_increasing")}
    down = set(CLASSIFIER["non_increasing"])
    clf = HistGradientBoostingClassifier(**params, monotonic_cst=[-1 if n in down else 0 for n in vf.feature_names()])
    Xa = np.asarray(X, dtype=np.float64)
    keep = Xa[:, _gate_index()] >= GATE
    with threadpool_limits(CLASSIFIER["threads"]):
        clf.fit(Xa[keep], np.asarray(y)[keep])
    return clf


def _gate_index() -> int:
    return vf.feature_names().index("cos_minilm")


def scores(clf, X: Sequence[Sequence[float]]) -> list[float]:
    """P(HIT) per row, rounded to 6 decimals; 0.0 for a row below the recall gate."""
    import numpy as np

    from threadpoolctl import threadpool_limits

    Xa = np.asarray(X, dtype=np.float64)
    if not len(Xa):
        return []
    with threadpool_limits(CLASSIFIER["threads"]):
        p = clf.predict_proba(Xa)[:, 1]
    gate = Xa[:, _gate_index()] >= GATE
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
    """Callable `row -> Verdict`: is_hit when P(HIT) >= threshold, confidence = P(HIT)."""

    def __init__(self, clf, threshold: float, vectors: Vectors, data_sha256: Mapping[str, str]) -> None:
        self.clf = clf
        self.threshold = threshold
        self.vectors = vectors
        self.model_snapshot = vectors.snapshot()
        self.settings = {
            "name": NAME, "version": VERSION, "feature_version": vf.FEATURE_VERSION,
            "n_features": len(vf.feature_names()), "embedders": list(EMBEDDERS), "gate_minilm_cosine": GATE,
            "classifier": dict(CLASSIFIER), "threshold": threshold, "max_dev_fhr": MAX_FHR,
            "trained_on": dict(data_sha256),
        }

    def confidence_many(self, rows: Sequence[Any]) -> list[float]:
        return scores(self.clf, featurize(rows, self.vectors))

    def __call__(self, row: Row) -> Verdict:
        view = vf.request_view(row)
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
    cachebench.jsonl, or the bench's own folder when the bench is a split (splits/test.jsonl).
    InputError naming what is missing otherwise."""
    bench_path = Path(bench_path)
    for folder in (bench_path.parent / "splits", bench_path.parent):
        if (folder / "train.jsonl").is_file() and (folder / "dev.jsonl").is_file():
            return folder
    raise InputError(f"--reference verified: no train.jsonl and dev.jsonl beside {bench_path} or in "
                     f"{bench_path.parent / 'splits'}; the verified cache trains on them. Score a built benchmark "
                     "(outputs/cachebench.jsonl or outputs/splits/test.jsonl)")


def build(bench_path: Path, cache_dir: str | Path | None = None) -> VerifiedCache:
    """Train on the benchmark's train.jsonl, choose the threshold on dev.jsonl (see splits_dir)."""
    splits = splits_dir(bench_path)
    train, dev = read_jsonl(splits / "train.jsonl"), read_jsonl(splits / "dev.jsonl")
    vectors = Vectors(cache_dir)
    clf = fit(featurize(train, vectors), _gold(train))
    dev_conf = scores(clf, featurize(dev, vectors))
    threshold = choose_threshold(dev_conf, _gold(dev))
    data = {"train.jsonl": _sha256(splits / "train.jsonl"), "dev.jsonl": _sha256(splits / "dev.jsonl")}
    cache = VerifiedCache(clf, threshold, vectors, data)
    cache.dev_confidence = dev_conf  # kept for the report
    return cache


# ---- out of fold

def out_of_fold(X: Sequence[Sequence[float]], y: Sequence[int], strata: Sequence[str]) -> dict[str, Any]:
    """5-fold stratified out-of-fold P(HIT) for every row, with two thresholds per fold: `pooled`
    (one threshold over all out-of-fold scores, as the specification's reference did) and
    `nested` (each fold's threshold from an inner 4-fold out-of-fold pass over its own training
    rows: no row's score ever helped choose its own threshold)."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold

    Xa, ya = np.asarray(X, dtype=np.float64), np.asarray(y)
    conf = [0.0] * len(ya)
    nested_hit = [False] * len(ya)
    fold_thresholds = []
    outer = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    for train_idx, test_idx in outer.split(Xa, list(strata)):
        clf = fit(Xa[train_idx], ya[train_idx])
        test_conf = scores(clf, Xa[test_idx])
        inner_conf = [0.0] * len(train_idx)
        inner = StratifiedKFold(n_splits=FOLDS - 1, shuffle=True, random_state=SEED)
        for itr, ite in inner.split(Xa[train_idx], [strata[i] for i in train_idx]):
            iclf = fit(Xa[train_idx][itr], ya[train_idx][itr])
            for j, c in zip(ite, scores(iclf, Xa[train_idx][ite])):
                inner_conf[j] = c
        t = choose_threshold(inner_conf, ya[train_idx].tolist())
        fold_thresholds.append(t)
        for i, c in zip(test_idx, test_conf):
            conf[i] = c
            nested_hit[i] = c >= t
    pooled_t = choose_threshold(conf, ya.tolist())
    return {"confidence": conf, "pooled_threshold": pooled_t, "pooled_hit": [c >= pooled_t for c in conf],
            "nested_thresholds": fold_thresholds, "nested_hit": nested_hit}


# ---- the report

def _metrics(rows: Sequence[Row], hits: Sequence[bool], conf: Sequence[float], name: str) -> dict[str, Any]:
    """The harness's own report dict for these decisions (no timings)."""
    from pipeline.harness.interface import HARNESS_VERSION
    from pipeline.harness.metrics import build_report

    n = len(rows)
    rep = build_report(list(rows), list(hits), list(conf), [0.0] * n, ["programmatic"] * n, [0.0] * n,
                       own_ms=0, n_errors=0, messages=[], cache_name=name, harness_version=HARNESS_VERSION)
    keep = ("bench", "confusion", "metrics", "by_domain", "by_miss_label", "by_difficulty")
    out = {k: rep[k] for k in keep}
    out["confidence"] = {k: rep["confidence"][k] for k in ("recall_at_fhr_le_5pct", "fhr_at_recall_ge_80pct")} \
        if rep["confidence"] else None
    return out


def _rows(dicts: Sequence[dict]) -> list[Row]:
    return [Row.from_dict(d) for d in dicts]


def new_corpus_rows(corpora_bench: Path, committed_bench: Path) -> list[dict]:
    """Rows of a corpora build that the committed benchmark does not hold (compared on the request
    texts) and that come from an upstream corpus, not from the curated sources."""
    def key(r: Mapping) -> str:
        return json.dumps([r.get(k) for k in vf.REQUEST_FIELDS], sort_keys=True, ensure_ascii=False)

    known = {key(r) for r in read_jsonl(committed_bench)}
    curated = {"curated", "adversarial_perturbation", "intent_bottom_up"}
    out = []
    for r in read_jsonl(corpora_bench):
        from_curated = r.get("source") == "curated" and r.get("construction_method") in curated
        if not from_curated and key(r) not in known:
            out.append(r)
    return out


def full_report(bench_path: Path, corpora_bench: Path | None = None, cache_dir: str | Path | None = None) -> dict:
    """Dev threshold, test metrics, 5-fold out-of-fold metrics (per domain and per MISS label), and
    the transfer to the rows a corpora build adds. Deterministic: no timings."""
    bench_path = Path(bench_path)
    splits = bench_path.parent / "splits"
    cache = build(bench_path, cache_dir)
    dev = read_jsonl(splits / "dev.jsonl")
    labels = {r["id"]: r for r in read_jsonl(splits / "test_labels.jsonl")}
    test = [{**r, **labels[r["id"]]} for r in read_jsonl(splits / "test.jsonl")]
    test_conf = cache.confidence_many(test)
    t = cache.threshold
    report: dict[str, Any] = {
        "cache": NAME, "model_snapshot": cache.model_snapshot, "settings": cache.settings,
        "features": vf.feature_names(),
        "dev": _metrics(_rows(dev), [c >= t for c in cache.dev_confidence], cache.dev_confidence, "verified@dev"),
        "test": _metrics(_rows(test), [c >= t for c in test_conf], test_conf, "verified@test"),
    }
    allrows = read_jsonl(bench_path)
    X = featurize(allrows, cache.vectors)
    oof = out_of_fold(X, _gold(allrows), [r["label"] for r in allrows])
    R = _rows(allrows)
    report["out_of_fold"] = {
        "folds": FOLDS, "seed": SEED, "stratified_by": "label",
        "pooled_threshold": oof["pooled_threshold"], "nested_thresholds": oof["nested_thresholds"],
        "pooled": _metrics(R, oof["pooled_hit"], oof["confidence"], "verified@oof-pooled"),
        "nested": _metrics(R, oof["nested_hit"], oof["confidence"], "verified@oof-nested"),
    }
    if corpora_bench is not None:
        new = new_corpus_rows(Path(corpora_bench), bench_path)
        conf = cache.confidence_many(new)
        tr = _metrics(_rows(new), [c >= t for c in conf], conf, "verified@transfer")
        by_source: dict[str, list[int]] = {}
        for i, r in enumerate(new):
            by_source.setdefault(r["source"], []).append(i)
        tr["by_source"] = {s: _metrics(_rows([new[i] for i in idx]), [conf[i] >= t for i in idx],
                                       [conf[i] for i in idx], s)["metrics"] for s, idx in sorted(by_source.items())}
        base = report["test"]["metrics"]
        tr["drop_vs_test"] = {m: _sub(base[m]["value"], tr["metrics"][m]["value"]) for m in ("recall", "fhr", "precision")}
        tr["corpora_bench_sha256"] = _sha256(Path(corpora_bench))
        report["transfer"] = tr
    return report


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 6)


def _fmt(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def report_markdown(rep: dict) -> str:
    """The report as Markdown (same dict, same bytes)."""
    s = rep["settings"]
    L = [f"# Reference verified cache (v{s['version']}, features v{s['feature_version']})", "",
         f"Embedders: `{rep['model_snapshot']}`.", "",
         f"Classifier: {json.dumps(s['classifier'], sort_keys=True)}; {s['n_features']} features; "
         f"recall gate MiniLM cosine >= {s['gate_minilm_cosine']}.", "",
         f"Threshold chosen on dev (lowest with FHR <= {s['max_dev_fhr']}): **{s['threshold']:.6f}**.", "",
         "## Headline", "",
         "| evaluation | n | threshold | precision | recall | F1 | FHR | accuracy | ADVERSARIAL FHR |",
         "|---|---|---|---|---|---|---|---|---|"]

    def line(name: str, m: dict, t: Any) -> str:
        mm = m["metrics"]
        adv = m["by_miss_label"].get("ADVERSARIAL", {}).get("fhr")
        tt = t if isinstance(t, str) else f"{t:.6f}"
        return (f"| {name} | {m['bench']['n']} | {tt} | {_fmt(mm['precision']['value'])} | {_fmt(mm['recall']['value'])} "
                f"| {_fmt(mm['f1']['value'])} | {_fmt(mm['fhr']['value'])} | {_fmt(mm['accuracy']['value'])} | {_fmt(adv)} |")

    oof = rep["out_of_fold"]
    L.append(line("dev (threshold chosen here)", rep["dev"], s["threshold"]))
    L.append(line("test (labels joined)", rep["test"], s["threshold"]))
    L.append(line("5-fold OOF, pooled threshold", oof["pooled"], oof["pooled_threshold"]))
    L.append(line("5-fold OOF, nested thresholds", oof["nested"], "per fold"))
    if "transfer" in rep:
        L.append(line("transfer: new corpus rows", rep["transfer"], s["threshold"]))
    L += ["", f"OOF nested thresholds per fold: {', '.join(f'{t:.6f}' for t in oof['nested_thresholds'])}.", ""]
    for title, key in (("per domain", "by_domain"), ("per difficulty", "by_difficulty")):
        L += [f"## Out of fold {title}", "",
              "| group | n | recall (pooled) | FHR (pooled) | F1 (pooled) | recall (nested) | FHR (nested) | test recall | test FHR |",
              "|---|---|---|---|---|---|---|---|---|"]
        for g in sorted(oof["pooled"][key]):
            p, n_ = oof["pooled"][key][g], oof["nested"][key][g]
            te = rep["test"][key].get(g, {})
            L.append(f"| {g} | {p['n']} | {_fmt(p['recall'])} | {_fmt(p['fhr'])} | {_fmt(p['f1'])} | {_fmt(n_['recall'])} "
                     f"| {_fmt(n_['fhr'])} | {_fmt(te.get('recall'))} | {_fmt(te.get('fhr'))} |")
        L.append("")
    L += ["## FHR per MISS label", "", "| label | n | OOF pooled | OOF nested | test | transfer |", "|---|---|---|---|---|---|"]
    for lab in oof["pooled"]["by_miss_label"]:
        tr = rep.get("transfer", {}).get("by_miss_label", {}).get(lab, {})
        L.append(f"| {lab} | {oof['pooled']['by_miss_label'][lab]['n']} | {_fmt(oof['pooled']['by_miss_label'][lab]['fhr'])} "
                 f"| {_fmt(oof['nested']['by_miss_label'][lab]['fhr'])} | {_fmt(rep['test']['by_miss_label'].get(lab, {}).get('fhr'))} "
                 f"| {_fmt(tr.get('fhr'))} |")
    if "transfer" in rep:
        tr = rep["transfer"]
        d = tr["drop_vs_test"]
        L += ["", "## Transfer to a source it never saw", "",
              f"Trained on the embedded default's train split; scored on the {tr['bench']['n']} rows a corpora build adds "
              f"({tr['bench']['hit']} HIT, {tr['bench']['miss']} MISS; corpora build sha256 {tr['corpora_bench_sha256'][:16]}…).", "",
              f"Drop against the test split at the same threshold: recall {_fmt(d['recall'])}, FHR {_fmt(d['fhr'])} "
              f"(negative = FHR rose), precision {_fmt(d['precision'])}.", "",
              "| source | n | recall | FHR | precision |", "|---|---|---|---|---|"]
        for src, m in tr["by_source"].items():
            n_ = m["accuracy"]["n"]
            L.append(f"| {src} | {n_} | {_fmt(m['recall']['value'])} | {_fmt(m['fhr']['value'])} | {_fmt(m['precision']['value'])} |")
        L += ["", "| domain | n | recall | FHR |", "|---|---|---|---|"]
        for g, m in sorted(tr["by_domain"].items()):
            L.append(f"| {g} | {m['n']} | {_fmt(m['recall'])} | {_fmt(m['fhr'])} |")
    return "\n".join(L) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """python -m pipeline.harness.references.verified --bench outputs/cachebench.jsonl [--corpora X] --out R.md --json R.json"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m pipeline.harness.references.verified", description=main.__doc__)
    ap.add_argument("--bench", type=Path, default=Path("outputs/cachebench.jsonl"))
    ap.add_argument("--corpora", type=Path, default=None, help="cachebench.jsonl of a corpora build (transfer)")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    rep = full_report(a.bench, a.corpora, a.cache_dir)
    md = report_markdown(rep)
    if a.out:
        a.out.write_text(md, encoding="utf-8")
    if a.json:
        a.json.write_text(json.dumps(rep, indent=1, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
