"""`cacheeval references`, `eval --reference`, `--protocol`, `--max-fhr` and per-row decisions in
the JSON report (no model is loaded here: baselines and hand-written store/lookup doubles)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness_doubles import pair
from pipeline.app.cli import main
from pipeline.references import REFERENCES, ReferenceSpec

DOUBLES = str(Path(__file__).resolve().parents[1] / "harness_doubles.py")


@pytest.fixture(autouse=True)
def _restore_import_state(monkeypatch):
    # Loading a cache module by path puts its folder on sys.path; keep tests independent.
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [n for n in sys.modules if n.startswith("cacheeval_user_")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def bench(tmp_path) -> str:
    """3 HIT and 2 MISS rows; shared, FirstWordStore serves row 1's answer to row 2's lookup."""
    rows = [pair(1, "HIT", "Solve x + 2 = 8", "Solve x + 2 = 8"),
            pair(2, "HIT", "Solve y - 1 = 3", "Solve y - 1 = 3"),
            pair(3, "HIT", "Name a prime", "Name a prime number"),
            pair(4, "MISS", "What is 2 + 2?", "What is 3 + 3?"),
            pair(5, "MISS", "List primes", "Sort primes")]
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_references_lists_every_reference_and_what_it_is(capsys):
    assert main(["references"]) == 0
    out = capsys.readouterr().out
    for name in ("gptcache-minilm@0.80", "gptcache-minilm@0.85", "gptcache-mpnet@0.80", "gptcache-minilm-sweep",
                 "verified", "always_miss", "always_hit", "exact_match"):
        assert f"  {name} " in out
    assert "GPTCache 0.1.44, all-MiniLM-L6-v2, similarity_threshold 0.80" in out
    assert main(["references", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    kinds = {r["name"]: (r["kind"], r["builder"]) for r in data["references"]}
    assert kinds["verified"] == ("pair", "pipeline.references.verified:build")
    assert kinds["gptcache-mpnet@0.80"] == ("store/lookup", "pipeline.references.gptcache_store:build")


def test_unknown_reference_is_one_line(bench, capsys):
    code = main(["eval", "--bench", bench, "--reference", "gptcache-minilm@0.8"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("error: --reference: Unknown reference 'gptcache-minilm@0.8'. Did you mean ")
    assert "'gptcache-minilm@0.80'" in err.split("?")[0]
    assert err.endswith(f"Available: {', '.join(REFERENCES.names())}\n")


def test_a_reference_whose_module_is_absent_is_listed_and_fails_in_one_line(bench, capsys, monkeypatch):
    ghost = ReferenceSpec("ghost", "not written yet", "pipeline.references.not_here:build", "pair")
    monkeypatch.setitem(REFERENCES._items, "ghost", ghost)
    assert main(["references"]) == 0
    assert "[unavailable: its module pipeline.references.not_here is not in this checkout]" in \
        capsys.readouterr().out
    code = main(["eval", "--bench", bench, "--reference", "ghost"])
    assert code == 1
    assert capsys.readouterr().err == (
        "error: --reference ghost: cannot be built here (its module pipeline.references.not_here is not "
        "in this checkout). Install the pinned requirements (bash .ci/install), or choose another "
        "(cacheeval references)\n")


def test_max_fhr_exit_codes(bench, tmp_path, capsys):
    js = tmp_path / "r.json"
    # always_hit: FHR 2/2 = 1.0 > 0.5 -> exit 1, after the report is written
    code = main(["eval", "--bench", bench, "--baseline", "always_hit", "--max-fhr", "0.5", "--json", str(js)])
    out, err = capsys.readouterr()
    assert code == 1 and js.is_file()
    assert err == ("error: always_hit: FHR 1.000 (2/2) exceeds --max-fhr 0.5. Make the cache serve fewer false "
                   "hits, or raise the limit\n")
    # exact_match: FHR 0/2 -> pass, exit 0
    code = main(["eval", "--bench", bench, "--baseline", "exact_match", "--max-fhr", "0", "--out",
                 str(tmp_path / "r.md")])
    out, err = capsys.readouterr()
    assert code == 0 and err == "exact_match: FHR 0.000 (0/2) is within --max-fhr 0: pass\n"
    # the limit itself passes: FirstWordStore shared hits one MISS row of two (FHR 0.5)
    code = main(["eval", "--bench", bench, "--cache-module", DOUBLES, "--cache-class", "FirstWordStore",
                 "--protocol", "shared", "--max-fhr", "0.5", "--out", str(tmp_path / "s.md")])
    assert code == 0 and "FHR 0.500 (1/2) is within --max-fhr 0.5: pass" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--bench", bench, "--baseline", "always_hit", "--max-fhr", "1.5"])
    assert exc.value.code == 2
    assert "expected a number from 0 to 1, got '1.5'" in capsys.readouterr().err


def test_json_report_carries_per_row_decisions_and_the_protocol(bench, tmp_path, capsys):
    js = tmp_path / "r.json"
    assert main(["eval", "--bench", bench, "--baseline", "exact_match", "--json", str(js), "--out",
                 str(tmp_path / "r.md")]) == 0
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["decisions"][:2] == [{"id": "cb-math-0001", "label": "HIT", "decision": "HIT", "confidence": None},
                                     {"id": "cb-math-0002", "label": "HIT", "decision": "HIT", "confidence": None}]
    assert [d["decision"] for d in data["decisions"]] == ["HIT", "HIT", "MISS", "MISS", "MISS"]
    assert data["protocol"]["name"] == "pair"
    assert "Protocol: pair (the cache decided each row" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_a_users_store_lookup_cache_under_both_protocols(bench, tmp_path, capsys):
    def run(protocol: str) -> tuple[dict, str]:
        js = tmp_path / f"{protocol}.json"
        code = main(["eval", "--bench", bench, "--cache-module", DOUBLES, "--cache-class", "FirstWordStore",
                     "--protocol", protocol, "--json", str(js), "--out", str(tmp_path / f"{protocol}.md")])
        assert code == 0
        return json.loads(js.read_text(encoding="utf-8")), capsys.readouterr().err

    shared, err = run("shared")
    assert "served from the evaluation-result cache" not in err
    assert ("FirstWordStore: protocol shared, 4 of 5 lookups served, wrong-entry hits 1 (1 on HIT rows, "
            "0 on MISS rows)") in err
    # row 2 ("Solve y ...") is served row 1's answer: not a TP; row 5 ("Sort ...") is served nothing
    assert shared["confusion"] == {"tp": 2, "fp": 1, "fn": 1, "tn": 1}
    assert shared["protocol"]["wrong_entry_hits"]["ids"] == ["cb-math-0002"]
    assert "Protocol: shared (store/lookup cache: every row's A stored in one cache (5 entries)" in \
        (tmp_path / "shared.md").read_text(encoding="utf-8")
    isolated, err = run("isolated")   # another protocol is another key: evaluated, not served
    assert "served from the evaluation-result cache" not in err
    assert isolated["confusion"] == {"tp": 3, "fp": 1, "fn": 0, "tn": 1}
    assert isolated["protocol"]["name"] == "isolated"
    again, err = run("shared")
    assert "served from the evaluation-result cache" in err and again["confusion"] == shared["confusion"]
    # compare the two protocols' reports on the same rows
    assert main(["compare", str(tmp_path / "shared.json"), str(tmp_path / "isolated.json")]) == 0
    assert "recall: " in capsys.readouterr().out


def test_protocol_needs_a_store_lookup_cache(bench, capsys):
    code = main(["eval", "--bench", bench, "--baseline", "exact_match", "--protocol", "shared"])
    assert code == 1
    assert capsys.readouterr().err == (
        "error: --protocol shared: 'exact_match' is a pair cache (pair -> verdict), not a store/lookup cache. "
        "Drop --protocol, or give the cache store, lookup and reset\n")
