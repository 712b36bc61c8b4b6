"""The quarterly adversarial slice without models: quarters and the schedule, the held-out rule, the
slice's spread and its blocking checks (a target that hits everything, one that never false-hits),
the slice ids in the row contract, the configuration's errors."""
from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone

import pytest

from domains import domain_names
from domains.base import Candidate, Provenance
from pipeline.core.config import ConfigError
from pipeline.core.errors import InputError
from pipeline.evolving import slicing as ev
from pipeline.evolving import checks

CFG = ev.EvolvingConfig(start="2026-Q1", rows=50, max_domain_share=0.2, candidates_per_domain=300, target="verified",
                        max_operator_share=0.2, min_domains=6)
# The open-world trap operators the extract applies to real requests (synthetic rows here).
TRAPS = ("entity_swap", "number_change", "scope_change", "polarity_flip", "comparison_flip", "unit_change",
         "context_detail_change")


def test_the_schedule_tick_on_2027_01_01_requests_the_2027_q1_partition():
    from dagster import build_schedule_context

    from assets.evolving import QUARTER_TAG
    from pipeline.app.definitions import defs

    schedule = defs.get_repository_def().get_schedule_def("quarterly_adversarial_slice")
    assert schedule.cron_schedule == "0 0 1 1,4,7,10 *"
    for when, quarter in ((datetime(2027, 1, 1, tzinfo=timezone.utc), "2027-Q1"),
                          (datetime(2026, 10, 1, tzinfo=timezone.utc), "2026-Q4")):
        ctx = build_schedule_context(scheduled_execution_time=when, repository_def=defs.get_repository_def())
        [request] = schedule.evaluate_tick(ctx).run_requests
        assert request.partition_key == ev.quarter_key(quarter)
        assert request.tags[QUARTER_TAG] == quarter
        assert request.job_name in (None, "evolving_job")


def test_a_tick_before_the_first_quarter_is_skipped_saying_why():
    # The UI's "Preview tick result" offers the ten ticks before today first (Jul 1, 2024 in late 2026):
    # before configs/evolving.yaml's start there is no partition, so no run and no stack trace.
    from dagster import build_schedule_context

    from pipeline.app.definitions import defs

    schedule = defs.get_repository_def().get_schedule_def("quarterly_adversarial_slice")
    for when in (datetime(2024, 7, 1, tzinfo=timezone.utc), datetime(2025, 10, 1, tzinfo=timezone.utc)):
        ctx = build_schedule_context(scheduled_execution_time=when, repository_def=defs.get_repository_def())
        result = schedule.evaluate_tick(ctx)
        assert not result.run_requests
        assert result.skip_message == (f"{when:%Y-%m-%d} is before 2026-Q1, the first quarter partition "
                                       "(configs/evolving.yaml start): no slice to make. The first tick that runs "
                                       "is 2026-01-01.")
    ctx = build_schedule_context(scheduled_execution_time=datetime(2026, 1, 1, tzinfo=timezone.utc),
                                 repository_def=defs.get_repository_def())
    [request] = schedule.evaluate_tick(ctx).run_requests
    assert request.partition_key == "2026-01-01"


def test_quarter_partitions_start_at_the_configured_quarter_and_read_as_quarters():
    from assets.evolving import QUARTERS

    keys = QUARTERS.get_partition_keys(current_time=datetime(2027, 2, 1, tzinfo=timezone.utc))
    assert [ev.quarter_name(k) for k in keys] == ["2026-Q1", "2026-Q2", "2026-Q3", "2026-Q4", "2027-Q1"]
    assert ev.quarter_key("2026-Q4") == "2026-10-01" and ev.quarter_name("2026-10-01") == "2026-Q4"
    for bad in ("2026-Q5", "2026Q4", "Q4-2026"):
        with pytest.raises(InputError, match="Write YYYY-QN"):
            ev.parse_quarter(bad)


