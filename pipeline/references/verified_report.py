"""The verified cache's full report: dev threshold, test split (labels joined), 5-fold
out-of-fold predictions over every row (pooled and nested thresholds), and the transfer to the rows
a corpora build adds, a source it never saw; `report_markdown` renders that dict.

    python -m pipeline.references.verified_report --bench outputs/cachebench.jsonl \
        [--corpora <corpora build>/cachebench.jsonl] --out verified.md --json verified.json

Standard library at import; numpy and scikit-learn load inside functions.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.harness.interface import Row
from pipeline.references import verified_features as vf
from pipeline.references.verified import (FOLDS, NAME, SEED, _gold, _sha256, build, choose_threshold,
                                                  featurize, fit, read_jsonl, scores)
from pipeline.references.verified_text import REQUEST_FIELDS


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
        return json.dumps([r.get(k) for k in REQUEST_FIELDS], sort_keys=True, ensure_ascii=False)

    known = {key(r) for r in read_jsonl(committed_bench)}
    curated = {"curated", "adversarial_perturbation", "intent_bottom_up"}
    out = []
    for r in read_jsonl(corpora_bench):
        from_curated = r.get("source") == "curated" and r.get("construction_method") in curated
        if not from_curated and key(r) not in known:
            out.append(r)
    return out


def full_report(bench_path: Path, corpora_bench: Path | None = None, cache_dir: str | Path | None = None,
                cache: Any = None) -> dict:
    """Dev threshold, test metrics, 5-fold out-of-fold metrics (per domain and per MISS label), and
    the transfer to the rows a corpora build adds. Deterministic: no timings. `cache` is the verified
    cache already built on `bench_path` (built here when not given)."""
    bench_path = Path(bench_path)
    splits = bench_path.parent / "splits"
    if cache is None:
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
    """python -m pipeline.references.verified_report --bench outputs/cachebench.jsonl [--corpora X] --out R.md --json R.json"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m pipeline.references.verified_report", description=main.__doc__)
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
