"""`cacheeval compare`: McNemar's exact test on two hand-built reports with known p-values, and
one-line errors when the reports are not on the same rows."""
from __future__ import annotations

import json

import pytest

from pipeline.app.cli import main
from pipeline.core.errors import InputError
from pipeline.harness.compare import compare_reports, mcnemar_exact


@pytest.mark.parametrize("b,c,p", [
    (0, 0, 1.0),
    (5, 5, 1.0),
    (0, 6, 2 / 64),                      # 2 * C(6,0) / 2^6
    (1, 9, 2 * (1 + 10) / 1024),         # 2 * (C(10,0) + C(10,1)) / 2^10 = 0.021484375
    (12, 3, 2 * 576 / 32768),            # 2 * (1 + 15 + 105 + 455) / 2^15 = 0.03515625
    (2, 3, 1.0),                         # 2 * 16/32 = 1, capped
])
def test_mcnemar_exact_known_values(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


def test_mcnemar_on_many_pairs_stays_exact():
    assert 0.0 < mcnemar_exact(400, 520) < 1e-4
    assert mcnemar_exact(1000, 1000) == 1.0


def report(name: str, decisions: list[tuple[str, str, bool]]) -> dict:
    return {"cache_name": name, "decisions": [{"id": i, "label": g, "decision": "HIT" if h else "MISS",
                                               "confidence": None} for i, g, h in decisions]}


def hand_built() -> tuple[dict, dict]:
    """20 MISS rows: A hits 12 that B misses, B hits 3 that A misses, both hit 1, neither 4.
    10 HIT rows: A alone 1, B alone 1, both 8."""
    a, b = [], []
    for k, (ha, hb, n) in enumerate(((True, False, 12), (False, True, 3), (True, True, 1), (False, False, 4))):
        for j in range(n):
            rid = f"cb-math-{k}{j:03d}"
            a.append((rid, "MISS", ha))
            b.append((rid, "MISS", hb))
    for k, (ha, hb, n) in enumerate(((True, False, 1), (False, True, 1), (True, True, 8))):
        for j in range(n):
            rid = f"cb-code-{k}{j:03d}"
            a.append((rid, "HIT", ha))
            b.append((rid, "HIT", hb))
    return report("gptcache", a), report("verified", b[::-1])   # row order does not matter


def test_compare_reports_on_hand_built_reports():
    c = compare_reports(*hand_built(), "gptcache", "verified")
    assert c["rows"] == 30
    f = c["fhr"]
    assert (f["rows"], f["a"], f["b"], f["a_only_hits"], f["b_only_hits"]) == (20, 13 / 20, 4 / 20, 12, 3)
    assert f["p_value"] == pytest.approx(0.03515625) and f["better"] == "verified" and f["significant"]
    r = c["recall"]
    assert (r["a"], r["b"], r["p_value"], r["better"], r["significant"]) == (0.9, 0.9, 1.0, None, False)


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_compare_cli_says_which_is_better_and_whether_it_is_significant(tmp_path, capsys):
    a, b = hand_built()
    code = main(["compare", write(tmp_path, "a.json", a), write(tmp_path, "b.json", b)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "gptcache vs verified on 30 rows (10 HIT, 20 MISS)",
        "FHR: gptcache 0.650, verified 0.200; verified is better (fewer false hits); 15 MISS rows decided "
        "differently (gptcache alone hit 12, verified alone hit 3); McNemar exact p = 0.0352: significant at alpha 0.05",
        "recall: gptcache 0.900, verified 0.900; no difference; 2 HIT rows decided differently "
        "(gptcache alone hit 1, verified alone hit 1); McNemar exact p = 1: not significant at alpha 0.05",
    ]
    code = main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--alpha", "0.01", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["fhr"]["significant"] is False and data["alpha"] == 0.01


@pytest.mark.parametrize("change,message", [
    (lambda b: b["decisions"].pop(), "gptcache and verified are not on the same rows: 1 id only in gptcache "
                                      "(first: cb-math-0000). Score both caches on the same benchmark file"),
    (lambda b: b["decisions"][0].update(label="MISS"), "gptcache and verified disagree on row cb-code-2007's label "
                                                       "(HIT vs MISS). Score both caches on the same benchmark version"),
    (lambda b: b.pop("decisions"), "verified: the report has no per-row decisions. Write it again with cacheeval "
                                   "eval --json (reports carry them since the compare command exists)"),
])
def test_reports_not_on_the_same_rows_are_a_one_line_error(tmp_path, capsys, change, message):
    a, b = hand_built()
    change(b)
    code = main(["compare", write(tmp_path, "a.json", a), write(tmp_path, "b.json", b)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == f"error: {message}\n"
    with pytest.raises(InputError):
        compare_reports(a, b, "gptcache", "verified")


def test_unreadable_report_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    code = main(["compare", str(bad), str(bad)])
    assert code == 1
    assert capsys.readouterr().err == (f"error: {bad}: not a JSON report (JSONDecodeError). "
                                       "Pass a report written by cacheeval eval --json\n")