def test_the_evolving_job_is_not_part_of_the_build():
    from pipeline.app.definitions import build_dataset, defs, unbuilt

    graph = defs.resolve_asset_graph()
    assert unbuilt() == []
    assert not any(k.path[-1].startswith("evolving_") for k in build_dataset.selection.resolve(graph))


def _cand(domain: str, n: int, operator: str | None, method: str = "adversarial_perturbation",
          rule: str | None = None) -> Candidate:
    return Candidate(domain=domain, subcategory="s", label="ADVERSARIAL", query_a=f"seed {domain} {n}",
                     query_b=f"perturbed {domain} {n}", expected_answer_a="a", expected_answer_b="b", rationale="r",
                     verification_method="regex", verification_payload={}, construction_method=method,
                     source="curated", real_world_grounding="g",
                     provenance=Provenance("t", "1", operator=operator, source_record=f"rec{n}", template_id=rule))


def _row(c: Candidate, rid: str, subcategory: str) -> dict:
    return {"id": rid, "domain": c.domain, "binary_label": "MISS", "subcategory": subcategory,
            "construction_method": c.construction_method, "query_a": c.query_a, "query_b": c.query_b,
            "context_a": None, "context_b": None, "system_prompt_a": None, "system_prompt_b": None,
            "provenance": {"evolving": ev.provenance_extra("2026-Q4", c)}}


def _rows(per_domain: int = 20, seeds: int | None = None, ops=TRAPS, domains=None, methods=("adversarial_perturbation",),
          start: int = 0) -> list[dict]:
    rows = []
    for domain in domains or domain_names():
        for n in range(start, start + per_domain):
            c = _cand(domain, n, ops[n % len(ops)], methods[n % len(methods)])
            if seeds:  # several perturbations of one seed
                c = c.with_(query_a=f"seed {domain} {n % seeds}")
            rows.append(_row(c, f"cb-{domain}-2026q4-{n + 1:04d}", f"sub{n % 2}"))
    return rows


def _chosen(rows, cfg=CFG, hits=None, quarter="2026-Q4", target="code"):
    hits = {r["id"]: True for r in rows} if hits is None else hits
    choice = ev.choose_slice(rows, hits, cfg, quarter, target, domain_names())
    return choice, ev.slice_rows(rows, choice, quarter, domain_names())


def test_a_target_that_hits_everything_gives_exactly_the_rows_spread_over_domains_and_operators():
    rows = _rows()
    choice = ev.choose_slice(rows, {r["id"]: True for r in rows}, CFG, "2026-Q4", "code", domain_names())
    chosen = ev.slice_rows(rows, choice, "2026-Q4", domain_names())
    assert len(chosen) == 50 and ev.shortfall(choice, CFG, "always") is None
    per_domain = {d: sum(r["domain"] == d for r in chosen) for d in domain_names()}
    assert set(per_domain.values()) == {5}  # ten domains taking turns
    assert {r["provenance"]["evolving"]["operator"] for r in chosen} == set(TRAPS)
    assert len({r["id"] for r in chosen}) == 50 and all("-2026q4-" in r["id"] for r in chosen)
    # the order is seeded from the quarter and the target's identity: another target, another slice
    other = ev.choose_slice(rows, {r["id"]: True for r in rows}, CFG, "2026-Q4", "another", domain_names())
    assert other.chosen != choice.chosen and sorted(other.chosen) != sorted(choice.chosen)


def test_no_domain_goes_above_its_share_even_when_only_one_domain_fools_the_target():
    rows = _rows(per_domain=60)
    hits = {r["id"]: r["domain"] == "math" for r in rows}
    choice = ev.choose_slice(rows, hits, CFG, "2026-Q4", "code", domain_names())
    assert len(choice.chosen) == CFG.domain_cap == 10
    assert ev.shortfall(choice, CFG, "math-only") == (
        "the target math-only was fooled by 60 of 600 verified candidates (10 usable under the caps of 10 rows per "
        "domain, max_domain_share 0.2, and 10 per operator, max_operator_share 0.2, and one row per request); the "
        "slice is 40 short")


