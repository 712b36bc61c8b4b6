"""The quarterly adversarial slice without models: quarters and the schedule, the held-out rule, the
slice's spread and its blocking checks (a target that hits everything, one that never false-hits),
the slice ids in the row contract, the configuration's errors."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from domains import domain_names
from domains.base import Candidate, Provenance
from pipeline.core.config import ConfigError
from pipeline.core.errors import InputError
from pipeline.evolving import slicing as ev
from pipeline.evolving import checks

CFG = ev.EvolvingConfig(start="2026-Q1", rows=50, max_domain_share=0.2, candidates_per_domain=300, target="verified")


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


def _cand(domain: str, n: int, operator: str) -> Candidate:
    return Candidate(domain=domain, subcategory="s", label="ADVERSARIAL", query_a=f"seed {domain} {n}",
                     query_b=f"perturbed {domain} {n}", expected_answer_a="a", expected_answer_b="b", rationale="r",
                     verification_method="regex", verification_payload={}, construction_method="adversarial_perturbation",
                     source="curated", real_world_grounding="g",
                     provenance=Provenance("t", "1", operator=operator, source_record=f"rec{n}"))


def _rows(per_domain: int = 20, seeds: int | None = None) -> list[dict]:
    rows = []
    for domain in domain_names():
        for n in range(per_domain):
            c = _cand(domain, n, f"op{n % 3}")
            if seeds:  # several perturbations of one seed
                c = c.with_(query_a=f"seed {domain} {n % seeds}")
            rid = f"cb-{domain}-2026q4-{n + 1:04d}"
            rows.append({"id": rid, "domain": domain, "binary_label": "MISS", "subcategory": f"sub{n % 2}",
                         "query_a": c.query_a, "query_b": c.query_b, "context_a": None, "context_b": None,
                         "system_prompt_a": None, "system_prompt_b": None,
                         "provenance": {"evolving": ev.provenance_extra("2026-Q4", c)}})
    return rows


def test_a_target_that_hits_everything_gives_exactly_the_rows_spread_over_domains_and_operators():
    rows = _rows()
    choice = ev.choose_slice(rows, {r["id"]: True for r in rows}, CFG, "2026-Q4", "code", domain_names())
    chosen = ev.slice_rows(rows, choice, "2026-Q4", domain_names())
    assert len(chosen) == 50 and ev.shortfall(choice, CFG, "always") is None
    per_domain = {d: sum(r["domain"] == d for r in chosen) for d in domain_names()}
    assert set(per_domain.values()) == {5}  # ten domains taking turns
    assert {r["provenance"]["evolving"]["operator"] for r in chosen} == {"op0", "op1", "op2"}
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
        "the target math-only was fooled by 60 of 600 verified candidates (10 usable under the cap of 10 rows per "
        "domain, max_domain_share 0.2, and one row per request); the slice is 40 short")


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
    path.write_text("start: 2026-Q1\nrows: 0\nmax_domain_share: 0.2\ncandidates_per_domain: 3\ntarget: verified\n")
    with pytest.raises(ConfigError, match="evolving.yaml: rows must be a positive integer"):
        ev.load_config(path)
    path.write_text("start: 2026-Q9\nrows: 5\nmax_domain_share: 0.2\ncandidates_per_domain: 3\ntarget: verified\n")
    with pytest.raises(InputError, match="evolving.yaml: start '2026-Q9': not a quarter"):
        ev.load_config(path)
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
