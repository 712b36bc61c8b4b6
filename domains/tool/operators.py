"""The typed perturbation operators of the tool domain (the only source of ADVERSARIAL rows).

Each operator takes a seed and an rng and returns (variant seed, params) or None when it does not
apply. The variant keeps the phrasing and every surface form, so the two requests differ only in
the one answer-determining token the operator changed (tool_list_swap keeps the request and
changes the offered tool list instead).
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import replace
from typing import Any, Callable, Iterable

from jsonschema import Draft202012Validator

from domains.base import Operator
from domains.tool.catalog import Slot, load, same_road_region
from domains.tool.rendering import Seed, as_number, call_text, equiv_style, intent_of, split_money
from domains.verify.tool_call import parse_call

_ENTITY_TYPES = ("city", "country", "room", "door", "device")


def call_valid(seed: Seed) -> bool:
    """True when the seed's canonical call validates against its tool's parameters schema."""
    name, args = parse_call(call_text(seed))
    v = Draft202012Validator(load().tools[name]["parameters"], format_checker=Draft202012Validator.FORMAT_CHECKER)
    return v.is_valid(args)


def pick_other(seed: Seed, slot: Slot, rng: random.Random) -> Any:
    """Another vocab value for `slot`, not used by the seed; a city tied to others by
    same_road_region stays in their road network (no drive from LA to Sydney)."""
    taken = set(str(v) for v in seed.value.values())
    options = [k for k in sorted(load().vocab[slot.type]) if k not in taken]
    it = intent_of(seed)
    if slot.name in it.same_road_region:
        options = [k for k in options if same_road_region(it, {**seed.value, slot.name: k})]
    return rng.choice(options) if options else None


def _slots_of(seed: Seed, types: Iterable[str]) -> list[Slot]:
    it = intent_of(seed)
    return [s for s in it.slots if s.type in tuple(types) and s.name not in it.keep]


def op_direction_swap(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    """Exchange the intent's two `swap` slots (origin/destination, from/to)."""
    swap = intent_of(seed).swap
    if len(swap) != 2:
        return None
    a, b = swap
    va, vb = seed.value[a], seed.value[b]
    if va == vb:
        return None
    return seed.with_value(**{a: vb, b: va}), {"slots": [a, b], "from": [va, vb], "to": [vb, va]}


def op_amount_change(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    """Move one money or number slot by a few steps, keeping the call schema-valid."""
    slots = _slots_of(seed, ("money", "number"))
    if not slots:
        return None
    s = rng.choice(slots)
    old = seed.value[s.name]
    amount, code = split_money(old) if s.type == "money" else (as_number(old), None)
    step = s.step or ((10 if amount < 1000 else 100) if s.type == "money" else 1)
    k = rng.choice([1, 2, 3, 5])
    for delta in (k * step, -k * step):
        new_amount = as_number(amount + delta)
        if new_amount <= 0:
            continue
        new = f"{new_amount} {code}" if code else new_amount
        variant = seed.with_value(**{s.name: new})
        if call_valid(variant):
            return variant, {"slot": s.name, "from": old, "to": new}
    return None


def op_date_change(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    """Move one date slot forward by 1-7 days (a year slot by one)."""
    it = intent_of(seed)
    names = it.date_change_slots or tuple(s.name for s in it.slots if s.type in ("date", "year"))
    if not names:
        return None
    s = it.slot(rng.choice(sorted(names)))
    old = seed.value[s.name]
    if s.type == "year":
        new: Any = int(old) + 1
    else:
        new = (dt.date.fromisoformat(old) + dt.timedelta(days=rng.choice([1, 2, 3, 7]))).isoformat()
    return seed.with_value(**{s.name: new}), {"slot": s.name, "from": old, "to": new}


def op_recipient_swap(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    """Replace the first contact slot by another contact."""
    slots = _slots_of(seed, ("contact",))
    if not slots:
        return None
    s = slots[0]
    new = pick_other(seed, s, rng)
    if new is None:
        return None
    return seed.with_value(**{s.name: new}), {"slot": s.name, "from": seed.value[s.name], "to": new}


def _entity_change(types: tuple[str, ...]) -> Callable[[Seed, random.Random], tuple[Seed, dict] | None]:
    def apply(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
        slots = _slots_of(seed, types)
        if not slots:
            return None
        s = rng.choice(slots)
        new = pick_other(seed, s, rng)
        if new is None:
            return None
        return seed.with_value(**{s.name: new}), {"slot": s.name, "from": seed.value[s.name], "to": new}
    return apply


def op_tool_list_swap(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    """Offer the alternative vendor's tool for the same request."""
    it = intent_of(seed)
    alt = load().alternative.get(it.tool)
    if alt is None or seed.alt:
        return None
    # The request stays the same (only a surface style on the fixed words, so the texts differ);
    # the offered tool list names another vendor's tool, so the canonical call differs.
    style = equiv_style(seed, rng)
    if style is None:
        return None
    return replace(seed, alt=True, style=style), {"from_tool": it.tool, "to_tool": alt["name"], "style": list(style)}


OPERATORS: dict[str, Operator] = {
    "direction_swap": Operator("direction_swap", "Swap two directional slots (origin/destination, "
                               "from/to unit or account, base/quote currency).", op_direction_swap),
    "amount_change": Operator("amount_change", "Change an amount or count (money, quantity, duration, "
                              "passengers, nights, temperature, brightness).", op_amount_change),
    "date_change": Operator("date_change", "Move a date forward by 1-7 days (or a year by one).", op_date_change),
    "recipient_swap": Operator("recipient_swap", "Replace the contact a request is for or addressed to.",
                               op_recipient_swap),
    "location_change": Operator("location_change", "Replace a city, country, room, door or device.",
                                _entity_change(_ENTITY_TYPES)),
    "language_change": Operator("language_change", "Replace a translation language.", _entity_change(("language",))),
    "tool_list_swap": Operator("tool_list_swap", "Offer the same request another vendor's tool list; the "
                               "canonical call names the other tool.", op_tool_list_swap),
}
