"""The scoring harness: loading, verdict shapes, metric algebra, breakdowns, latency, cost, tiers,
errors and the confidence sweep, checked against hand-computed values."""
from __future__ import annotations

import ast
import json
import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.harness.baselines import BASELINES, always_hit, always_miss, exact_match, get_baseline
from pipeline.core.errors import InputError
from pipeline.harness import HARNESS_VERSION, ROW_FIELDS, Row, Verdict, evaluate, load_bench, wilson
from pipeline.core.paths import PROJECT_ROOT, ROW_SCHEMA
from pipeline.core.registry import UnknownNameError

DATA = Path(__file__).resolve().parents[1] / "data"
BENCH = DATA / "bench.jsonl"


def make_row(i: int, gold: str, **over) -> Row:
    """A minimal valid row; `gold` is HIT or MISS (label EQUIV or UNRELATED)."""
    fields = dict(
        id=f"cb-math-{i:04d}", domain="math", subcategory="s", label="EQUIV" if gold == "HIT" else "UNRELATED",
        binary_label=gold, difficulty="easy", query_a=f"q{i}", query_b=f"q{i}", context_a=None,
        context_b=None, system_prompt_a=None, system_prompt_b=None, tools_a=None, tools_b=None,
        expected_answer_a="a", expected_answer_b="a", rationale="r", verification_method="rubric",
        verification_payload={}, construction_method="curated", source="curated", real_world_grounding="g",
    )
    fields.update(over)
    return Row(**fields)


def matrix_rows(tp: int, fp: int, fn: int, tn: int) -> tuple[list[Row], dict[str, bool]]:
    """Rows plus the decision per id that yields exactly this confusion matrix."""
    rows, decide = [], {}
    for gold, hit, count in (("HIT", True, tp), ("MISS", True, fp), ("HIT", False, fn), ("MISS", False, tn)):
        for _ in range(count):
            row = make_row(len(rows), gold)
            rows.append(row)
            decide[row.query_a] = hit
    return rows, decide


def by_table(decide: dict[str, bool]):
    return lambda pair: decide[pair.query_a]  # a cache sees requests only: keyed on the query


# ---------------------------------------------------------------- module surface

