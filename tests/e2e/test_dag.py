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
    import pipeline.app.jobs as jobs   # where the CLI takes the build's jobs from
    from pipeline.app.cli.materialize import run_build

    monkeypatch.setattr(jobs, "BUILD_JOBS", BUILD_JOBS[:-1])
    with pytest.raises(BuildError, match=r"asset \w+ is in no build job"):
        run_build("smoke", tmp_path / "out", None, tmp_path / "cache")
    assert not (tmp_path / "out").exists()


def test_partitioned_assets_are_exactly_the_domain_jobs():
    # The CLI's build: candidate_rows and verified_rows partitioned by domain, one domain per run.
    from assets.evolving import QUARTERS, evolving_job

    build = Definitions(assets=[*all_assets, *evolving_assets], asset_checks=defs.asset_checks,
                        resources=defs.resources).resolve_asset_graph()
    per_domain = {k for k in build.get_all_asset_keys() if build.get(k).partitions_def is not None} - {
        k for a in evolving_assets for k in a.keys}
    assert per_domain == domain_job.selection.resolve(build) == {AssetKey("candidate_rows"), AssetKey("verified_rows")}
    # The UI's: no asset of the build is partitioned (one click, one run); the quarterly slice is.
    graph = defs.resolve_asset_graph()
    partitioned = {k for k in graph.get_all_asset_keys() if graph.get(k).partitions_def is not None}
    assert {graph.get(k).partitions_def for k in partitioned} == {QUARTERS}
    assert partitioned == evolving_job.selection.resolve(graph)  # the quarterly slice, no part of the build
    assert graph.get_all_asset_keys() == build.get_all_asset_keys()  # the same assets either way


def test_the_slice_draws_its_edge_from_the_benchmark_it_reads():
    graph = defs.resolve_asset_graph()
    for name in ("evolving_candidates", "evolving_scored", "evolving_files"):
        assert AssetKey("benchmark_files") in graph.get(AssetKey(name)).parent_keys, name
    for a in evolving_assets:  # a dep, not an input: nothing of the build is loaded
        assert all(d.dagster_type.is_nothing for d in a.node_def.input_defs if d.name == "benchmark_files")


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
    from pipeline.app.ui_job import DEFAULT_OUT_DIR, UI_JOB_NAME

    graph = defs.resolve_asset_graph()
    job = defs.resolve_job_def(UI_JOB_NAME)
    # every asset of the build (the quarterly slice has its own job and schedule)
    assert set(job.asset_layer.executable_asset_keys) == set(graph.get_all_asset_keys()) - {
        k for a in evolving_assets for k in a.keys}
    assert job.executor_def.name == "in_process"
    # not partitioned: the UI's "Materialize all" launches one run at once, no partition asked for
    assert job.partitions_def is None and not job.tags
    for key in job.asset_layer.executable_asset_keys:
        assert graph.get(key).partitions_def is None, key
    assert DEFAULT_OUT_DIR in job.description and "outputs/" in job.description and "Materialize all" in job.description
    # its runs use the build resource's defaults: v1.1 into build/ui-outputs/
    assert defs.resources["build"].profile == "v1.1" and defs.resources["build"].out_dir == DEFAULT_OUT_DIR


def test_a_run_that_names_no_executor_forks_its_step_processes_from_one_preloaded_server():
    # The asset graph's Materialize of a selection, `dagster asset materialize` and extract_corpora:
    # each step in its own process (tests/domains/test_mining.py runs one), forked from a forkserver
    # that imported the definitions once, not a new interpreter per step.
    for job in (defs.resolve_implicit_global_asset_job_def(), defs.resolve_job_def("extract_corpora")):
        resolved = job.executor_def.apply_config_mapping({})
        assert resolved.success and resolved.value["config"]["start_method"] == {
            "forkserver": {"preload_modules": ["pipeline.app.definitions"]}}, job.name


def test_the_ui_defaults_come_from_the_environment(monkeypatch):
    from pipeline.app.ui_job import ui_build_defaults, ui_job_kwargs

    monkeypatch.setenv("CACHEEVAL_UI_PROFILE", "smoke")
    monkeypatch.setenv("CACHEEVAL_UI_OUT_DIR", "/tmp/somewhere")
    assert ui_build_defaults() == {"profile": "smoke", "out_dir": "/tmp/somewhere"}
    assert "Profile smoke, written into /tmp/somewhere/" in ui_job_kwargs()["description"]