def test_a_seed_is_used_once_per_slice_the_other_perturbations_of_it_are_left_out_and_counted():
    rows = _rows(per_domain=20, seeds=4)  # 20 rows per domain over 4 seeds
    choice = ev.choose_slice(rows, {r["id"]: True for r in rows}, CFG, "2026-Q4", "code", domain_names())
    chosen = ev.slice_rows(rows, choice, "2026-Q4", domain_names())
    assert choice.shared == 16 * len(domain_names()) and len(chosen) == 4 * len(domain_names())
    assert len(ev.used_requests(chosen)) == 2 * len(chosen)  # no request twice
    assert ev.shortfall(choice, CFG, "always").endswith("the slice is 10 short")


def test_a_target_that_never_false_hits_fails_the_rows_check_with_the_numbers_instead_of_padding():
    rows = _rows()
    choice = ev.choose_slice(rows, {r["id"]: False for r in rows}, CFG, "2026-Q4", "code", domain_names())
    short = ev.shortfall(choice, CFG, "never")
    assert short == "the target never was fooled by 0 of 200 verified candidates; the slice is 50 short"
    value = {"rows": [], "short": short, "choice": choice}
    problems, meta = checks.SLICE_CHECKS["slice_rows_exact"](value, CFG, None, None)
    assert problems == [short] and meta["fooled"] == 0 and meta["candidates"] == 200


CFG_Q = ev.EvolvingConfig(start="2026-Q1", rows=50, max_domain_share=0.3, candidates_per_domain=300, target="verified",
                          max_operator_share=0.2, min_domains=6)   # configs/evolving.yaml's caps: 15 a domain, 10 an operator


def _ops(chosen) -> Counter:
    return Counter(r["provenance"]["evolving"]["operator"] for r in chosen)


def test_no_operator_goes_above_its_share_when_one_operator_fools_the_target_everywhere():
    # Today's failure mode: one template operator fools the target in every domain (tool_list_swap,
    # request_slot_swap). It gets 10 rows (20%), the open-world traps and the other methods the rest.
    rows = _rows(per_domain=30, ops=("tool_list_swap",), methods=("adversarial_perturbation",))
    rows += _rows(per_domain=7, ops=TRAPS, methods=("real_traffic_mined", "existing_benchmark"), start=35)
    choice, chosen = _chosen(rows, CFG_Q)
    assert len(chosen) == 50 and max(_ops(chosen).values()) == _ops(chosen)["tool_list_swap"] == 10
    assert choice.operator_capped > 0 and ev.shortfall(choice, CFG_Q, "t") is None
    assert len({r["domain"] for r in chosen}) == len(domain_names())
    # only two operators fool it: 20 rows, never padded with rows that do not fool it
    two = _rows(per_domain=30, ops=("tool_list_swap", "request_slot_swap"))
    choice, chosen = _chosen(two, CFG_Q)
    assert len(chosen) == 20 and set(_ops(chosen).values()) == {10}
    assert ev.shortfall(choice, CFG_Q, "t") == (
        f"the target t was fooled by {len(two)} of {len(two)} verified candidates (20 usable under the caps of 15 rows "
        "per domain, max_domain_share 0.3, and 10 per operator, max_operator_share 0.2, and one row per request); "
        "the slice is 30 short")


def test_the_operators_and_methods_take_turns_across_the_slice():
    # Every domain offers the same seven traps over three methods: the slice holds each within one row of
    # the others (not the first five in every domain's sorted order), and each method as evenly.
    rows = _rows(per_domain=21, methods=("adversarial_perturbation", "real_traffic_mined", "lm_generated"))
    _, chosen = _chosen(rows, CFG_Q)
    per_op = _ops(chosen)
    assert len(chosen) == 50 and set(per_op) == set(TRAPS) and max(per_op.values()) - min(per_op.values()) <= 1
    methods = Counter(r["construction_method"] for r in chosen)
    assert max(methods.values()) - min(methods.values()) <= 1
    # a domain whose one rare-method row fools the target takes it by its second turn (methods in turns)
    rows = _rows(per_domain=12, ops=TRAPS[:4], domains=["math"]) + [
        _row(_cand("math", 99, None, "real_traffic_mined", rule="follow_up"), "cb-math-2026q4-0100", "sub0")]
    choice = ev.choose_slice(rows, {r["id"]: True for r in rows}, CFG_Q, "2026-Q4", "code", domain_names())
    assert "cb-math-2026q4-0100" in choice.chosen[:2]


