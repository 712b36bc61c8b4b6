"""The code domain's typed perturbation operators: each turns a request `Spec` into one that
differs in a single answer-determining detail, and reports what it changed (None when it does
not apply to that seed)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from domains.base import Operator
from domains.code.catalog import LANGS, task, variant
from domains.code.render import Spec, rename_identifier


def _lang_swap(seed: Spec, rng) -> tuple[Spec, dict] | None:
    other = next(lang for lang in LANGS if lang != seed.lang)
    return replace(seed, lang=other), {"from": seed.lang, "to": other}


def _variant_swap(op_name: str) -> Callable[[Spec, Any], tuple[Spec, dict] | None]:
    """The swap to the task's other variant, for tasks whose curated `operator` is `op_name`."""
    def apply(seed: Spec, rng) -> tuple[Spec, dict] | None:
        t = task(seed.task)
        if t.get("operator") != op_name:
            return None
        other = next(str(v["id"]) for v in t["variants"] if str(v["id"]) != seed.variant)
        return replace(seed, variant=other), {"slot": t["slot"], "from": seed.variant, "to": other}
    return apply


def _rename(seed: Spec, rng) -> tuple[Spec, dict] | None:
    if not seed.stub:
        return None  # the identifier must be shown in attached code
    t = task(seed.task)
    new = t["rename_to"]
    try:
        rename_identifier(variant(seed.task, seed.variant)[seed.lang], seed.lang, t["name"], new)
    except ValueError:
        return None
    return replace(seed, name=new), {"identifier": seed.fn, "to": new, "where": "attached stub"}


OPERATORS: dict[str, Operator] = {
    "language_swap": Operator("language_swap", "the same request in another programming language", _lang_swap),
    "ascending_descending": Operator("ascending_descending", "ascending order swapped with descending",
                                     _variant_swap("ascending_descending")),
    "encode_decode": Operator("encode_decode", "encode swapped with decode", _variant_swap("encode_decode")),
    "inclusive_exclusive": Operator("inclusive_exclusive", "an inclusive bound made exclusive or back",
                                    _variant_swap("inclusive_exclusive")),
    "off_by_one": Operator("off_by_one", "a number in the spec moved by one (size, width, start index)",
                           _variant_swap("off_by_one")),
    "in_place_copy": Operator("in_place_copy", "mutate the argument in place vs return a new list",
                              _variant_swap("in_place_copy")),
    "identifier_rename": Operator("identifier_rename", "the function in the attached stub renamed", _rename),
}
