"""The asset graph reads left to right: one group per asset module, jobs that select whole groups
(so a build cannot leave an asset out), typed values between assets, one-line docstrings, and a
verifier that raises stops the build naming the verifier and the candidate."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions, asset, load_assets_from_modules

from assets.groups import STAGES
from pipeline.core.errors import BuildError
from pipeline.app.definitions import (ASSET_MODULES, BUILD_JOBS, OTHER_JOBS, all_assets, defs, domain_job, evolving_assets,
                                  unbuilt)


def _assets_by_key():
    return {key: a for a in [*all_assets, *evolving_assets] for key in a.keys}


def test_every_asset_is_built_by_exactly_one_job():
    graph = defs.resolve_asset_graph()
    assert unbuilt() == []
    selections = [job.selection.resolve(graph) for job in (*BUILD_JOBS, *OTHER_JOBS)]
    assert sum(len(s) for s in selections) == len(graph.get_all_asset_keys())  # no asset in two jobs


def test_an_asset_left_out_of_the_jobs_is_named():
    @asset(group_name="archive")
    def scores(cachebench: list[dict]) -> dict:
        """A new stage nobody added to a job."""
        return {}

    grown = Definitions(assets=[*all_assets, *evolving_assets, scores], asset_checks=defs.asset_checks,
                        resources=defs.resources)
    assert unbuilt(grown) == [AssetKey("scores")]


def test_the_build_refuses_to_start_when_a_job_is_missing(monkeypatch, tmp_path):
    import pipeline.app.definitions as definitions
    from pipeline.app.cli.materialize import run_build

    monkeypatch.setattr(definitions, "BUILD_JOBS", BUILD_JOBS[:-1])
    with pytest.raises(BuildError, match=r"asset \w+ is in no build job"):
        run_build("smoke", tmp_path / "out", None, tmp_path / "cache")
    assert not (tmp_path / "out").exists()


def test_partitioned_assets_are_exactly_the_domain_jobs():
    graph = defs.resolve_asset_graph()
    from assets.evolving import QUARTERS, evolving_job

    partitioned = {k for k in graph.get_all_asset_keys() if graph.get(k).partitions_def is not None}
    by_quarter = {k for k in partitioned if graph.get(k).partitions_def == QUARTERS}
    assert partitioned - by_quarter == domain_job.selection.resolve(graph) == {AssetKey("candidate_rows"),
                                                                               AssetKey("verified_rows")}
    assert by_quarter == evolving_job.selection.resolve(graph)  # the quarterly slice, no part of the build


def test_one_group_per_asset_module_left_to_right():
    assert tuple(m.__name__.rsplit(".", 1)[-1] for m in ASSET_MODULES) == STAGES
    for module in ASSET_MODULES:
        for a in load_assets_from_modules([module]):
            for key in a.keys:
                assert a.group_names_by_key[key] == module.__name__.rsplit(".", 1)[-1], key
    graph = defs.resolve_asset_graph()
    # every input comes from the same stage or one to its left (the quarterly slice is no stage of the build)
    for key in {k for a in all_assets for k in a.keys}:
        for parent in graph.get(key).parent_keys:
            assert STAGES.index(graph.get(parent).group_name) <= STAGES.index(graph.get(key).group_name), (parent, key)


def test_every_asset_has_a_one_line_docstring():
    for key, a in _assets_by_key().items():
        description = a.descriptions_by_key.get(key) or ""
        assert description.strip() and "\n" not in description.strip(), key


def test_asset_values_are_typed():
    # Every input and output names its type (a value class, or a JSON document's dict / list): none is Any.
    for key, a in _assets_by_key().items():
        for d in [*a.node_def.input_defs, *a.node_def.output_defs]:
            assert not d.dagster_type.is_any, (key, d.name)


def test_a_verifier_that_raises_fails_the_build_naming_it(monkeypatch, tmp_path, capfd):
    # A crash inside a verifier is a bug, not a drop: the build stops at that domain and names the
    # verifier, the candidate and the exception, instead of coming up short of quota later.
    import domains.verify as verify_registry
    from domains.base import GenContext
    from domains.check import generate
    from pipeline.app.cli.materialize import run_build
    from pipeline.core.config import load_profile

    need = dict(load_profile("smoke").matrix["qa_factual"])
    cands, _ = generate("qa_factual", GenContext(domain="qa_factual", profile="smoke", need=need))
    victim = cands[len(cands) // 2]
    real_get = verify_registry.get

    def get(name):
        real = real_get(name)

        def verifier(c, *policy):  # policy-using verifiers are also handed the domain's policy
            if c.key == victim.key:
                raise ZeroDivisionError("planted bug")
            return real(c, *policy)
        return verifier

    monkeypatch.setattr(verify_registry, "get", get)
    out = tmp_path / "out"
    out.mkdir()
    (out / "cachebench.jsonl").write_text("committed\n")
    with pytest.raises(BuildError) as err:
        run_build("smoke", out, None, tmp_path / "cache")
    message = str(err.value)
    assert message.startswith(f"generating qa_factual failed: verified_rows: BuildError: verifier "
                              f"'{victim.verification_method}' raised ZeroDivisionError on candidate {victim.key} (")
    assert "planted bug" in message and "more" not in message
    assert (out / "cachebench.jsonl").read_text() == "committed\n"
    # Dagster's own lines went to the log file the message names (with the failed step's stack),
    # not to the console.
    logged = re.search(r"\(the Dagster log: (\S+)\)$", message)
    assert logged, message
    log = Path(logged.group(1))
    assert log.parent == tmp_path / "cache" / "logs"
    text = log.read_text(encoding="utf-8")
    assert "STEP_FAILURE" in text and "raised ZeroDivisionError" in text and "planted bug" in text
    assert 'File "' in text  # the failed step's stack
    assert "dagster - ERROR" not in capfd.readouterr().err


def test_the_ui_job_builds_every_asset_in_one_in_process_run_over_all_domains():
    from dagster import BackfillPolicy

    from domains import domain_names
    from pipeline.app.ui_job import UI_JOB_NAME

    graph = defs.resolve_asset_graph()
    job = defs.resolve_job_def(UI_JOB_NAME)
    # every asset of the build (the quarterly slice has its own job and schedule)
    assert set(job.asset_layer.executable_asset_keys) == set(graph.get_all_asset_keys()) - {
        k for a in evolving_assets for k in a.keys}
    assert job.executor_def.name == "in_process"
    # the webserver adds a job's `tags` (not its run_tags) to the runs it launches
    assert job.tags["dagster/asset_partition_range_start"] == domain_names()[0]
    assert job.tags["dagster/asset_partition_range_end"] == domain_names()[-1]
    for key in domain_job.selection.resolve(graph):
        assert graph.get(key).backfill_policy == BackfillPolicy.single_run(), key
    assert "build/ui-outputs" in job.description and "outputs/" in job.description


def test_a_run_over_several_domains_stores_each_as_its_own_partition(tmp_path):
    # What build_dataset does with candidate_rows and verified_rows, on a toy: one run over a range
    # of partitions writes one file per partition, which a one-partition run then reads back.
    from dagster import AssetIn, StaticPartitionsDefinition, asset, materialize

    from pipeline.orchestration.partitions import (PartitionedFilesystemIOManager, by_domain, for_each_domain, per_domain,
                                     per_domain_asset)
    from pipeline.stages.values import DomainCandidates

    def record(domain: str, n: int) -> DomainCandidates:
        return DomainCandidates(domain, (), {"n": n})

    parts = StaticPartitionsDefinition(["a", "b", "c"])
    record_type = per_domain(DomainCandidates, "toy")

    @per_domain_asset(parts, dagster_type=record_type)
    def made(context):
        """One record per domain."""
        return for_each_domain(context, lambda d: (record(d, ord(d)), {"n": ord(d)}))

    @per_domain_asset(parts, dagster_type=record_type, ins={"made": AssetIn(dagster_type=record_type)})
    def doubled(context, made):
        """Each record doubled."""
        records = by_domain(made)
        return for_each_domain(context, lambda d: (record(d, 2 * records[d].drops["n"]), {}))

    @asset
    def total(doubled: dict) -> int:
        """Every domain summed."""
        return sum(r.drops["n"] for r in doubled.values())

    io = {"io_manager": PartitionedFilesystemIOManager(base_dir=str(tmp_path))}
    ranged = materialize([made, doubled, total], resources=io,
                         tags={"dagster/asset_partition_range_start": "a", "dagster/asset_partition_range_end": "c"})
    assert ranged.success and ranged.output_for_node("total") == 2 * (97 + 98 + 99)
    assert sorted(p.name for p in (tmp_path / "made").iterdir()) == ["a", "b", "c"]
    mats = [e.materialization for e in ranged.get_asset_materialization_events()]
    assert {m.partition: m.metadata["n"].value for m in mats if m.asset_key.path == ["made"]} == \
           {"a": 97, "b": 98, "c": 99}  # each domain's metadata on its own partition
    single = materialize([made, doubled], selection=[doubled.key], partition_key="b", resources=io)
    assert single.output_for_node("doubled") == record("b", 196)
