"""The code domain's curated tasks (sources/curated/code.yaml), parsed and checked.

A task has a function name and parameters, behaviour clauses ("does") and variants, each variant
a Python and a JavaScript reference with test cases; a task with an `operator` has exactly two
variants that differ in one answer-determining detail named by its `slot`. Tasks are grouped by
topic (RELATED_UNSAFE pairs stay in a group, UNRELATED pairs cross groups).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from domains.curated import read_curated
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

SOURCE = CURATED / "code.yaml"
LANGS = ("python", "javascript")
VARIANT_OPERATORS = ("ascending_descending", "encode_decode", "inclusive_exclusive", "off_by_one", "in_place_copy")


@lru_cache(maxsize=1)
def curated() -> dict[str, Any]:
    """The parsed and checked curated file (tasks keyed by id)."""
    data = read_curated(SOURCE, ("languages", "frames", "stub_frames", "groups", "tasks"))
    tasks = {}
    for i, t in enumerate(data["tasks"]):
        _check_task(t, i)
        tasks[t["id"]] = t
    grouped = sorted(tid for members in data["groups"].values() for tid in members)
    if grouped != sorted(tasks):
        raise InputError(f"{SOURCE}: groups: every task must be in exactly one group. Fix the group lists")
    return {**data, "tasks": tasks}


def _check_task(t: dict, i: int) -> None:
    where = f"{SOURCE}:tasks[{i}]"
    for key in ("id", "subcategory", "name", "params", "rename_to", "does", "variants"):
        if key not in t:
            raise InputError(f"{where}: missing key '{key}'. Add it")
    variants = t["variants"]
    if t.get("operator"):
        if t["operator"] not in VARIANT_OPERATORS or len(variants) != 2 or "slot" not in t:
            raise InputError(f"{where} ({t['id']}): a task with an operator needs one of {VARIANT_OPERATORS}, "
                             "a slot and exactly two variants. Fix the task")
        if not all("{" + t["slot"] + "}" in d for d in t["does"]):
            raise InputError(f"{where} ({t['id']}): every clause must contain {{{t['slot']}}}. Add the slot")
    elif len(variants) != 1:
        raise InputError(f"{where} ({t['id']}): a task without an operator has one variant. Remove the others")
    for v in variants:
        for key in ("id", "cases", *LANGS):
            if key not in v:
                raise InputError(f"{where} ({t['id']}/{v.get('id')}): variant misses '{key}'. Add it")


def task(tid: str) -> dict:
    """The curated task `tid`."""
    return curated()["tasks"][tid]


def variant(tid: str, vid: str) -> dict:
    """Variant `vid` of task `tid`."""
    return next(v for v in task(tid)["variants"] if str(v["id"]) == vid)


def first_variant(tid: str) -> str:
    """The id of the task's first variant (the one RELATED_UNSAFE and UNRELATED pairs use)."""
    return str(task(tid)["variants"][0]["id"])


def group_of(tid: str) -> str:
    """The topic group holding task `tid`."""
    return next(g for g, members in sorted(curated()["groups"].items()) if tid in members)


def units() -> list[tuple[str, str, str]]:
    """Every (task, variant, language), in file order."""
    return [(tid, str(v["id"]), lang) for tid, t in curated()["tasks"].items()
            for v in t["variants"] for lang in LANGS]