def test_the_slice_covers_every_fooled_domain_and_the_check_fails_below_min_domains():
    rows = _rows(per_domain=1, domains=domain_names()[:6], start=40) + _rows(per_domain=40, domains=domain_names()[:1])
    _, chosen = _chosen(rows, CFG_Q)
    assert len({r["domain"] for r in chosen}) == 6   # one fooled row is enough for a domain's turn
    five = _rows(per_domain=30, domains=domain_names()[:5])
    choice, chosen = _chosen(five, CFG_Q)
    assert len(chosen) == 50   # 50 rows, but in five domains: the check blocks the slice
    value = {"rows": chosen, "choice": choice}
    problems, meta = checks.SLICE_CHECKS["slice_min_domains"](value, CFG_Q, None, None)
    assert problems == [f"5 domains ({', '.join(sorted(domain_names()[:5]))}), fewer than min_domains 6; the target "
                        "was fooled in 5 domains"] and meta["domains"] == 5


def test_the_share_checks_fail_on_a_slice_above_a_cap():
    rows = _rows(per_domain=12, ops=("tool_list_swap",), domains=domain_names()[:5])  # 12 a domain, 60 of one operator
    value = {"rows": rows, "choice": ev.SliceChoice((), 60, 60)}
    cfg = ev.EvolvingConfig("2026-Q1", 60, 0.19, 300, "verified", 0.2, 6)
    problems, meta = checks.SLICE_CHECKS["slice_operator_share"](value, cfg, None, None)
    assert problems == ["operator tool_list_swap holds 60 rows, above its cap of 12 (max_operator_share 0.2)"]
    assert meta["max_rows"] == 60 and meta["cap"] == 12
    problems, _ = checks.SLICE_CHECKS["slice_domain_share"](value, cfg, None, None)
    assert problems[0] == f"domain {sorted(domain_names()[:5])[0]} holds 12 rows, above its cap of 11 (max_domain_share 0.19)"
    assert len(problems) == 5
    ok = {"rows": _chosen(_rows(), CFG_Q)[1], "choice": None}
    assert not any(checks.SLICE_CHECKS[n](ok, CFG_Q, None, None)[0] for n in ("slice_operator_share", "slice_domain_share"))


def test_the_slice_is_a_function_of_the_quarter_the_target_and_the_rows_not_of_their_order():
    rows = _rows(per_domain=25, methods=("adversarial_perturbation", "real_traffic_mined"))
    first, _ = _chosen(rows, CFG_Q)
    again, _ = _chosen(list(reversed(rows)), CFG_Q)
    assert first == again
    assert _chosen(rows, CFG_Q, quarter="2027-Q1")[0].chosen != first.chosen
    assert _chosen(rows, CFG_Q, target="another")[0].chosen != first.chosen


def test_the_operator_of_a_row_is_its_perturbation_operator_else_its_mining_rule_else_its_method():
    assert ev.operator_of(_cand("qa_factual", 1, "entity_swap", "real_traffic_mined", rule="general")) == "entity_swap"
    assert ev.operator_of(_cand("conversational", 1, None, "real_traffic_mined", rule="follow_up")) == "follow_up"
    assert ev.operator_of(_cand("qa_open", 1, None, "existing_benchmark", rule="paws")) == "existing_benchmark"
    assert ev.operator_of(_cand("qa_open", 1, None, "lm_generated")) == "lm_generated"