def test_the_unpartitioned_form_runs_every_domain_in_one_step_and_reads_like_the_partitions(tmp_path):
    # What the UI's candidate_rows and verified_rows do, on a toy: the same code as the partitioned
    # form, one step over every registered domain; a reader of all domains gets the same dict.
    from dagster import AssetIn, StaticPartitionsDefinition, asset, materialize

    from domains import domain_names
    from pipeline.orchestration.partitions import (PartitionedFilesystemIOManager, by_domain, for_each_domain,
                                                   per_domain, per_domain_asset, unpartitioned)
    from pipeline.stages.values import DomainCandidates

    parts = StaticPartitionsDefinition(domain_names())
    record_type = per_domain(DomainCandidates, "toy")

    @per_domain_asset(parts, dagster_type=record_type)
    def toy_made(context):
        """One record per domain."""
        return for_each_domain(context, lambda d: (DomainCandidates(d, (), {"n": len(d)}),
                                                   {"n": len(d), "kind": "toy", "drops": {"x": 1},
                                                    "nested": {"a": {"b": 1}}}))

    @per_domain_asset(parts, dagster_type=record_type, ins={"toy_made": AssetIn(dagster_type=record_type)})
    def toy_doubled(context, toy_made):
        """Each record doubled."""
        records = by_domain(toy_made)
        return for_each_domain(context, lambda d: (DomainCandidates(d, (), {"n": 2 * records[d].drops["n"]}), {}))

    @asset
    def toy_total(toy_doubled: dict) -> int:
        """Every domain summed."""
        return sum(r.drops["n"] for r in toy_doubled.values())

    expected = 2 * sum(len(d) for d in domain_names())
    flat = [unpartitioned(toy_made), unpartitioned(toy_doubled), toy_total]
    assert all(a.partitions_def is None for a in flat[:2]) and flat[0].key == toy_made.key
    io = {"io_manager": PartitionedFilesystemIOManager(base_dir=str(tmp_path / "flat"))}
    res = materialize(flat, resources=io)
    assert res.success and res.output_for_node("toy_total") == expected
    assert set(res.output_for_node("toy_doubled")) == set(domain_names())
    [made] = [e.materialization for e in res.get_asset_materialization_events()
              if e.materialization.asset_key == toy_made.key]
    assert made.partition is None
    table = made.metadata["per_domain"].value  # the domains' numbers in one table, with totals
    assert all(f"| {d} | {len(d)} |" in table for d in domain_names())
    assert f"| **total** | {sum(len(d) for d in domain_names())} |" in table
    assert made.metadata["kind"].value == "toy"  # shared by every domain
    assert made.metadata["drops"].value.splitlines()[:3] == ["| domain | x |", "|---|---|", f"| {domain_names()[0]} | 1 |"]
    assert made.metadata["nested"].value == {d: {"a": {"b": 1}} for d in domain_names()}
    io = {"io_manager": PartitionedFilesystemIOManager(base_dir=str(tmp_path / "parts"))}
    ranged = materialize([toy_made, toy_doubled, toy_total], resources=io, tags={
        "dagster/asset_partition_range_start": domain_names()[0], "dagster/asset_partition_range_end": domain_names()[-1]})
    assert ranged.output_for_node("toy_total") == expected


def test_plots_and_headlines_read_as_pictures_and_tables(tmp_path):
    import base64

    from pipeline.orchestration.asset_metadata import PREVIEW_COLUMNS, headline_table, png_image

    png = Path(__file__).resolve().parents[2] / "outputs" / "reports" / "calibration.png"
    md = png_image(png, "a plot").value
    assert md.startswith("![a plot](data:image/png;base64,") and md.rstrip().endswith(")")
    assert base64.b64decode(md.split("base64,", 1)[1].rstrip().rstrip(")")) == png.read_bytes()
    table = headline_table({"a (x)": {"f1": 0.5, "fhr": None}, "b": {"f1": 1, "fhr": 0.25}}, "configuration").value
    assert table.splitlines() == ["| configuration | f1 | fhr |", "|---|---|---|", "| a (x) | 0.5 | n/a |",
                                  "| b | 1 | 0.25 |"]
    assert "verification_method" in PREVIEW_COLUMNS  # why an EQUIV row can be a MISS (policy_no_cache)


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