def test_harness_imports_no_heavy_library():
    # Every module of the package, found by walking it, so a module added later is covered too.
    code = ("import importlib, pkgutil, sys, pipeline.harness as h\n"
            "names = sorted(m.name for m in pkgutil.walk_packages(h.__path__, 'pipeline.harness.'))\n"
            "for name in names:\n"
            "    importlib.import_module(name)\n"
            "heavy = [m for m in ('dagster', 'torch', 'pandas', 'numpy', 'sentence_transformers', 'yaml',\n"
            "                     'jsonschema') if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "print(' '.join(names))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    imported = set(done.stdout.split())
    assert {f"pipeline.harness.{m}" for m in ("interface", "load", "evaluation", "metrics", "report",
                                              "baselines", "cache", "contract")} <= imported


def test_the_harness_lists_no_domain():
    # Adding a domain must not need an edit here: no harness module holds a tuple, list or set
    # spelling a registered domain (a display order, a filter, ...).
    from domains import domain_names

    domains = set(domain_names())
    assert len(domains) >= 10
    for path in sorted((PROJECT_ROOT / "pipeline" / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                named = {e.value for e in node.elts if isinstance(e, ast.Constant)} & domains
                assert not named, f"{path.name}:{node.lineno} lists domains {sorted(named)}"


def test_version_and_row_fields_follow_the_schema():
    assert HARNESS_VERSION == "1"
    schema = json.loads(ROW_SCHEMA.read_text(encoding="utf-8"))
    assert ROW_FIELDS == tuple(schema["required"])
    assert len(ROW_FIELDS) == 22


# ---------------------------------------------------------------- Wilson interval

@pytest.mark.parametrize("k,n,lo,hi", [
    (8, 10, 0.4902, 0.9433),
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (1, 2, 0.0945, 0.9055),
    (50, 100, 0.4038, 0.5962),
])
def test_wilson_known_values(k, n, lo, hi):
    got = wilson(k, n)
    assert got[0] == pytest.approx(lo, abs=5e-5)
    assert got[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_exact_ends_and_empty():
    assert wilson(0, 7)[0] == 0.0
    assert wilson(7, 7)[1] == 1.0
    assert wilson(0, 0) is None


# ---------------------------------------------------------------- metric algebra

def test_metrics_on_a_hand_built_confusion_matrix():
    rows, decide = matrix_rows(tp=6, fp=2, fn=3, tn=9)
    d = evaluate(by_table(decide), rows).to_dict()
    assert d["confusion"] == {"tp": 6, "fp": 2, "fn": 3, "tn": 9}
    m = d["metrics"]
    assert m["precision"]["value"] == pytest.approx(0.75)            # 6 / 8
    assert (m["precision"]["k"], m["precision"]["n"]) == (6, 8)
    assert m["recall"]["value"] == pytest.approx(2 / 3)              # 6 / 9
    assert m["f1"]["value"] == pytest.approx(12 / 17)                # 2*6 / (2*6 + 2 + 3)
    assert m["fhr"]["value"] == pytest.approx(2 / 11)                # 2 / (2 + 9)
    assert m["accuracy"]["value"] == pytest.approx(0.75)             # 15 / 20
    assert m["fhr"]["ci95"] == pytest.approx(list(wilson(2, 11)))
    assert m["fhr"]["ci95"][0] < 2 / 11 < m["fhr"]["ci95"][1]
    assert "ci95" not in m["f1"]
    assert d["bench"] == {"n": 20, "hit": 9, "miss": 11}


def test_metrics_when_a_cache_never_hits():
    rows, decide = matrix_rows(tp=0, fp=0, fn=4, tn=6)
    d = evaluate(by_table(decide), rows).to_dict()["metrics"]
    assert d["precision"]["value"] is None and d["precision"]["ci95"] is None  # 0 / 0
    assert d["recall"]["value"] == 0.0
    assert d["f1"]["value"] == 0.0
    assert d["fhr"]["value"] == 0.0
    assert d["accuracy"]["value"] == pytest.approx(0.6)


def test_metrics_on_miss_only_rows():
    rows, decide = matrix_rows(tp=0, fp=3, fn=0, tn=1)
    d = evaluate(by_table(decide), rows).to_dict()["metrics"]
    assert d["recall"]["value"] is None
    assert d["precision"]["value"] == 0.0
    assert d["fhr"]["value"] == pytest.approx(0.75)
    assert d["f1"]["value"] == 0.0


def test_report_properties_match_the_dict():
    rows, decide = matrix_rows(tp=3, fp=1, fn=1, tn=5)
    report = evaluate(by_table(decide), rows)
    assert (report.n, report.precision, report.recall, report.fhr) == (10, 0.75, 0.75, 1 / 6)
    assert report.f1 == pytest.approx(0.75) and report.accuracy == pytest.approx(0.8)


# ---------------------------------------------------------------- breakdowns on the test bench

def test_breakdowns_for_exact_match_on_the_test_bench():
    d = evaluate(exact_match, load_bench(BENCH), cache_name="exact_match").to_dict()
    # Hand count: verbatim-equal pairs are math-0002 (HIT), qa_factual-0002 (HIT) and creative-0001
    # (policy MISS); personalized-0001 differs in system prompt, multi_turn-0001 in context.
    assert d["confusion"] == {"tp": 2, "fp": 1, "fn": 2, "tn": 5}
    # Domains in the order of their first row in the file.
    assert list(d["by_domain"]) == ["math", "code", "creative", "tool", "qa_factual", "multi_turn", "personalized"]
    math_ = d["by_domain"]["math"]
    assert (math_["n"], math_["tp"], math_["fn"], math_["tn"]) == (3, 1, 1, 1)
    assert math_["f1"] == pytest.approx(2 / 3)
    assert d["by_domain"]["creative"]["fhr"] == 1.0
    assert d["by_domain"]["tool"]["fhr"] is None and d["by_domain"]["tool"]["recall"] == 0.0
    assert d["by_miss_label"]["RELATED_UNSAFE"] == {"n": 2, "fp": 0, "fhr": 0.0, "ci95": list(wilson(0, 2))}
    assert d["by_miss_label"]["ADVERSARIAL"]["n"] == 2
    assert d["by_miss_label"]["UNRELATED"]["n"] == 1
    assert d["by_miss_label"]["policy_no_cache"] == {"n": 1, "fp": 1, "fhr": 1.0, "ci95": list(wilson(1, 1))}
    easy = d["by_difficulty"]["easy"]
    assert (easy["tp"], easy["fp"], easy["tn"]) == (2, 1, 1)
    assert easy["precision"] == pytest.approx(2 / 3) and easy["fhr"] == pytest.approx(0.5)
    assert list(d["by_difficulty"]) == ["easy", "medium", "hard"]
    assert d["by_construction_method"]["curated"]["n"] == 4
    assert list(d["by_construction_method"])[0] == "real_traffic_mined"
    assert d["by_subcategory"]["qa_factual/capital"]["n"] == 2
    assert list(d["by_subcategory"]) == sorted(d["by_subcategory"])


def test_domain_order_puts_named_domains_first_then_the_rest_by_first_row():
    rows = load_bench(BENCH)
    d = evaluate(exact_match, rows, domain_order=["tool", "qa_factual", "no_such_domain"]).to_dict()
    assert list(d["by_domain"]) == ["tool", "qa_factual", "math", "code", "creative", "multi_turn", "personalized"]
    assert d["by_domain"] == evaluate(exact_match, rows).to_dict()["by_domain"]  # only the order changes
    md = evaluate(exact_match, rows, domain_order=["tool"]).to_markdown()
    domain_section = md.split("## By domain")[1].split("## ")[0]
    assert domain_section.index("| tool |") < domain_section.index("| math |")
    reversed_rows = evaluate(exact_match, rows[::-1]).to_dict()
    assert list(reversed_rows["by_domain"]) == ["qa_factual", "personalized", "multi_turn", "tool", "creative",
                                                "code", "math"]
    with pytest.raises(TypeError, match="domain_order"):
        evaluate(exact_match, rows, domain_order="math")


def test_a_new_domain_is_reported_without_a_harness_change():
    rows = [make_row(0, "HIT", domain="astronomy", id="cb-astronomy-0001"), make_row(1, "MISS")]
    d = evaluate(always_hit, rows).to_dict()
    assert list(d["by_domain"]) == ["astronomy", "math"]
    assert (d["by_domain"]["astronomy"]["tp"], d["by_domain"]["math"]["fp"]) == (1, 1)


def test_baselines_floor_and_ceiling():
    rows = load_bench(BENCH)
    miss = evaluate(always_miss, rows).to_dict()
    hit = evaluate(always_hit, rows).to_dict()
    assert (miss["metrics"]["fhr"]["value"], miss["metrics"]["recall"]["value"]) == (0.0, 0.0)
    assert (hit["metrics"]["fhr"]["value"], hit["metrics"]["recall"]["value"]) == (1.0, 1.0)
    assert hit["metrics"]["precision"]["value"] == pytest.approx(0.4)
    assert miss["tiers"] == {"exact": 10, "error": 0}


def test_baseline_registry():
    assert BASELINES.names() == ["always_hit", "always_miss", "exact_match"]
    assert get_baseline("exact_match") is exact_match
    with pytest.raises(UnknownNameError) as exc:
        get_baseline("exact")
    assert str(exc.value) == ("Unknown baseline 'exact'. Did you mean 'exact_match'? "
                              "Available: always_hit, always_miss, exact_match")


# ---------------------------------------------------------------- verdict shapes

@dataclass
class ForeignVerdict:  # a look-alike from "another package": same names, different class
    is_hit: bool
    confidence: float | None = None
    decision_ms: float | None = None
    tier_used: str | None = None
    cost_usd: float = 0.0


@pytest.mark.parametrize("verdict", [
    Verdict(is_hit=True, tier_used="rubric"),
    ForeignVerdict(is_hit=True, tier_used="rubric"),
    SimpleNamespace(is_hit=True, tier_used="rubric"),
    {"is_hit": True, "tier_used": "rubric"},
])
def test_every_verdict_shape_is_accepted(verdict):
    rows, _ = matrix_rows(tp=2, fp=1, fn=0, tn=0)
    d = evaluate(lambda row: verdict, rows).to_dict()
    assert d["confusion"]["tp"] == 2 and d["confusion"]["fp"] == 1
    assert d["tiers"] == {"rubric": 3, "error": 0}


def test_plain_bools_and_unspecified_tier():
    rows, decide = matrix_rows(tp=1, fp=0, fn=1, tn=1)
    d = evaluate(by_table(decide), rows).to_dict()
    assert d["tiers"] == {"error": 0, "unspecified": 3}
    assert d["errors"] == {"count": 0, "messages": []}


@pytest.mark.parametrize("bad,problem", [
    (None, "VerdictError: cache returned NoneType"),
    ("HIT", "VerdictError: cache returned str"),
    ({"hit": True}, "VerdictError: verdict dict has no 'is_hit' key (keys: hit)"),
    (Verdict(is_hit="yes"), "VerdictError: is_hit must be a bool, got 'yes'"),
    (Verdict(is_hit=True, confidence=math.nan), "VerdictError: confidence must be finite, got nan"),
    (Verdict(is_hit=True, cost_usd=-1.0), "VerdictError: cost_usd must not be negative, got -1.0"),
    (Verdict(is_hit=True, tier_used=3), "VerdictError: tier_used must be a string, got 3"),
])
def test_a_malformed_verdict_is_an_error(bad, problem):
    rows = [make_row(0, "MISS")]
    d = evaluate(lambda row: bad, rows).to_dict()
    assert d["confusion"]["fp"] == 0 and d["confusion"]["tn"] == 1  # scored MISS
    assert d["tiers"]["error"] == 1
    assert d["errors"]["messages"][0].startswith(f"cb-math-0000: {problem}")


# ---------------------------------------------------------------- errors

def test_a_raising_cache_is_scored_miss_with_tier_error():
    rows, _ = matrix_rows(tp=0, fp=0, fn=4, tn=3)

    def flaky(row):
        if int(row.query_a[1:]) < 3:
            raise RuntimeError(f"backend down for {row.query_a}\nsecond line")
        return True

    d = evaluate(flaky, rows, cache_name="flaky").to_dict()
    assert d["tiers"] == {"error": 3, "unspecified": 4}
    assert d["confusion"] == {"tp": 1, "fp": 3, "fn": 3, "tn": 0}
    assert d["errors"]["count"] == 3
    assert d["errors"]["messages"][0] == "cb-math-0000: RuntimeError: backend down for q0"


def test_only_the_first_five_error_messages_are_kept():
    rows, _ = matrix_rows(tp=0, fp=0, fn=0, tn=8)

    def broken(row):
        raise KeyError(row.query_a)

    d = evaluate(broken, rows).to_dict()
    assert d["errors"]["count"] == 8
    assert d["errors"]["messages"] == [f"cb-math-{i:04d}: KeyError: 'q{i}'" for i in range(5)]
    assert "… and 3 more" in evaluate(broken, rows).to_markdown()


def test_on_error_raise_reraises_with_the_row():
    rows, _ = matrix_rows(tp=1, fp=0, fn=0, tn=1)

    def broken(row):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom") as exc:
        evaluate(broken, rows, cache_name="b", on_error="raise")
    assert exc.value.cacheeval_row_id == "cb-math-0000"
    assert exc.value.__notes__ == ["cacheeval: while scoring row cb-math-0000 with cache 'b'"]
    with pytest.raises(ValueError, match="on_error"):
        evaluate(broken, rows, on_error="ignore")


# ---------------------------------------------------------------- latency, cost, tiers

def test_latency_uses_the_cache_timing_where_positive():
    rows, _ = matrix_rows(tp=0, fp=0, fn=0, tn=10)
    d = evaluate(lambda row: Verdict(False, decision_ms=float(int(row.query_a[1:]) + 1)), rows).to_dict()
    lat = d["latency_ms"]
    # 1..10 ms, linear interpolation: p50 = 5.5, p95 = 9 + 0.55, p99 = 9 + 0.91
    assert (lat["p50"], lat["p95"], lat["p99"]) == pytest.approx((5.5, 9.55, 9.91))
    assert (lat["mean"], lat["max"]) == pytest.approx((5.5, 10.0))
    assert (lat["cache_timed"], lat["wall_clock"]) == (10, 0)


def test_latency_falls_back_to_wall_clock():
    rows, _ = matrix_rows(tp=0, fp=0, fn=0, tn=4)
    timings = iter([0.0, None, -3.0, 200.0])
    d = evaluate(lambda row: {"is_hit": False, "decision_ms": next(timings)}, rows).to_dict()["latency_ms"]
    assert (d["cache_timed"], d["wall_clock"]) == (1, 3)
    assert d["max"] == 200.0 and d["p50"] < 100.0  # three wall-clock readings of a trivial call


def test_cost_and_tier_usage():
    rows, _ = matrix_rows(tp=0, fp=0, fn=0, tn=10)
    tiers = ["exact"] * 6 + ["programmatic"] * 2 + ["rubric", "judge"]

    def cache(row):
        i = int(row.query_a[1:])
        return Verdict(False, tier_used=tiers[i], cost_usd=0.01 if tiers[i] == "judge" else 0.0005)

    d = evaluate(cache, rows).to_dict()
    assert d["cost"]["total_usd"] == pytest.approx(0.0145)              # 9 * 0.0005 + 0.01
    assert d["cost"]["per_1000_usd"] == pytest.approx(1.45)
    assert d["tiers"] == {"exact": 6, "programmatic": 2, "rubric": 1, "judge": 1, "error": 0}


# ---------------------------------------------------------------- confidence

def sweep_rows() -> tuple[list[Row], dict[str, float]]:
    hit_conf = [0.9, 0.8, 0.7, 0.6, 0.3]
    miss_conf = [0.85, 0.65, 0.5] + [0.1] * 17
    rows, conf = [], {}
    for gold, values in (("HIT", hit_conf), ("MISS", miss_conf)):
        for c in values:
            row = make_row(len(rows), gold)
            rows.append(row)
            conf[row.query_a] = c
    return rows, conf


def test_operating_points_and_sweep_by_hand():
    rows, conf = sweep_rows()
    d = evaluate(lambda row: Verdict(conf[row.query_a] >= 0.5, confidence=conf[row.query_a]), rows).to_dict()["confidence"]
    # Thresholds descending: 0.9 (tp 1, fp 0), 0.85 (1, 1), 0.8 (2, 1), 0.7 (3, 1), 0.65 (3, 2),
    # 0.6 (4, 2), 0.5 (4, 3), 0.3 (5, 3), 0.1 (5, 20). P = 5, N = 20: FHR <= 5% allows fp <= 1.
    assert d["recall_at_fhr_le_5pct"] == {"threshold": 0.7, "tp": 3, "fp": 1, "precision": 0.75,
                                          "recall": 0.6, "fhr": 0.05}
    assert d["fhr_at_recall_ge_80pct"] == {"threshold": 0.6, "tp": 4, "fp": 2, "precision": 4 / 6,
                                           "recall": 0.8, "fhr": 0.1}
    assert d["sweep_grid"] == "every distinct confidence"
    assert [p["threshold"] for p in d["sweep"]] == [0.1, 0.3, 0.5, 0.6, 0.65, 0.7, 0.8, 0.85, 0.9]
    assert d["sweep"][2] == {"threshold": 0.5, "tp": 4, "fp": 3, "precision": 4 / 7, "recall": 0.8, "fhr": 0.15}
    assert d["rows_with_confidence"] == 25


def test_rows_without_confidence_never_hit_in_the_sweep():
    rows = [make_row(0, "HIT"), make_row(1, "HIT"), make_row(2, "MISS")]
    conf = {"q0": 0.9, "q1": None, "q2": 0.2}
    d = evaluate(lambda row: Verdict(True, confidence=conf[row.query_a]), rows).to_dict()["confidence"]
    assert d["rows_with_confidence"] == 2
    assert d["sweep"][0] == {"threshold": 0.2, "tp": 1, "fp": 1, "precision": 0.5, "recall": 0.5, "fhr": 1.0}
    assert d["fhr_at_recall_ge_80pct"] is None  # the row without a confidence caps recall at 0.5
    assert d["recall_at_fhr_le_5pct"]["threshold"] == 0.9


def test_many_distinct_confidences_use_21_ranks():
    rows = [make_row(i, "HIT" if i % 2 else "MISS") for i in range(200)]
    d = evaluate(lambda row: Verdict(False, confidence=int(row.query_a[1:]) / 1000), rows).to_dict()["confidence"]
    assert d["sweep_grid"] == "21 evenly spaced ranks of the 200 distinct confidences"
    thresholds = [p["threshold"] for p in d["sweep"]]
    assert len(thresholds) == 21 and thresholds[0] == 0.0 and thresholds[-1] == 0.199
    assert thresholds == sorted(thresholds)


def test_no_confidence_means_no_sweep():
    rows, decide = matrix_rows(tp=1, fp=1, fn=1, tn=1)
    report = evaluate(by_table(decide), rows)
    assert report.to_dict()["confidence"] is None
    assert "## Confidence" not in report.to_markdown()


# ---------------------------------------------------------------- report output

def test_report_dict_is_plain_json_in_a_fixed_order():
    d = evaluate(exact_match, load_bench(BENCH), cache_name="x").to_dict()
    assert list(d) == ["harness_version", "cache_name", "bench", "confusion", "metrics", "by_domain",
                       "by_miss_label", "by_difficulty", "by_construction_method", "by_subcategory",
                       "latency_ms", "cost", "tiers", "errors", "confidence"]
    assert list(d["metrics"]) == ["precision", "recall", "f1", "fhr", "accuracy"]
    json.dumps(d, allow_nan=False)
    again = evaluate(exact_match, load_bench(BENCH), cache_name="x").to_dict()
    d.pop("latency_ms"), again.pop("latency_ms")
    assert json.dumps(d) == json.dumps(again)


def test_markdown_report_headline():
    md = evaluate(exact_match, load_bench(BENCH), cache_name="exact_match").to_markdown()
    assert md.startswith("# CacheEval report: exact_match\n")
    assert "| FHR | 0.167 (1/6) | 0.030 – 0.564 |" in md
    assert "| F1 | 0.571 | – |" in md
    assert "| policy_no_cache | 1 | 1 | 1.000 | 0.207 – 1.000 |" in md
    assert "Confusion: TP 2 · FP 1 · FN 2 · TN 5" in md
    for section in ("By domain", "FHR by MISS label", "By difficulty", "By construction method",
                    "By subcategory", "Decision latency (ms)", "Cost", "Tiers"):
        assert f"## {section}\n" in md


def test_the_build_reproduces_the_committed_baseline_reports(tmp_path):
    # The committed reports come from the build's assembly stage calling the harness; a harness
    # change that moves one byte of them would fail `cacheeval check`, so catch it here, fast.
    from pipeline.stages.assembly import write_baselines

    outputs = PROJECT_ROOT / "outputs"
    rows = [json.loads(line) for line in (outputs / "cachebench.jsonl").read_text(encoding="utf-8").splitlines()]
    written, _ = write_baselines(tmp_path, rows)
    assert sorted(written) == [f"reports/baseline_{n}.{e}" for n in ("always_hit", "always_miss", "exact_match")
                               for e in ("json", "md")]
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (outputs / rel).read_bytes(), rel


# ---------------------------------------------------------------- loading

def test_load_bench_reads_rows_and_provenance():
    rows = load_bench(BENCH)
    assert len(rows) == 10 and rows[0].id == "cb-math-0001"
    assert rows[0].extra["licence"] == "CC-BY-4.0 (CacheEval curated)"
    assert rows[0].extra["provenance"]["operator"] == "rename_variable"
    assert rows[0]["query_b"] == "Solve a + 2 = 8" and rows[0]["licence"].startswith("CC-BY")
    first = json.loads(BENCH.read_text(encoding="utf-8").splitlines()[0])
    assert rows[0].to_dict() == first and list(rows[0].to_dict()) == list(first)


def write_lines(path: Path, objs) -> Path:
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs), encoding="utf-8")
    return path


def bench_dicts() -> list[dict]:
    return [json.loads(line) for line in BENCH.read_text(encoding="utf-8").splitlines()]


def test_load_bench_joins_a_labels_file(tmp_path):
    full = bench_dicts()
    public = [{k: v for k, v in r.items() if k not in ("label", "binary_label")} for r in full]
    labels = [{"id": r["id"], "label": r["label"], "binary_label": r["binary_label"]} for r in reversed(full)]
    bench = write_lines(tmp_path / "test.jsonl", public)
    lab = write_lines(tmp_path / "labels.jsonl", labels)
    joined = load_bench(bench, lab)
    assert joined == load_bench(BENCH)
    assert [list(r.to_dict()) for r in joined] == [list(r) for r in full]  # withheld fields back in their place
    with pytest.raises(InputError) as exc:
        load_bench(bench)
    assert str(exc.value) == (f"{bench}:1: label, binary_label: missing on 10 rows (first on line 1): a split "
                              "published without labels. Pass --labels with the labels file of this split.")
    labels[-1]["binary_label"] = "HIT"
    write_lines(lab, labels)
    with pytest.raises(InputError) as exc:
        load_bench(write_lines(tmp_path / "full.jsonl", full), lab)
    assert str(exc.value) == (f"{tmp_path / 'full.jsonl'}:1: binary_label: 'MISS' here but 'HIT' in {lab}:10. "
                              "Use the labels file of the same benchmark version.")


@pytest.mark.parametrize("lines,message", [
    (['{"id": "cb-math-0001",'], "{path}:1: <json>: invalid JSON: Expecting property name enclosed in double "
                                 "quotes (column 23). Write one JSON object per line."),
    (["[1, 2]"], "{path}:1: <json>: expected a JSON object, got array. Write one JSON object per line."),
    ([], "{path}:1: <json>: no rows. Write one JSON object per line."),
])
def test_load_bench_errors_name_file_and_line(tmp_path, lines, message):
    path = write_lines(tmp_path / "b.jsonl", lines)
    with pytest.raises(InputError) as exc:
        load_bench(path)
    assert str(exc.value) == message.format(path=path)


def test_load_bench_rejects_duplicates_bad_binary_and_missing_files(tmp_path):
    rows = bench_dicts()
    path = write_lines(tmp_path / "b.jsonl", [rows[0], rows[1], rows[0]])
    with pytest.raises(InputError, match=r"b.jsonl:3: id: duplicate id 'cb-math-0001' \(first on line 1\)"):
        load_bench(path)
    rows[0]["binary_label"] = "hit"
    with pytest.raises(InputError, match=r"b.jsonl:1: binary_label: 'hit' is not allowed. Use one of: HIT, MISS"):
        load_bench(write_lines(path, [rows[0]]))
    with pytest.raises(InputError, match="nope.jsonl: file not found"):
        load_bench(tmp_path / "nope.jsonl")


