"""Manifest: outputs/manifest.json, written last: profile, config hash, inputs' sha256, model
snapshots and the sha256 of every file the build wrote (assembly, evaluation, publication)."""

from dagster import Output, asset

from assets.groups import MANIFEST
from pipeline.orchestration import asset_metadata as show
from pipeline.core.config import load_profile
from pipeline.core.hashing import file_sha256
from pipeline.orchestration.resources import BuildSettings
from pipeline.stages import assembly as out
from pipeline.stages.values import SelectedRows, Similarities


@asset(group_name=MANIFEST)
def build_manifest(build: BuildSettings, source_manifest: dict, row_similarities: Similarities,
                   selected_rows: SelectedRows, benchmark_files: dict[str, str], calibration_report: dict[str, str],
                   baseline_reports: dict[str, str], reference_reports: dict[str, str],
                   hf_dataset: dict[str, str], stream_reports: dict[str, str],
                   transfer_reports: dict[str, str]) -> Output[dict]:
    """manifest.json in the output folder: profile, config hash, inputs', models' and every output's sha256."""
    manifest = out.write_manifest(build.outputs, load_profile(build.profile), source_manifest,
                                  row_similarities.snapshots, vars(selected_rows),
                                  {**benchmark_files, **calibration_report, **baseline_reports, **reference_reports,
                                   **stream_reports, **transfer_reports, **hf_dataset})
    files = {**manifest["outputs"], "manifest.json": file_sha256(build.outputs / "manifest.json")}
    return Output(manifest, metadata={"outputs": len(manifest["outputs"]),
                                      **show.files_written(build.outputs, files, manifest["profile"])})