def test_the_cli_builds_memory_io_manager_reads_what_the_pickle_files_read(tmp_path):
    # `cacheeval build` keeps its runs' values in process (pipeline/orchestration/memory_io.py): run by
    # run as the build runs them (one partition per run, then a reader of every partition, an op
    # inside a graph asset), each value is the one the filesystem IO manager gives back.
    from dagster import AssetIn, DagsterInstance, StaticPartitionsDefinition, asset, graph_asset, materialize, op

    from pipeline.orchestration.memory_io import MemoryIOManager
    from pipeline.orchestration.partitions import (PartitionedFilesystemIOManager, by_domain, for_each_domain, per_domain,
                                                   per_domain_asset)
    from pipeline.stages.values import DomainCandidates

    parts = StaticPartitionsDefinition(["a", "b", "c"])
    record_type = per_domain(DomainCandidates, "toy")

    @op
    def shard() -> int:
        return 5

    @op
    def merged(n: int) -> dict:
        return {"seed": n}

    @graph_asset
    def source():
        return merged(shard())

    @per_domain_asset(parts, dagster_type=record_type)
    def made(context, source: dict):
        """One record per domain."""
        return for_each_domain(context, lambda d: (DomainCandidates(d, (), {"n": ord(d) + source["seed"]}), {}))

    @per_domain_asset(parts, dagster_type=record_type, ins={"made": AssetIn(dagster_type=record_type)})
    def doubled(context, made):
        """Each record doubled."""
        records = by_domain(made)
        return for_each_domain(context, lambda d: (DomainCandidates(d, (), {"n": 2 * records[d].drops["n"]}), {}))

    @asset
    def total(doubled: dict) -> dict:
        """Every domain's number."""
        return {d: r.drops["n"] for d, r in sorted(doubled.items())}

    def build(io_manager) -> dict:
        instance, assets, io = DagsterInstance.ephemeral(), [source, made, doubled, total], {"io_manager": io_manager}
        assert materialize(assets, selection=[source.key], resources=io, instance=instance).success
        for p in ("a", "b", "c"):
            assert materialize(assets, selection=[made.key, doubled.key], partition_key=p, resources=io,
                               instance=instance).success
        res = materialize(assets, selection=[total.key], resources=io, instance=instance)
        return res.output_for_node("total")

    memory = MemoryIOManager()
    assert build(memory) == build(PartitionedFilesystemIOManager(base_dir=str(tmp_path))) == \
           {d: 2 * (ord(d) + 5) for d in "abc"}
    assert {k for k in memory.values if k[0] == ("made",)} == {(("made",), p) for p in "abc"}
    with pytest.raises(Exception, match=r"made \(partition a\) was not materialised in this build"):
        materialize([source, made, doubled, total], selection=[doubled.key], partition_key="a",
                    resources={"io_manager": MemoryIOManager()}, raise_on_error=True)


def test_stage_lines_come_from_the_io_manager_in_the_run_thread_never_from_the_instance():
    # `cacheeval build` prints a line as each step's value is stored. A watcher thread that read the
    # run's events from the in-memory instance while the run wrote them made the run's last write fail
    # now and then ("database table is locked: runs", CI run 12's corpora build): the lines now come
    # from the IO manager, in the run's thread (the watcher is never handed the instance).
    import threading

    from dagster import DagsterInstance, asset, materialize

    from pipeline.app.cli.stage_progress import StageWatcher
    from pipeline.orchestration.memory_io import MemoryIOManager

    @asset
    def first() -> int:
        return 1

    @asset
    def second(first: int) -> int:
        return first + 1

    @asset
    def not_a_stage(second: int) -> int:
        return second

    lines, threads = [], set()
    io = MemoryIOManager()

    def progress(line: str) -> None:
        lines.append(line)
        threads.add(threading.get_ident())

    with DagsterInstance.ephemeral() as instance, StageWatcher(io, ["first", "second"], {"second": 3.0}, progress):
        assert materialize([first, second, not_a_stage], resources={"io_manager": io}, instance=instance).success
    assert [line.split(",")[0] for line in lines] == ["  [1/2] first done", "  [2/2] second done"]
    assert "~3s left (last build's times)" in lines[0] and threads == {threading.get_ident()}
    assert io.on_output is None and io.values[(("not_a_stage",), None)] == 2
