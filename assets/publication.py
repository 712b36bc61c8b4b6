"""Publication: the benchmark as a Hugging Face dataset, outputs/hf/ (Parquet per split with
explicit Arrow types, and a dataset card generated from this build)."""
import json

from dagster import Output, asset

from assets.groups import PUBLICATION
from pipeline.orchestration import asset_metadata as show
from pipeline.core.config import load_profile
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages import assembly as out
from pipeline.stages.difficulty import DifficultyResult


@asset(group_name=PUBLICATION)
def hf_dataset(build: BuildSettings, cachebench: list[dict], row_difficulty: DifficultyResult,
               baseline_reports: dict[str, str], reference_reports: dict[str, str]) -> Output[dict[str, str]]:
    """hf/ in the output folder: Parquet per split (test labels apart) and the dataset card, for `datasets`."""
    from domains import domain_names
    from pipeline.stages.hf_dataset import hf_files

    profile = load_profile(build.profile)
    splits = {s: [r for r in cachebench if r["provenance"]["split"] == s] for s in ("train", "dev", "test")}
    baselines = {}
    for name in ("always_miss", "always_hit", "exact_match"):
        report = json.loads((build.outputs / f"reports/baseline_{name}.json").read_text(encoding="utf-8"))
        baselines[name] = {k: report["metrics"][k]["value"] for k in ("f1", "fhr", "precision", "recall")}
    references = []
    if "reports/references.json" in reference_reports:
        references = json.loads((build.outputs / "reports/references.json").read_text(encoding="utf-8"))["table"]
    bits = {"profile": profile.name, "kappa": f"{row_difficulty.kappa:.3f}",
            "hard_paraphrases": row_difficulty.hard_paraphrases}
    written = out.write_files(build.outputs, hf_files(cachebench, splits, profile.labels, domain_names(), bits,
                                                      baselines, references))
    return Output(written, metadata=show.files_written(build.outputs, written, profile.name))
