"""outputs/reports/transfer.{md,json}: does a reference's score carry over to generators it never saw?

The splits (pipeline/stages/groups.py) put every generating group (template family, operator,
mining rule, corpus) wholly in one split: dev holds rows of groups train also holds, test only
groups train never saw. So for each reference cache:

- GPTCache at its registered settings (no training; its isolated run over every row, read through
  the evaluation-result cache as references.md reads it): FHR, recall and precision on dev and on
  test. A gap here is the two splits' difficulty, not learning.
- The verified cache (trained on train, threshold on dev): the same on dev (groups it trained on,
  and where its threshold was chosen) and on test (groups it did not see).
- Leave one construction method out, for the verified cache: for each construction method, train
  on the train rows of every other method, choose the threshold on their dev rows, and score every
  row of the method left out (FHR, recall, n).

Deterministic, no timings; the verified part goes through the evaluation-result cache keyed on the
benchmark, the verified cache's identity and this module's source, like the other reports.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pipeline.core.hashing import canonical_json

if TYPE_CHECKING:
    from pipeline.core.settings import Settings

SPLITS = ("dev", "test")


def rates(gold: Sequence[bool], hits: Sequence[bool]) -> dict[str, Any]:
    """n, HIT/MISS counts, FHR (MISS rows served), recall (HIT rows served), precision; None when undefined."""
    tp = sum(1 for g, h in zip(gold, hits) if g and h)
    fp = sum(1 for g, h in zip(gold, hits) if not g and h)
    pos = sum(1 for g in gold if g)
    neg = len(gold) - pos

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 6) if b else None

    return {"n": len(gold), "hit": pos, "miss": neg, "fhr": ratio(fp, neg), "recall": ratio(tp, pos),
            "precision": ratio(tp, tp + fp)}


def _split_of(row: Mapping[str, Any]) -> str:
    return (row.get("provenance") or {}).get("split", "")


def by_split(rows: Sequence[Mapping[str, Any]], hit_of: Mapping[str, bool]) -> dict[str, dict]:
    """rates() of the decisions on each of dev and test."""
    out = {}
    for s in SPLITS:
        mine = [r for r in rows if _split_of(r) == s]
        out[s] = rates([r["binary_label"] == "HIT" for r in mine], [hit_of[r["id"]] for r in mine])
    return out


def leave_one_method_out(rows: Sequence[Mapping[str, Any]], X: Sequence[Sequence[float]]) -> list[dict]:
    """For each construction method: the verified classifier trained on the train rows of the other
    methods, its threshold chosen on their dev rows, scored on every row of the method."""
    from pipeline.references.verified import _gold, choose_threshold, fit, scores

    gold = _gold(rows)
    out = []
    for method in sorted({r["construction_method"] for r in rows}):
        tr = [i for i, r in enumerate(rows) if r["construction_method"] != method and _split_of(r) == "train"]
        dv = [i for i, r in enumerate(rows) if r["construction_method"] != method and _split_of(r) == "dev"]
        held = [i for i, r in enumerate(rows) if r["construction_method"] == method]
        if len({gold[i] for i in tr}) < 2 or not dv:
            out.append({"method": method, "trained_on": len(tr), "threshold": None,
                        **rates([bool(gold[i]) for i in held], [False] * len(held)), "note": "too few rows to train"})
            continue
        clf = fit([X[i] for i in tr], [gold[i] for i in tr])
        t = choose_threshold(scores(clf, [X[i] for i in dv]), [gold[i] for i in dv])
        conf = scores(clf, [X[i] for i in held])
        out.append({"method": method, "trained_on": len(tr), "threshold": round(t, 6),
                    **rates([bool(gold[i]) for i in held], [c >= t for c in conf])})
    return out


def verified_transfer(bench: Path, cache: Any) -> dict:
    """The verified cache (already trained on `bench`'s train split) on dev and test, and the
    leave-one-method-out table."""
    from pipeline.references.verified import featurize, read_jsonl, scores

    rows = read_jsonl(bench)
    X = featurize(rows, cache.vectors)
    conf = scores(cache.clf, X)
    hit_of = {r["id"]: c >= cache.threshold for r, c in zip(rows, conf)}
    return {"threshold": cache.threshold, "settings": cache.settings, "splits": by_split(rows, hit_of),
            "leave_one_method_out": leave_one_method_out(rows, X)}


def _code_sha256() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _verified(bench: str, use_cache: bool, eval_dir: str | None) -> dict:
    from pipeline.harness.cache import EvalCache
    from pipeline.references.verified import build

    store = EvalCache(eval_dir)
    cache = build(Path(bench))
    identity = store.identity(bench, cache, {"report": "transfer", "code": _code_sha256()})
    return store.cached_run(identity, lambda: verified_transfer(Path(bench), cache), use_cache=use_cache)[0]


def score_transfer(bench: Path, domains: Sequence[str] = (), use_cache: bool = True,
                   resolved: "Settings | None" = None) -> dict:
    """Every reference on dev and on test, and the verified cache's leave-one-method-out table."""
    from pipeline.core import settings
    from pipeline.references.reports import ISOLATED, _run_all
    from pipeline.references.verified import read_jsonl

    bench = Path(bench)
    rows = read_jsonl(bench)
    s = resolved or settings.resolve()
    runs = _run_all([("isolated", n) for n in ISOLATED], bench, use_cache, s)
    table = []
    for name in ISOLATED:
        hit_of = {d["id"]: d["decision"] == "HIT" for d in runs[("isolated", name)]["decisions"]}
        table.append({"reference": f"{name} (isolated)", "trained": False, **by_split(rows, hit_of)})
    v = _verified(str(bench), use_cache, str(s.eval_dir))
    table.append({"reference": "verified", "trained": True, **v["splits"]})
    counts = {sp: dict(sorted(_count(rows, sp).items())) for sp in ("train", "dev", "test")}
    return {"table": table, "leave_one_method_out": v["leave_one_method_out"], "verified_threshold": v["threshold"],
            "verified_settings": v["settings"], "split_rows": counts}


def _count(rows: Sequence[Mapping[str, Any]], split: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        if _split_of(r) == split:
            out[r["label"]] = out.get(r["label"], 0) + 1
    return out


def _f(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def _gap(a: Any, b: Any) -> str:
    return "–" if a is None or b is None else f"{b - a:+.3f}"


def render_markdown(result: Mapping[str, Any]) -> str:
    L = ["# Transfer: seen generators (dev) against unseen ones (test)", "",
         "Every generating group (template family, perturbation operator, mining rule, source corpus; "
         "pipeline/stages/groups.py) lies wholly in one split: dev holds rows of groups the train split also "
         "holds, test only groups train never saw. A trained cache that learns our generators scores better on "
         "dev than on test; GPTCache, which learns nothing, shows the two splits' own difference.", "",
         "| split | rows | " + " | ".join(sorted({k for c in result["split_rows"].values() for k in c})) + " |",
         "|---|---|" + "---|" * len({k for c in result["split_rows"].values() for k in c})]
    labels = sorted({k for c in result["split_rows"].values() for k in c})
    for sp, c in result["split_rows"].items():
        L.append(f"| {sp} | {sum(c.values())} | " + " | ".join(str(c.get(k, 0)) for k in labels) + " |")
    L += ["", "| reference | dev FHR | test FHR | FHR gap | dev recall | test recall | recall gap | dev precision | "
          "test precision |", "|---|---|---|---|---|---|---|---|---|"]
    for r in result["table"]:
        d, t = r["dev"], r["test"]
        L.append(f"| {r['reference']} | {_f(d['fhr'])} | {_f(t['fhr'])} | {_gap(d['fhr'], t['fhr'])} | {_f(d['recall'])} "
                 f"| {_f(t['recall'])} | {_gap(d['recall'], t['recall'])} | {_f(d['precision'])} | {_f(t['precision'])} |")
    L += ["", f"The verified cache's threshold (chosen on dev for FHR <= 5%): {result['verified_threshold']:.6f}; "
          f"features v{result['verified_settings']['feature_version']} ({result['verified_settings']['n_features']}).",
          "", "## Verified cache, leave one construction method out", "",
          "Trained on the train rows of every other method, threshold chosen on their dev rows (FHR <= 5%), scored "
          "on every row of the method left out.", "",
          "| method left out | trained on | threshold | n | HIT | MISS | FHR | recall | precision |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in result["leave_one_method_out"]:
        t = "–" if r["threshold"] is None else f"{r['threshold']:.6f}"
        L.append(f"| {r['method']} | {r['trained_on']} | {t} | {r['n']} | {r['hit']} | {r['miss']} | {_f(r['fhr'])} "
                 f"| {_f(r['recall'])} | {_f(r['precision'])} |")
    return "\n".join(L) + "\n"


def transfer_files(result: Mapping[str, Any]) -> dict[str, bytes]:
    """The two committed files, byte-stable."""
    return {"reports/transfer.md": render_markdown(result).encode("utf-8"),
            "reports/transfer.json": (canonical_json(dict(result)) + "\n").encode("utf-8")}
