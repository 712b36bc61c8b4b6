"""The real GPTCache 0.1.44 (MiniLM at 0.80, its default pre-processing: the last message only) on
two rows of each system trap, under the isolated and the stream protocols, scored per trap as
outputs/reports/traps.* scores it. Loads all-MiniLM-L6-v2 (the embedding cache where warm)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core.writer import jsonl_bytes
from pipeline.harness import load_bench
from pipeline.harness.scoring import Chosen, score_chosen
from pipeline.harness.stream import StreamConfig, score_stream
from pipeline.references.gptcache_store import GPTCacheStore
from pipeline.references.trap_report import _per_trap_isolated, _per_trap_stream, render_markdown
from pipeline.stages import traps as tr

pytestmark = [pytest.mark.models, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def few(tmp_path_factory) -> Path:
    rows = [json.loads(line) for line in (ROOT / "outputs" / "cachebench.jsonl").read_text(encoding="utf-8").splitlines()]
    suite = tr.build_traps(rows, per_trap=2)
    path = tmp_path_factory.mktemp("traps") / "system_traps.jsonl"
    path.write_bytes(jsonl_bytes(suite))
    return path


def test_gptcache_keys_on_the_last_message_so_it_falls_into_the_traps(few):
    name = "gptcache-minilm@0.80"
    iso, _ = score_chosen(Chosen(name, "isolated", GPTCacheStore("minilm_l6", 0.80)), few, strict=False, use_cache=False)
    per = _per_trap_isolated(iso, list(tr.TRAPS))
    assert all(per[t]["n"] == 2 for t in tr.TRAPS) and iso["errors"]["count"] == 0
    # the same wording for another user, tenant, tool_choice or after an error: GPTCache cannot tell them apart
    for t in ("other_user", "other_tenant", "other_tool_choice", "stored_error", "stored_refusal"):
        assert per[t]["false_hits"] >= 1, t
    assert per["all"]["false_hits"] == iso["confusion"]["fp"] >= 10
    rows = load_bench(few, strict=False)
    stream, _ = score_stream(name, GPTCacheStore("minilm_l6", 0.80), few, rows, StreamConfig(gap=6, orders=1),
                             use_cache=False)
    sper = _per_trap_stream(stream, list(tr.TRAPS))
    assert sper["all"]["n"] == sum(sper[t]["n"] for t in tr.TRAPS) and stream["errors"]["count"] == 0
    assert sper["other_user"]["false_hits"] >= 1 and sper["stored_error"]["false_hits"] >= 1
    result = {"suite": {"file": tr.FILE, "sha256": "0" * 64, "rows": len(rows), "per_trap": tr.counts([r.to_dict() for r in rows])},
              "traps": {t: {"group": g, "what": w} for t, (g, w) in tr.TRAPS.items()}, "groups": dict(tr.GROUPS),
              "caches": [name], "stream_workload": {k: stream["protocol"][k] for k in ("gap", "orders", "seeds",
                                                                                          "requests_per_order", "rows")},
              "isolated": {name: per}, "stream": {name: sper}, "errors": {}}
    md = render_markdown(result)
    assert f"| a | other_user (another user of the same tenant) | 2 | {per['other_user']['false_hits']} |" in md