def test_the_pool_asks_every_domain_for_near_misses_and_passes_the_extract_when_there_is_one():
    import dataclasses
    import importlib.util

    from domains.base import GenContext

    ctx = ev.pool_context("math")
    assert (ctx.profile, dict(ctx.need)) == ("evolving", {"ADVERSARIAL": ev.POOL_NEED})
    if "extract" in {f.name for f in dataclasses.fields(GenContext)}:   # once the extract is merged
        marker = object()
        assert ev.pool_context("math", extract=marker).extract is marker
    if importlib.util.find_spec("domains.corpora.extract") is None:
        assert ev.pool_extract() is None


def test_held_out_drops_every_candidate_whose_request_the_main_benchmark_uses():
    cands = [_cand("math", n, "sign_flip") for n in range(6)]
    used = ev.used_requests([{"query_a": "Seed math 1.", "context_a": None, "system_prompt_a": None,
                              "query_b": "PERTURBED   math 4", "context_b": None, "system_prompt_b": None}])
    kept, drops = ev.held_out("math", "2026-Q4", cands, used, per_domain=3)
    assert {c.query_a for c in kept} <= {"seed math 0", "seed math 2", "seed math 3", "seed math 5"}
    assert drops == {"seed_in_main_benchmark_or_earlier_quarter": 2, "beyond_candidates_per_domain": 1}
    again, _ = ev.held_out("math", "2026-Q4", list(reversed(cands)), used, per_domain=3)
    later, _ = ev.held_out("math", "2027-Q1", cands, used, per_domain=3)
    assert again == kept  # a function of the quarter and the inputs, not of their order
    assert [c.key for c in later] != [c.key for c in kept]  # seeded from the quarter


def test_slice_ids_hold_to_the_row_contract_and_never_collide_with_the_main_benchmark():
    from pipeline.harness.contract import row_schema

    import re

    pattern = re.compile(row_schema(domain_names())["properties"]["id"]["pattern"])
    assert pattern.match("cb-math-2026q4-0001") and pattern.match("cb-math-0001")
    assert not pattern.match("cb-math-2026q5-0001") and not pattern.match("cb-nodomain-2026q4-0001")


def test_a_bad_configuration_is_one_line_naming_the_file_and_key(tmp_path):
    path = tmp_path / "evolving.yaml"
    good = {"start": "2026-Q1", "rows": 5, "max_domain_share": 0.2, "max_operator_share": 0.2, "min_domains": 2,
            "candidates_per_domain": 3, "target": "verified"}

    def write(**changes):
        path.write_text("".join(f"{k}: {v}\n" for k, v in {**good, **changes}.items()))

    for changes, error in (({"rows": 0}, "evolving.yaml: rows must be a positive integer"),
                           ({"max_operator_share": 1.5}, r"evolving.yaml: max_operator_share must be a number in \(0, 1\]"),
                           ({"min_domains": 0}, "evolving.yaml: min_domains must be a positive integer"),
                           ({"min_domains": 6}, r"evolving.yaml: min_domains \(6\) cannot exceed rows \(5\)")):
        write(**changes)
        with pytest.raises(ConfigError, match=error):
            ev.load_config(path)
    path.write_text("".join(f"{k}: {v}\n" for k, v in good.items() if k != "min_domains"))
    with pytest.raises(ConfigError, match="evolving.yaml: missing key.s. min_domains"):
        ev.load_config(path)
    write(start="2026-Q9")
    with pytest.raises(InputError, match="evolving.yaml: start '2026-Q9': not a quarter"):
        ev.load_config(path)
    write()
    assert ev.load_config(path).operator_cap == 1 and ev.load_config(path).min_domains == 2
    cfg = ev.load_config()
    assert (cfg.domain_cap, cfg.operator_cap, cfg.min_domains) == (15, 10, 6)  # configs/evolving.yaml
    assert ev.load_config() == ev.load_config(ev.CONFIG_FILE)


