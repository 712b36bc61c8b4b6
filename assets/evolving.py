"""The quarterly adversarial slice (group `evolving`, partitioned by quarter): every quarter, new
ADVERSARIAL rows from held-out seeds, kept where the target cache is fooled and the label verifies.

evolving_candidates -> evolving_verified -> evolving_scored -> evolving_slice (blocking checks) ->
evolving_files (outputs/evolving/<quarter>.jsonl and .md, manifest.json). The partitions are
quarters from configs/evolving.yaml's `start`, keyed by their first day (Dagster's time-window keys
are strftime dates; strftime has no quarter): 2026-10-01 is 2026-Q4, which runs, tags and files
name. `quarterly_slice` runs evolving_job on day 1 of January, April, July and October for the
quarter that starts that day; a tick before the first quarter (the UI's "Preview tick result" offers
ticks back to two and a half years ago) is skipped, saying so. The stage logic is pipeline/evolving/.

The slice reads the main benchmark (EvolveSettings.bench: cachebench.jsonl and the splits/ beside it,
outputs/ by default), which `benchmark_files` writes: the assets that read it name it in `deps`, so
the asset graph draws where a slice comes from. A dep loads nothing and builds nothing: evolving_job
and `cacheeval evolve` materialise the evolving group alone, from the benchmark on disk.
"""

import warnings
from collections import Counter
from datetime import datetime, timezone

from dagster import (AssetCheckResult, AssetKey, PreviewWarning, AssetExecutionContext, AssetSelection, MetadataValue, Output,
                     RunRequest, ScheduleEvaluationContext, SkipReason, TimeWindowPartitionsDefinition, asset, asset_check,
                     define_asset_job, in_process_executor, schedule)

from assets.groups import EVOLVING
from pipeline.core.hashing import file_sha256, sha256_text
from pipeline.orchestration.resources import BuildSettings, EvolveSettings
from pipeline.evolving import slicing as ev
from pipeline.evolving import checks

CONFIG = ev.load_config()
QUARTERS = TimeWindowPartitionsDefinition(cron_schedule="0 0 1 1,4,7,10 *", start=ev.quarter_key(CONFIG.start),
                                          fmt="%Y-%m-%d", timezone="UTC", end_offset=1)
QUARTER_TAG = "cacheeval/quarter"
# The main benchmark the slice reads (cachebench.jsonl and its splits): the asset that writes them.
BENCHMARK = [AssetKey("benchmark_files")]


def _quarter(context) -> str:
    return ev.quarter_name(context.partition_key)


@asset(group_name=EVOLVING, partitions_def=QUARTERS, deps=BENCHMARK)
def evolving_candidates(context: AssetExecutionContext, build: BuildSettings, evolve: EvolveSettings) -> Output[dict]:
    """The quarter's held-out near-miss pairs: every domain's generators, seeds unused by the main benchmark."""
    from domains import domain_names
    from pipeline.orchestration.cached_steps import generate

    quarter = _quarter(context)
    used = ev.used_requests(ev.read_rows(evolve.bench_path))
    for earlier in ev.earlier_slices(evolve.out_path, quarter):
        used |= ev.used_requests(ev.read_rows(earlier))
    datasets, llm, extract = build.datasets(), build.llm(), ev.pool_extract()
    cands, drops, generated = [], Counter(), 0
    for domain in domain_names():
        made, gen_drops = generate(build.caches, domain, ev.pool_context(domain, datasets, llm, extract))
        near = [c for c in made if c.label == ev.LABEL]
        generated += len(near)
        kept, why = ev.held_out(domain, quarter, near, used, CONFIG.candidates_per_domain)
        drops.update({f"generation:{k}": v for k, v in gen_drops.items()})
        drops.update(why)
        cands += kept
    per = Counter(f"{c.domain} / {ev.operator_of(c)}" for c in cands)
    methods = Counter(c.construction_method for c in cands)
    return Output({"quarter": quarter, "candidates": cands, "generated": generated, "drops": dict(sorted(drops.items()))},
                  metadata={"quarter": quarter, "near_misses_generated": generated, "held_out": len(cands),
                            "drops": MetadataValue.json(dict(sorted(drops.items()))),
                            "per_method": MetadataValue.json(dict(sorted(methods.items()))),
                            "per_domain_operator": MetadataValue.json(dict(sorted(per.items())))})


