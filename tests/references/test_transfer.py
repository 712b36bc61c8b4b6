"""The transfer report (pipeline/references/transfer.py) on a small fixture: real classifier, hand
features, checked counts."""
from pipeline.references import verified_features as vf
from pipeline.references.transfer import by_split, leave_one_method_out, rates, render_markdown, transfer_files


def test_rates_count_by_hand():
    r = rates([True, True, False, False, False], [True, False, True, False, False])
    assert r == {"n": 5, "hit": 2, "miss": 3, "fhr": round(1 / 3, 6), "recall": 0.5, "precision": 0.5}
    assert rates([], [])["fhr"] is None


def rows_and_features():
    """Two methods; the signal column (cos_second) separates HIT from MISS in method `a` only, and the
    other way round in method `b`: leaving one out must score it badly."""
    names = vf.feature_names()
    gate, sig = names.index("cos_minilm"), names.index("cos_second")
    rows, X = [], []
    for i in range(240):
        method = "a" if i % 2 else "b"
        hit = (i // 2) % 2 == 0
        split = ("train", "train", "dev", "test")[(i // 4) % 4]
        x = [0.0] * len(names)
        x[gate] = 0.9
        x[sig] = (0.9 if hit else 0.1) if method == "a" else (0.1 if hit else 0.9)
        rows.append({"id": f"r{i}", "construction_method": method, "binary_label": "HIT" if hit else "MISS",
                     "label": "EQUIV" if hit else "UNRELATED", "provenance": {"split": split}})
        X.append(x)
    return rows, X


def test_leave_one_method_out_trains_on_the_others():
    rows, X = rows_and_features()
    table = {r["method"]: r for r in leave_one_method_out(rows, X)}
    assert set(table) == {"a", "b"}
    for m in ("a", "b"):
        assert table[m]["n"] == 120 and table[m]["trained_on"] == 60
        assert table[m]["fhr"] == 1.0 or table[m]["recall"] == 0.0   # the learnt rule is backwards for it
    assert leave_one_method_out(rows, X) == leave_one_method_out(rows, X)


def test_by_split_and_the_files_are_byte_stable():
    rows, _ = rows_and_features()
    hit_of = {r["id"]: r["binary_label"] == "HIT" for r in rows}
    s = by_split(rows, hit_of)
    assert s["dev"]["fhr"] == 0.0 and s["test"]["recall"] == 1.0 and s["dev"]["n"] == 60
    result = {"table": [{"reference": "oracle", "trained": False, **s}],
              "leave_one_method_out": leave_one_method_out(*rows_and_features()),
              "verified_threshold": 0.5, "verified_settings": {"feature_version": "2", "n_features": 3},
              "split_rows": {"train": {"EQUIV": 60, "UNRELATED": 60}, "dev": {"EQUIV": 30, "UNRELATED": 30},
                             "test": {"EQUIV": 30, "UNRELATED": 30}}}
    files = transfer_files(result)
    assert set(files) == {"reports/transfer.md", "reports/transfer.json"}
    assert files == transfer_files(result)
    md = render_markdown(result)
    assert "| oracle | 0.000 | 0.000 | +0.000 | 1.000 | 1.000 |" in md and "| a | 60 |" in md
