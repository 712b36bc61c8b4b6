"""The GPTCache reference needs nothing from the network: every library GPTCache checks for is pinned
and installed, pip is never called, no socket connects, and the result-cache key names the model's
weights, the threshold, the protocol and the reference."""
from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness_doubles import pair
from pipeline.core.paths import PROJECT_ROOT

PINNED = {"gptcache": "0.1.44", "faiss-cpu": "1.15.1", "cachetools": None, "SQLAlchemy": None, "requests": None}
# GPTCache's import_* helpers check these modules (pip-installing a missing one): module -> distribution
MODULE_DIST = {"gptcache": "gptcache", "faiss": "faiss-cpu", "sqlalchemy": "SQLAlchemy", "cachetools": "cachetools",
               "requests": "requests", "sentence_transformers": "sentence-transformers", "numpy": "numpy"}

GUARDED_RUN = r'''
import builtins, json, os, socket, subprocess, sys
attempts = []
def refuse(what):
    def blocked(*args, **kwargs):
        attempts.append(f"{what}: {args[1:2]!r}"[:300])
        raise RuntimeError(f"blocked {what}")
    return blocked
# Installed before GPTCache is imported: whatever it would spawn (pip) or connect to fails loudly.
# One exception: ctypes.util.find_library runs `ldconfig -p` (trio does at import, when another
# library imports it); it reads the loader cache and installs nothing.
_spawn, _refused = subprocess.Popen._execute_child, refuse("subprocess")
def execute_child(self, args, *rest, **kw):
    argv = [args] if isinstance(args, (str, bytes)) else list(args)
    if argv and os.path.basename(str(argv[0])) == "ldconfig" and argv[1:] == ["-p"]:
        return _spawn(self, args, *rest, **kw)
    return _refused(self, args, *rest, **kw)
subprocess.Popen._execute_child = execute_child
os.system = refuse("os.system")
builtins.input = refuse("input")
socket.socket.connect = refuse("socket.connect")
import gptcache.utils as gu
checked = []
_check = gu._check_library
def spy(libname, prompt=True, package=None):
    checked.append(libname)
    return _check(libname, prompt, package)
gu._check_library = spy
from pipeline.harness import load_bench
from pipeline.harness.scoring import Chosen, run_chosen
from pipeline.references.gptcache_store import GPTCacheStore
rows = load_bench(sys.argv[1])
results = {}
store = GPTCacheStore("minilm_l6", 0.80, embeddings="model")
for protocol in ("isolated", "shared"):
    d = run_chosen(Chosen("gptcache", protocol, store), rows, on_error="raise")
    results[protocol] = d["confusion"]
print(json.dumps({"attempts": attempts, "checked": sorted(set(checked)), "results": results}))
'''


def _pins() -> dict[str, str]:
    text = (PROJECT_ROOT / "requirements.txt").read_text(encoding="utf-8")
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)}


def test_gptcache_and_what_it_touches_are_pinned_to_what_is_installed():
    pins = _pins()
    for dist, version in PINNED.items():
        assert dist.lower() in pins, f"{dist} is not pinned in requirements.txt"
        assert pins[dist.lower()] == importlib.metadata.version(dist)
        if version:
            assert pins[dist.lower()] == version


@pytest.mark.models
@pytest.mark.slow
def test_gptcache_never_calls_pip_nor_the_network(tmp_path):
    rows = [pair(1, "MISS", "Solve x + 2 = 8", "Solve a + 2 = 8"),
            pair(2, "HIT", "What is the capital of France?", "What's the capital city of France?",
                 tools_a=[{"name": "lookup"}], system_prompt_b="You help Bob.")]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf"), "CACHEEVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", GUARDED_RUN, str(bench)], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["attempts"] == []
    assert {"faiss", "sqlalchemy"} <= set(out["checked"])   # the spy saw GPTCache's own checks
    pins = _pins()
    for module in out["checked"]:
        dist = MODULE_DIST.get(module, module)
        assert dist.lower() in pins, f"GPTCache checks for {module}: pin {dist} in requirements.txt"
    assert out["results"]["isolated"] == {"tp": 1, "fp": 1, "fn": 0, "tn": 0}


def test_the_result_cache_key_names_weights_threshold_protocol_and_reference(tmp_path):
    from argparse import Namespace

    from pipeline.app.cli.scoring import choose_cache
    from pipeline.harness.cache import EvalCache
    from pipeline.services.embedders import load_embedders_config, weights_sha256

    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps(pair(1, "HIT", "q", "q").to_dict()) + "\n", encoding="utf-8")
    ident = {}
    for ref in ("gptcache-minilm@0.80", "gptcache-minilm@0.85", "gptcache-mpnet@0.80"):
        args = Namespace(baseline=None, reference=ref, cache_module=None, cache_class=None, protocol=None,
                         cache_name=None, bench=str(bench))
        chosen = choose_cache(args, lambda m, c: None)
        assert chosen.protocol == "isolated" and chosen.reference == ref
        ident[ref] = EvalCache(tmp_path).identity(bench, chosen.subject, {"protocol": chosen.protocol,
                                                                           "reference": ref})
    specs = load_embedders_config().specs
    impl = {ref: i["implementation"] for ref, i in ident.items()}
    assert impl["gptcache-minilm@0.80"]["model_snapshot"]["sha256"] == weights_sha256(specs["minilm_l6"])
    assert impl["gptcache-mpnet@0.80"]["model_snapshot"]["sha256"] == weights_sha256(specs["mpnet_base"])
    assert impl["gptcache-minilm@0.85"]["settings"]["similarity_threshold"] == 0.85
    assert impl["gptcache-minilm@0.80"]["settings"]["versions"]["gptcache"] == "0.1.44"
    assert impl["gptcache-minilm@0.80"]["class"] == "pipeline.references.gptcache_store.GPTCacheStore"