def test_evolve_refuses_a_quarter_that_is_no_partition_in_one_line(capsys):
    from pipeline.app.cli import main

    assert main(["evolve", "--quarter", "2026-13"]) == 1
    assert capsys.readouterr().err.strip() == "error: --quarter '2026-13': not a quarter. Write YYYY-QN, e.g. 2026-Q4"
    assert main(["evolve", "--quarter", "2025-Q4"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --quarter 2025-Q4: no such partition; quarters run from 2026-Q1") and "\n" not in err


def test_the_slice_is_seeded_from_the_targets_behaviour_not_from_where_its_code_lives(tmp_path, monkeypatch):
    # The same cache (same settings and model snapshot) in two differently written modules: the code
    # hash differs (provenance), the behaviour key that seeds the slice's order does not.
    import importlib

    from pipeline.evolving.scoring import identity_of

    body = "MODEL_SNAPSHOT = 'm@1'\nSETTINGS = {'threshold': 0.8}\n\nclass C:\n    model_snapshot = MODEL_SNAPSHOT\n" \
           "    settings = SETTINGS\n\n    def __call__(self, row):\n        return None\n"
    (tmp_path / "where_a.py").write_text(body)
    (tmp_path / "where_b.py").write_text("# moved here\n" + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    a = identity_of("mine", "pair", importlib.import_module("where_a").C())
    b = identity_of("mine", "pair", importlib.import_module("where_b").C())
    assert a["code_sha256"] != b["code_sha256"] and a["behaviour_sha256"] == b["behaviour_sha256"]
    other = identity_of("mine", "pair", type("D", (), {"model_snapshot": "m@1", "settings": {"threshold": 0.9},
                                                       "__call__": lambda self, row: None})())
    assert other["behaviour_sha256"] != a["behaviour_sha256"]


def test_a_build_of_another_benchmark_leaves_the_committed_slices_alone(tmp_path, capsys, monkeypatch):
    # `cacheeval build` rebuilds the committed slices (to fill a later check's caches) only on the
    # benchmark they were made on: on any other, a check could read nothing it made.
    from types import SimpleNamespace

    import pipeline.app.cli.evolve as evolve_cli
    from pipeline.app.cli.build import _warm_slices
    from pipeline.core import settings
    from pipeline.core.paths import OUTPUTS

    (tmp_path / "cachebench.jsonl").write_text('{"id": "another benchmark"}\n', encoding="utf-8")
    monkeypatch.setattr(evolve_cli, "check_slices", lambda *a, **k: pytest.fail("slices rebuilt on another benchmark"))
    profile = json.loads((OUTPUTS / "manifest.json").read_text(encoding="utf-8"))["profile"]
    _warm_slices(SimpleNamespace(profile=profile, out_dir=str(tmp_path)), settings.resolve(), False)
    assert "the committed adversarial slices were made on another benchmark" in capsys.readouterr().out


def test_a_graded_candidate_row_has_the_bytes_of_one_assembled_with_its_grade(monkeypatch, tmp_path):
    # The slice grades only the candidates that fool its target, after they are scored ungraded; the
    # grade must land where the assembled row holds it, or the slice's bytes would change.
    from domains.base import Outcome
    from pipeline.core.writer import jsonl_bytes
    from pipeline.evolving import scoring as sc

    c, outcome = _cand("math", 3, "sign_flip"), Outcome("t1", True, "ok", {"answer_a": "1", "answer_b": "2"})
    votes = {"e5_small_q4": True, "minilm_l6": False, "mpnet_base": False, "paraphrase_minilm_l3": True,
             "wordllama_256": False}
    extra = ev.provenance_extra("2026-Q4", c)
    monkeypatch.setattr(sc, "difficulty", lambda pairs, *a, **k: [("medium", votes)] * len(pairs))
    ungraded = ev.to_row(c, outcome, "cb-math-2026q4-0003", None, {}, extra)
    assert ungraded["difficulty"] is None and ungraded["provenance"]["difficulty_votes"] == {}
    graded = sc.grade([ungraded], tmp_path, tmp_path)
    assert jsonl_bytes(graded) == jsonl_bytes([ev.to_row(c, outcome, "cb-math-2026q4-0003", "medium", votes, extra)])
    assert ungraded["difficulty"] is None  # a copy: the scored row is left as it was
