"""The change features of the verified cache (verified_change.py) on hand-written pairs, and the
thread limit its classifier runs under."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.references import verified_features as vf
from pipeline.references.verified_change import change_features, change_of

ROOT = Path(__file__).resolve().parents[2]


def view(qa, qb, **kw):
    v = {"query_a": qa, "query_b": qb, "context_a": None, "context_b": None, "system_prompt_a": None,
         "system_prompt_b": None, "tools_a": None, "tools_b": None}
    v.update(kw)
    return v


def test_what_changed_is_classed():
    cases = {
        ("What is the capital of France?", "What is the capital of Spain?"): ({"entity"}, {"entity"}),
        ("Convert 5 km to miles", "Convert 7 km to miles"): ({"number"}, {"number"}),
        ("What are the advantages of solar power?", "What are the disadvantages of solar power?"): ({"polarity"}, {"polarity"}),
        ("Which day comes after Monday?", "Which day comes before Monday?"): ({"polarity"}, {"polarity"}),
        ("Is tea better than coffee?", "Is tea worse than coffee?"): ({"comparison"}, {"comparison"}),
        ("What happened in March 1990?", "What happened in April 1990?"): ({"date", "entity"}, {"date", "entity"}),
        ("How many grams in a pound?", "How many ounces in a pound?"): ({"unit"}, {"unit"}),
    }
    for (a, b), (touched, swapped) in cases.items():
        ch = change_of(a, b)
        assert ch["touched"] == touched and ch["swapped"] == swapped, (a, b, ch)


def test_surface_changes_and_insertions():
    f = change_features(view("what is the capital of france", "What is the capital of France?"))
    assert f["chg_case_only"] == 1.0 and f["chg_surface_only"] == 1.0 and f["chg_content_words"] == 0
    f = change_features(view("List flights to Paris", "List only flights to Paris"))
    assert f["chg_scope"] == 1.0 and f["chg_inserted_only"] == 1.0 and f["chg_scope_swap"] == 0.0
    f = change_features(view("Is it safe?", "Is it not safe?"))
    assert f["chg_polarity"] == 1.0 and f["chg_surface_only"] == 0.0
    same = change_features(view("Same text", "Same text"))
    assert same["chg_spans"] == 0 and same["chg_share"] == 0 and same["chg_surface_only"] == 0.0


def test_turns_system_prompt_and_tools():
    ctx_a = [{"role": "user", "content": "I weigh 70 kg."}, {"role": "assistant", "content": "Noted."}]
    ctx_b = [{"role": "user", "content": "I weigh 82 kg."}, {"role": "assistant", "content": "Noted."}]
    f = change_features(view("Convert that to pounds", "Convert that to pounds", context_a=ctx_a, context_b=ctx_b))
    assert f["chg_spans"] == 0 and f["turns_differing"] == 1 and f["turns_last_differs"] == 0.0
    assert f["ctx_number"] == 1.0 and f["ctx_number_swap"] == 1.0 and f["turns_differing_share"] == 0.5
    f = change_features(view("Hi", "Hi", system_prompt_a="You answer for Acme.", system_prompt_b="You answer for Globex."))
    assert f["sys_entity"] == 1.0 and f["sys_spans"] == 1
    t1 = {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {}}}
    t2 = {"type": "function", "function": {"name": "send_email", "description": "Send", "parameters": {}}}
    f = change_features(view("Weather?", "Weather?", tools_a=[t1], tools_b=[t1, t2]))
    assert f["tools_added_removed"] == 1 and f["tools_changed"] == 0


def test_features_are_request_only_and_in_the_vector():
    names = vf.feature_names()
    assert "chg_entity_swap" in names and "turns_differing" in names and "len_a" not in names
    assert vf.FEATURE_VERSION == "4" and "scope_differ" in names and "stored_not_ok" in names
    assert "negation_toggle_only" in names
    for banned in ("domain", "subcategory", "construction", "label", "source"):
        assert not any(banned in n for n in names)


def _limits_hold() -> None:
    """The thread-limit claims, in this process, whatever it imported before (see the tests below)."""
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
    from threadpoolctl import threadpool_info, threadpool_limits

    from pipeline.references import verified

    def pools() -> dict:
        return {(i["internal_api"], i["filepath"]): i["num_threads"] for i in threadpool_info()}

    threads = verified.CLASSIFIER["threads"]
    classifier = {(c.internal_api, c.filepath) for c in verified._threadpools().lib_controllers}
    assert {api for api, _ in classifier} >= {"openmp", "openblas"}
    with threadpool_limits(limits=threads + 1):  # so that the limit has something to change
        before, trees = pools(), _openmp_effective_n_threads()
        assert trees == threads + 1
        with verified._limited():
            assert _openmp_effective_n_threads() == threads
            inside = pools()
        assert {k: n for k, n in inside.items() if k in classifier} == {k: threads for k in classifier}
        assert pools() == before and _openmp_effective_n_threads() == trees


def test_the_classifier_runs_its_trees_and_blas_on_the_threads_it_declares():
    # fit and scores enter one ThreadpoolController's limit, found once per process after scikit-learn's
    # OpenMP runtime is loaded. Inside it, the OpenMP scikit-learn's trees run on (its own copy, or the
    # same library another package loaded first: faiss's, in a process that imported GPTCache) uses
    # CLASSIFIER["threads"], and the controller's BLAS pools too; after it, every pool is as before.
    # Nothing is claimed of pools outside the controller while the limit holds: faiss's OpenBLAS runs
    # on an OpenMP, the same library as scikit-learn's when scikit-learn loaded it first, and follows
    # its limit. Here in this worker, after whatever it ran; below in fresh processes, in the orders
    # that failed in the project CI.
    import faiss  # noqa: F401 - an OpenMP loaded before scikit-learn's, as GPTCache's runs load it
    import torch  # noqa: F401 - another library's OpenMP, loaded whatever this worker ran before

    _limits_hold()


@pytest.mark.parametrize("first, then", [("controller", "faiss"), ("faiss", "controller")])
def test_the_thread_limit_holds_whichever_loads_first_the_controller_or_faiss(first, then):
    # The controller found before faiss is imported (then faiss's OpenBLAS follows the limit through
    # the OpenMP it shares with scikit-learn), or after (then faiss's OpenMP is scikit-learn's).
    load = {"controller": "from pipeline.references import verified; verified._threadpools()", "faiss": "import faiss"}
    script = (f"import runpy; ns = runpy.run_path({str(Path(__file__))!r}); {load[first]}; {load[then]}; "
              "ns['_limits_hold'](); print('held')")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.strip() == "held", proc.stderr[-2000:]
