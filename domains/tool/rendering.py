"""Turning an intent instance into request text and its canonical call.

A `Seed` is one rendering: an intent instance, a phrasing, a surface form per slot value
("March 3, 2025", "3 March 2025", "2025-03-03"), a surface style on the phrasing's own words, and
optionally the alternative vendor's tool. `render` gives the request text, `call_text` the
canonical call (W5H2-normalised arguments as canonical JSON) that every rendering of the same
instance shares.
"""
from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from domains.tool.catalog import Intent, Slot, load
from domains.verify.tool_call import canonical_call

_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()
# Fixed English names: strftime would follow the process locale.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January February March April May June July August September October November December").split()


# --------------------------------------------------------------------------- slot values

def as_number(v: Any) -> int | float:
    """A slot number as an int when it is integral (so 250.0 and 250 render and compare alike)."""
    f = float(v)
    return int(f) if f.is_integer() else f


def split_money(v: str) -> tuple[int | float, str]:
    """A money slot value "250 EUR" as (250, "EUR")."""
    amount, code = str(v).split()
    return as_number(amount), code


def _fmt_amount(x: int | float, sep: bool) -> str:
    return (f"{x:,}" if sep else f"{x}") if isinstance(x, int) else f"{x:.2f}"


def surfaces(slot_type: str, value: Any) -> tuple[str, ...]:
    """Every way a user may write one slot value; the first is the default."""
    data = load()
    if slot_type in data.vocab:
        return data.vocab[slot_type][value]
    if slot_type == "number":
        n = as_number(value)
        word = (_NUMBER_WORDS[n],) if isinstance(n, int) and 2 <= n <= 12 else ()
        return (str(n), *word)
    if slot_type == "money":
        amount, code = split_money(value)
        m = data.money[code]
        return (f"{m['symbol']}{_fmt_amount(amount, True)}", f"{_fmt_amount(amount, True)} {m['word']}",
                f"{_fmt_amount(amount, False)} {code}")
    if slot_type == "date":
        d = dt.date.fromisoformat(value)
        month = _MONTHS[d.month - 1]
        return (f"{month} {d.day}, {d.year}", f"{d.day} {month} {d.year}", d.isoformat(),
                f"{month[:3]} {d.day}, {d.year}", f"{_WEEKDAYS[d.weekday()]}, {month} {d.day}, {d.year}")
    if slot_type == "time":
        h, m = (int(x) for x in value.split(":"))
        h12, ap = (h % 12 or 12), ("am" if h < 12 else "pm")
        part = "morning" if h < 12 else ("afternoon" if h < 18 else "evening")
        return (f"{h12}:{m:02d} {ap}", f"{h:02d}:{m:02d}", f"{h12}:{m:02d} in the {part}")
    return (str(value),)  # text, year


def slot_args(slot: Slot, value: Any) -> dict[str, Any]:
    """The canonical arguments one slot value contributes to the call."""
    if slot.type == "money":
        amount, code = split_money(value)
        return {slot.name: amount, "currency": code}
    if slot.type in ("number", "year"):
        return {slot.name: as_number(value)}
    return {slot.name: value}


# --------------------------------------------------------------------------- seeds

@dataclass(frozen=True)
class Seed:
    """One rendered request: an intent instance, a phrasing, a surface form per slot, a surface
    style applied to the phrasing's fixed words, and optionally the alternative tool offered."""

    intent: str
    values: tuple[tuple[str, Any], ...]
    phrasing: int
    forms: tuple[tuple[str, int], ...]
    style: tuple[str, ...] = ()
    alt: bool = False

    @property
    def value(self) -> dict[str, Any]:
        """Slot name → canonical value."""
        return dict(self.values)

    def with_value(self, **changes: Any) -> "Seed":
        """The same rendering with some slot values changed (phrasing and forms kept)."""
        vals = dict(self.values)
        vals.update(changes)
        return replace(self, values=tuple(sorted(vals.items())))


def intent_of(seed: Seed) -> Intent:
    """The intent a seed renders."""
    return load().intents[seed.intent]


def tool_name(seed: Seed) -> str:
    """The tool the seed's call names: the intent's tool, or its alternative when offered."""
    it = intent_of(seed)
    return load().alternative[it.tool]["name"] if seed.alt else it.tool


def call_text(seed: Seed) -> str:
    """The seed's canonical call as canonical JSON."""
    it = intent_of(seed)
    args: dict[str, Any] = {}
    for s in it.slots:
        args.update(slot_args(s, seed.value[s.name]))
    if seed.alt:
        amap = load().alternative[it.tool]["arg_map"]
        args = {amap.get(k, k): v for k, v in args.items()}
    return canonical_call(tool_name(seed), args)


# --------------------------------------------------------------------------- text

# Surface styles act on the phrasing's own words, never on slot values, so a literal argument
# (a file title, a text to translate) is never altered by an EQUIV variant.
_CONTRACTIONS = (("What's", "What is"), ("what's", "what is"), ("I'm", "I am"), ("can't", "cannot"),
                 ("How's", "How is"), ("Don't", "Do not"), ("It's", "It is"))


def _contract(t: str) -> str:
    for short, long in _CONTRACTIONS:
        if short in t:
            return t.replace(short, long, 1)
        if long in t:
            return t.replace(long, short, 1)
    return t


STYLES: dict[str, Callable[[str], str]] = {
    "lowercase": lambda t: re.sub(r"[^{}]+(?=\{|$)", lambda m: m.group(0).lower(), t),
    "no_final_punctuation": lambda t: t[:-1] if t[-1:] in ".?!" else t,
    "double_space": lambda t: t.replace(" ", "  ", 1),
    "curly_quotes": lambda t: t.replace('"{', "\u201c{").replace('}"', "}\u201d"),
    "contraction": _contract,
}


def style_template(template: str, style: Iterable[str]) -> str:
    """A phrasing with the named surface styles applied in order."""
    for name in style:
        template = STYLES[name](template)
    return template


def render(seed: Seed) -> str:
    """The request text: the phrasing, styled, with every slot written in its chosen form."""
    it = intent_of(seed)
    template = style_template(it.phrasings[seed.phrasing], seed.style)
    forms = dict(seed.forms)
    vals = seed.value

    def fill(m: re.Match) -> str:
        s = it.slot(m.group(1))
        options = surfaces(s.type, vals[s.name])
        return options[forms.get(s.name, 0) % len(options)]

    return re.sub(r"\{(\w+)\}", fill, template)


def equiv_style(seed: Seed, rng: random.Random) -> tuple[str, ...] | None:
    """One or two surface styles that really change the phrasing's text (None when none does)."""
    base = intent_of(seed).phrasings[seed.phrasing]
    names = sorted(STYLES)
    rng.shuffle(names)
    for n in range(1, 3):
        for i in range(len(names) - n + 1):
            style = tuple(names[i:i + n])
            if style_template(base, style) != base:
                return style
    return None