@asset(group_name=EVOLVING, partitions_def=QUARTERS)
def evolving_verified(build: BuildSettings, evolving_candidates: dict) -> Output[dict]:
    """The held-out candidates through the main build's deterministic verifiers and policies."""
    from pipeline.core.errors import BuildError
    from pipeline.orchestration.cached_steps import verify

    kept, drops = verify(build.caches, list(evolving_candidates["candidates"]))
    if any(reason.split(":", 1)[-1].startswith("verifier_error") for reason in drops):
        raise BuildError(f"a verifier raised on a {evolving_candidates['quarter']} candidate ({dict(drops)}). "
                         "A verifier that raises is a bug: fix it in domains/verify/")
    return Output({**evolving_candidates, "verified": kept, "verify_drops": dict(sorted(drops.items()))},
                  metadata={"verified": len(kept), "drops": MetadataValue.json(dict(sorted(drops.items())))})


@asset(group_name=EVOLVING, partitions_def=QUARTERS, deps=BENCHMARK)
def evolving_scored(context: AssetExecutionContext, build: BuildSettings, evolve: EvolveSettings,
                    evolving_verified: dict) -> Output[dict]:
    """Each verified candidate as a benchmark row, scored by the target and every reference cache."""
    from pipeline.evolving.scoring import MODULE_PREFIX
    from pipeline.orchestration.cached_steps import embedded
    from pipeline.orchestration.step_cache import files_sha256, fingerprint

    target = evolve.target or CONFIG.target
    bench = evolve.bench_path

    def inputs() -> dict:  # a reference target's code is the project's; a module: target's is not: it runs
        splits = sorted(p.relative_to(bench.parent).as_posix() for p in (bench.parent / "splits").rglob("*") if p.is_file())
        return {"verified": fingerprint(evolving_verified), "benchmark": files_sha256(bench.parent, [bench.name, *splits]),
                "target": target, "made_with_code": evolve.made_with_code}

    compute = lambda: _scored(context, build, evolve, evolving_verified)  # noqa: E731
    s = compute() if target.startswith(MODULE_PREFIX) else embedded(build.caches, "evolving_scored", inputs, compute)
    return Output(s, metadata={"rows": len(s["rows"]), "target": MetadataValue.json(s["target"]),
                               "target_fooled": sum(1 for h, _ in s["target_decisions"].values() if h),
                               "difficulty_of_fooled": MetadataValue.json(dict(Counter(r["difficulty"] for r in s["rows"]
                                                                                       if r["difficulty"])))})


def _scored(context: AssetExecutionContext, build: BuildSettings, evolve: EvolveSettings, evolving_verified: dict) -> dict:
    """Every candidate as a row, scored by the target and the references; graded (difficulty and the
    members' votes) only where it fooled the target, since only those rows can enter a slice and a
    grade reads the row's own requests alone (pipeline/evolving/scoring.py). The others keep
    difficulty None: the candidates file is scored under the scoring contract, which allows that."""
    from domains import domain_names
    from pipeline.core.writer import jsonl_bytes
    from pipeline.evolving import scoring as sc
    from pipeline.stages.assembly import write_files

    quarter = evolving_verified["quarter"]
    outcomes = {c.key: o for c, o in evolving_verified["verified"]}
    items = ev.numbered(domain_names(), quarter, [c for c, _ in evolving_verified["verified"]])

    rows = [ev.to_row(c, outcomes[c.key], rid, None, {}, ev.provenance_extra(quarter, c)) for rid, c in items]
    data = jsonl_bytes(rows)
    name = f"evolving/{quarter}-candidates-{sha256_text(data.decode('utf-8'))[:16]}.jsonl"
    write_files(build.caches, {name: data})  # content-addressed: the file the result cache keys on
    bench_file = build.caches / name
    target = sc.resolve(evolve.target or CONFIG.target, evolve.bench_path)
    if evolve.made_with_code and evolve.made_with_code != target.identity["code_sha256"]:
        context.log.info(f"{quarter}: the target's code changed since the slice was made ({evolve.made_with_code[:16]} -> "
                         f"{target.identity['code_sha256'][:16]}); the slice records the code it was made with")
        target = sc.Target(target.chosen, {**target.identity, "code_sha256": evolve.made_with_code})
    hits = sc.decisions(target, bench_file, strict=False)
    fooled = [i for i, r in enumerate(rows) if hits[r["id"]][0]]
    graded = sc.grade([rows[i] for i in fooled], evolve.bench_path.parent, build.caches, progress=context.log.info,
                      workers=build.settings.workers)
    for i, r in zip(fooled, graded):
        rows[i] = r
    built = {target.identity["name"]: target} if target.chosen.reference else {}
    refs = sc.reference_decisions(evolve.bench_path, bench_file, built, strict=False)
    return {**evolving_verified, "rows": rows, "by_id": dict(items), "target": target.identity, "target_decisions": hits,
            "references": refs, "bench_sha256": file_sha256(evolve.bench_path)}


@asset(group_name=EVOLVING, partitions_def=QUARTERS)
def evolving_slice(context: AssetExecutionContext, evolving_scored: dict) -> Output[dict]:
    """The slice: rows that fool the target, spread over domains, methods and operators (never padded)."""
    from domains import domain_names

    s = evolving_scored
    quarter, target = s["quarter"], s["target"]
    rows = [ev.with_verdict(r, target, s["target_decisions"][r["id"]]) for r in s["rows"]]
    hits = {rid: h for rid, (h, _) in s["target_decisions"].items()}
    choice = ev.choose_slice(rows, hits, CONFIG, quarter, target["behaviour_sha256"], domain_names())
    chosen = ev.slice_rows(rows, choice, quarter, domain_names())
    short = ev.shortfall(choice, CONFIG, target["name"])
    return Output({"quarter": quarter, "rows": chosen, "choice": choice, "short": short, "target": target,
                   "candidates": {r["provenance"]["evolving"]["candidate_id"]: s["by_id"][r["provenance"]["evolving"]["candidate_id"]]
                                  for r in chosen}},
                  metadata={"quarter": quarter, "rows": len(chosen), "fooled": choice.fooled,
                            "candidates": choice.candidates, "short": short or "no",
                            "per_domain": MetadataValue.json(dict(Counter(r["domain"] for r in chosen))),
                            "per_operator": MetadataValue.json(dict(Counter(r["provenance"]["evolving"]["operator"]
                                                                            for r in chosen))),
                            "per_method": MetadataValue.json(dict(Counter(r["construction_method"] for r in chosen)))})


def _check(name: str, description: str):
    """A blocking check per quarter (partitioned asset checks are a preview feature of Dagster: its
    warning is not news at every import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return _partitioned_check(name, description)


def _partitioned_check(name: str, description: str):
    @asset_check(asset=evolving_slice, name=name, blocking=True, description=description, partitions_def=QUARTERS)
    def check(evolve: EvolveSettings, evolving_slice: dict) -> AssetCheckResult:
        problems, meta = checks.SLICE_CHECKS[name](evolving_slice, CONFIG, evolve.bench_path, evolve.out_path)
        return AssetCheckResult(passed=not problems, metadata={
            **meta, "why": "; ".join(problems[:3]) or "ok", "problems": MetadataValue.json(problems[:20])})

    return check


SLICE_CHECKS = [_check(name, desc) for name, desc in checks.SLICE_CHECK_DESCRIPTIONS.items()]


@asset(group_name=EVOLVING, partitions_def=QUARTERS, deps=BENCHMARK)
def evolving_files(evolve: EvolveSettings, evolving_scored: dict, evolving_slice: dict) -> Output[dict[str, str]]:
    """<quarter>.jsonl (the slice), <quarter>.md (stage yields, fool rates) and manifest.json in the out folder."""
    from domains import domain_names
    from pipeline.stages.assembly import write_files

    from pipeline.evolving.report import slice_files

    files = slice_files(evolve.out_path, evolving_scored, evolving_slice, domain_names(), evolve.bench_path, CONFIG)
    written = write_files(evolve.out_path, files)
    return Output(written, metadata={"out_dir": str(evolve.out_path),
                                     "files": MetadataValue.json(written)})


evolving_job = define_asset_job(
    "evolving_job", AssetSelection.groups(EVOLVING), partitions_def=QUARTERS, executor_def=in_process_executor,
    description="One quarter's adversarial slice: held-out candidates, verified, scored by the target cache, "
                "the slice with its blocking checks, written to outputs/evolving/<quarter>.jsonl and .md.")



@schedule(job=evolving_job, cron_schedule=QUARTERS.get_cron_schedule(), execution_timezone="UTC",
          name="quarterly_adversarial_slice",
          description="Day 1 of January, April, July and October (00:00 UTC): the slice of the quarter that starts "
                      f"that day against the target of configs/evolving.yaml; ticks before {CONFIG.start}, the first "
                      "quarter, are skipped. Off until turned on (Automation page).")
def quarterly_slice(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    """The run of the quarter that starts at the tick (partition key: its first day; tag: its name);
    none before the first quarter partition."""
    when = context.scheduled_execution_time or datetime.now(timezone.utc)
    if when.timestamp() < QUARTERS.start.timestamp():
        return SkipReason(f"{when:%Y-%m-%d} is before {CONFIG.start}, the first quarter partition (configs/evolving.yaml "
                          f"start): no slice to make. The first tick that runs is {QUARTERS.start:%Y-%m-%d}.")
    key = QUARTERS.get_partition_key_for_timestamp(when.timestamp())
    return RunRequest(run_key=key, partition_key=key, tags={QUARTER_TAG: ev.quarter_name(key)})
