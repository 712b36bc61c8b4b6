"""The `tool` domain: requests to an assistant with function calling, labelled by canonical call.

Every request is an intent rendered from sources/curated/tool.yaml with slot values; its reference
answer is the canonical call (tool name plus W5H2-normalised arguments: ISO dates, numbers with
currency codes, canonical city names, ISO language and country codes) as canonical JSON. Two
requests are the same for a cache exactly when their canonical calls are equal
(verifier json_schema_call).

Caching policy (one rule, held as data: each tool's `mutating` flag and, for reads, its `state`):
- a call to a mutating tool (send, pay, book, create, set, lock) is policy "mutation";
- a read of mutable state is policy "time_sensitive": state that changes on its own (balances,
  device status, prices, weather, news) or that the user changes through a write of the same tool
  set (the calendar, files, devices; the user's own contacts);
- a read stays cacheable only when its result is fixed by construction: `state: fixed` (a pure
  computation or a reference lookup) or `state: closed_range` whose range ends before the file's
  fixed `as_of` day (list_transactions for a past month). This is decided per call, so a
  closed_range read whose range reaches `as_of` is time_sensitive.
A pair is "mutation" if either call mutates, else "time_sensitive" if either call reads mutable
state; a policy pair is never a HIT, whatever its 5-class label.

Generators: "curated" (hand-written pairs), "intent_bottom_up" (EQUIV, PARA_SAFE, RELATED_UNSAFE
and UNRELATED rows rendered from intent-and-slot templates) and "adversarial_perturbation" (one
typed operator applied to a rendered seed). All three share one plan, built once, so the family
limits (a query text in at most 3 candidates, a linked family of at most 6) hold across methods.
"""
from __future__ import annotations

import datetime as dt
import random
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from domains.curated import read_curated
from domains.families import method_generators
from domains.base import Candidate, DomainSpec, Operator, Provenance, normalize_text, stable_rng
from domains.corpora import bfcl as corpus_bfcl
from domains.verify.tool_call import canonical_call, parse_call
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "tool"
VERSION = "1"
SOURCE_FILE = CURATED / "tool.yaml"
_REL = "sources/curated/tool.yaml"
_VOCAB_TYPES_FIXED = ("number", "money", "date", "time", "year", "text")
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()
# Fixed English names: strftime would follow the process locale.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January February March April May June July August September October November December").split()

# --------------------------------------------------------------------------- loading


def _fail(record: str, problem: str, fix: str) -> InputError:
    return InputError(f"{_REL}: {record}: {problem}. {fix}")


@dataclass(frozen=True)
class Slot:
    name: str
    type: str
    step: float | None = None


@dataclass(frozen=True)
class Intent:
    id: str
    tool: str
    subcategory: str
    slots: tuple[Slot, ...]
    phrasings: tuple[str, ...]
    instances: tuple[Mapping[str, Any], ...]
    swap: tuple[str, ...] = ()
    related_vary: tuple[str, ...] = ()
    date_change_slots: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()  # slots no operator changes (e.g. the source language of a fixed text)
    same_road_region: tuple[str, ...] = ()  # city slots that must stay in one road network (driving)

    def slot(self, name: str) -> Slot:
        return next(s for s in self.slots if s.name == name)


@dataclass(frozen=True)
class ToolData:
    """The parsed curated file."""

    tools: Mapping[str, Mapping[str, Any]]          # name → tool entry (primary and alternative)
    mutating: Mapping[str, bool]                    # name → the call changes the world
    state: Mapping[str, str]                        # read name → fixed | mutable | closed_range
    range_end: Mapping[str, str]                    # closed_range read → its range-end argument
    as_of: str                                      # ISO day: a closed_range ending before it is fixed
    category_of: Mapping[str, str]
    categories: Mapping[str, tuple[str, ...]]
    alternative: Mapping[str, Mapping[str, Any]]    # primary tool → its alternative entry
    vocab: Mapping[str, Mapping[str, tuple[str, ...]]]
    road_region: Mapping[str, str]                  # city → the road network it lies in
    money: Mapping[str, Mapping[str, str]]
    intents: Mapping[str, Intent]
    related: tuple[Mapping[str, Any], ...]
    pairs: tuple[Mapping[str, Any], ...]


def _iso(value: Any) -> Any:
    # YAML reads an unquoted 2025-03-03 as a date; the canonical form is the ISO string.
    return value.isoformat() if isinstance(value, dt.date) else value


def _parse_intent(raw: Mapping[str, Any], vocab: Mapping[str, Any], tools: Mapping[str, Any]) -> Intent:
    rid = f"intents[{raw.get('id')}]"
    if raw.get("tool") not in tools:
        raise _fail(rid, f"unknown tool {raw.get('tool')!r}", "Name a tool listed under tools")
    slots = []
    for name, spec in sorted(dict(raw["slots"]).items()):
        spec = {"type": spec} if isinstance(spec, str) else dict(spec)
        if spec["type"] not in _VOCAB_TYPES_FIXED and spec["type"] not in vocab:
            raise _fail(rid, f"slot {name} has unknown type {spec['type']!r}", "Use a vocab table or a fixed type")
        slots.append(Slot(name, spec["type"], spec.get("step")))
    names = {s.name for s in slots}
    phrasings = tuple(raw["phrasings"])
    for p in phrasings:
        used = re.findall(r"\{(\w+)\}", p)
        if sorted(used) != sorted(names):
            raise _fail(rid, f"phrasing {p!r} uses slots {sorted(used)}, expected {sorted(names)}",
                        "Use every slot exactly once")
    instances = []
    for i, inst in enumerate(raw["instances"]):
        inst = {k: _iso(v) for k, v in dict(inst).items()}
        if set(inst) != names:
            raise _fail(f"{rid}.instances[{i}]", f"slots {sorted(inst)} != {sorted(names)}", "Give a value for every slot")
        for s in slots:
            if s.type in vocab and inst[s.name] not in vocab[s.type]:
                raise _fail(f"{rid}.instances[{i}]", f"{inst[s.name]!r} is not in vocab.{s.type}", "Add it to the vocab table")
        instances.append(inst)
    return Intent(raw["id"], raw["tool"], raw["subcategory"], tuple(slots), phrasings, tuple(instances),
                  swap=tuple(raw.get("swap", ())), related_vary=tuple(raw.get("related_vary", ())),
                  date_change_slots=tuple(raw.get("date_change_slots", ())), keep=tuple(raw.get("keep", ())),
                  same_road_region=tuple(raw.get("same_road_region", ())))


def _road_regions(raw: Mapping[str, Any], cities: Iterable[str]) -> dict[str, str]:
    """city → road region, every vocab city in exactly one region."""
    region: dict[str, str] = {}
    for name, members in sorted(dict(raw.get("road_regions") or {}).items()):
        for c in members:
            if c in region:
                raise _fail(f"road_regions.{name}", f"{c!r} is also in {region[c]}", "List each city in one region")
            region[c] = name
    cities = sorted(cities)
    unknown = sorted(set(region) - set(cities))
    if unknown:
        raise _fail("road_regions", f"unknown cities {', '.join(unknown)}", "Add them to vocab.city or remove them")
    missing = [c for c in cities if c not in region]
    if missing:
        raise _fail("road_regions", f"cities without a region: {', '.join(missing)}", "Put every vocab.city in one region")
    return region


def same_road_region(intent: Intent, values: Mapping[str, Any]) -> bool:
    """True when the intent's same_road_region slots (origin, destination) lie in one road network,
    so a driving route between them exists."""
    if not intent.same_road_region:
        return True
    region = load().road_region
    return len({region[values[n]] for n in intent.same_road_region}) == 1


STATES = ("fixed", "mutable", "closed_range")


def _read_state(t: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(state, range_end) of one tool entry; a write has neither."""
    rid = f"tools[{t['name']}]"
    if not isinstance(t.get("mutating"), bool):
        raise _fail(rid, "mutating must be true or false", "Set mutating")
    if "time_sensitive" in t:
        raise _fail(rid, "time_sensitive is no longer read", "Replace it by state (reads) or remove it (writes)")
    state = t.get("state")
    if t["mutating"]:
        if state is not None or "range_end" in t:
            raise _fail(rid, "a mutating tool carries a state", "Remove state: a write is policy mutation")
        return None, None
    if state not in STATES:
        raise _fail(rid, f"state is {state!r}, expected one of {', '.join(STATES)}",
                    "Set state: fixed (pure or reference), mutable (changing state) or closed_range")
    end = t.get("range_end")
    if state == "closed_range":
        props = t["parameters"].get("properties", {})
        if end not in t["parameters"].get("required", ()) or props.get(end, {}).get("format") != "date":
            raise _fail(rid, f"range_end {end!r} is not a required date parameter", "Name the date that ends the range")
    elif end is not None:
        raise _fail(rid, "range_end without state closed_range", "Remove range_end or set state: closed_range")
    return state, end


@lru_cache(maxsize=1)
def load() -> ToolData:
    """Parse and check sources/curated/tool.yaml (cached: the file is read once per process)."""
    raw = read_curated(SOURCE_FILE, ("tools",))
    tools: dict[str, Mapping[str, Any]] = {}
    mutating: dict[str, bool] = {}
    state: dict[str, str] = {}
    range_end: dict[str, str] = {}
    for t in raw["tools"]:
        if t["name"] in tools:
            raise _fail(f"tools[{t['name']}]", "duplicate tool name", "Give every tool its own name")
        st, end = _read_state(t)
        tools[t["name"]] = t
        mutating[t["name"]] = t["mutating"]
        if st is not None:
            state[t["name"]] = st
        if end is not None:
            range_end[t["name"]] = end
    as_of = _iso(raw.get("as_of"))
    try:
        dt.date.fromisoformat(as_of)
    except (TypeError, ValueError):
        raise _fail("as_of", f"{as_of!r} is not an ISO date", "Set as_of: YYYY-MM-DD (the reference day)") from None
    alternative = {}
    for a in raw.get("alternatives", []):
        if a.get("replaces") not in tools:
            raise _fail(f"alternatives[{a.get('name')}]", "replaces an unknown tool", "Name a primary tool")
        alternative[a["replaces"]] = a
        tools[a["name"]] = a
        # Another vendor's tool does the same job: same policy, range end under its own name.
        mutating[a["name"]] = mutating[a["replaces"]]
        if a["replaces"] in state:
            state[a["name"]] = state[a["replaces"]]
        if a["replaces"] in range_end:
            range_end[a["name"]] = a.get("arg_map", {}).get(range_end[a["replaces"]], range_end[a["replaces"]])
    categories = {k: tuple(v) for k, v in raw["categories"].items()}
    category_of = {}
    for cat, names in categories.items():
        for n in names:
            if n not in tools:
                raise _fail(f"categories.{cat}", f"unknown tool {n!r}", "List only tools defined under tools")
            category_of[n] = cat
    missing = sorted(n for n in mutating if n not in category_of and n not in {a["name"] for a in alternative.values()})
    if missing:
        raise _fail("categories", f"tools without a category: {', '.join(missing)}", "Add them to a category")
    for alt in alternative.values():
        category_of[alt["name"]] = category_of[alt["replaces"]]
    vocab = {t: {k: tuple(v) for k, v in table.items()} for t, table in raw["vocab"].items()}
    road_region = _road_regions(raw, vocab.get("city", {}))
    intents = {}
    for it in raw["intents"]:
        intent = _parse_intent(it, vocab, tools)
        for n in intent.same_road_region:
            if n not in {s.name for s in intent.slots if s.type == "city"}:
                raise _fail(f"intents[{intent.id}]", f"same_road_region names {n!r}, not a city slot", "Name city slots")
        for i, inst in enumerate(intent.instances):
            if len({road_region[inst[n]] for n in intent.same_road_region}) > 1:
                raise _fail(f"intents[{intent.id}].instances[{i}]",
                            f"{', '.join(str(inst[n]) for n in intent.same_road_region)} are not joined by road",
                            "Pick cities of one road_regions entry")
        intents[intent.id] = intent
    for r in raw.get("related", []):
        if r["a"] not in intents or r["b"] not in intents:
            raise _fail(f"related[{r['a']}->{r['b']}]", "unknown intent", "Name intents defined under intents")
    return ToolData(tools, mutating, state, range_end, as_of, category_of, categories, alternative, vocab, road_region, raw["money"], intents,
                    tuple(raw.get("related", [])), tuple(raw.get("pairs", [])))


def offered_schema(name: str) -> dict[str, Any]:
    """A tool as offered to the model: name, description and parameters only."""
    t = load().tools[name]
    return {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}


def offered_tools(call_tools: Iterable[str]) -> tuple[dict[str, Any], ...]:
    """The tools offered for a request: the whole category of each called tool, with a called
    alternative replacing its primary tool."""
    data = load()
    names: list[str] = []
    for tool in call_tools:
        cat = data.categories[data.category_of[tool]]
        for n in cat:
            alt = data.alternative.get(n)
            chosen = alt["name"] if alt is not None and alt["name"] == tool else n
            if chosen not in names:
                names.append(chosen)
    return tuple(offered_schema(n) for n in names)


def reads_mutable_state(name: str, args: Mapping[str, Any]) -> bool:
    """True when a read's result can change between two identical calls: state mutable, or a
    closed_range whose range end is not before as_of (an open or future range). A tool this
    domain does not define (e.g. BFCL's) is not claimed."""
    data = load()
    st = data.state.get(name)
    if st == "mutable":
        return True
    if st != "closed_range":
        return False
    try:
        end = dt.date.fromisoformat(str(args[data.range_end[name]]))
    except (KeyError, ValueError):
        return True  # no readable end: not provably closed, so not cacheable
    return end >= dt.date.fromisoformat(data.as_of)


def call_policy(name: str, args: Mapping[str, Any]) -> str | None:
    """The policy one canonical call forces: mutation (a write), time_sensitive (a read of
    mutable state) or None (a read fixed by construction)."""
    if load().mutating.get(name, False):
        return "mutation"
    return "time_sensitive" if reads_mutable_state(name, args) else None


def policy(c: Candidate) -> str | None:
    """mutation if either canonical call mutates, else time_sensitive if either reads mutable state."""
    held = set()
    for text in (c.expected_answer_a, c.expected_answer_b):
        try:
            held.add(call_policy(*parse_call(text)))
        except ValueError:
            continue
    if "mutation" in held:
        return "mutation"
    return "time_sensitive" if "time_sensitive" in held else None


# --------------------------------------------------------------------------- slot values


def _number(v: Any) -> int | float:
    f = float(v)
    return int(f) if f.is_integer() else f


def _money(v: str) -> tuple[int | float, str]:
    amount, code = str(v).split()
    return _number(amount), code


def _fmt_amount(x: int | float, sep: bool) -> str:
    return (f"{x:,}" if sep else f"{x}") if isinstance(x, int) else f"{x:.2f}"


def surfaces(slot_type: str, value: Any) -> tuple[str, ...]:
    """Every way a user may write one slot value; the first is the default."""
    data = load()
    if slot_type in data.vocab:
        return data.vocab[slot_type][value]
    if slot_type == "number":
        n = _number(value)
        word = (_NUMBER_WORDS[n],) if isinstance(n, int) and 2 <= n <= 12 else ()
        return (str(n), *word)
    if slot_type == "money":
        amount, code = _money(value)
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
        amount, code = _money(value)
        return {slot.name: amount, "currency": code}
    if slot.type in ("number", "year"):
        return {slot.name: _number(value)}
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
        return dict(self.values)

    def with_value(self, **changes: Any) -> "Seed":
        vals = dict(self.values)
        vals.update(changes)
        return replace(self, values=tuple(sorted(vals.items())))


def intent_of(seed: Seed) -> Intent:
    return load().intents[seed.intent]


def tool_name(seed: Seed) -> str:
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


def _style_template(template: str, style: Iterable[str]) -> str:
    for name in style:
        template = _STYLES[name](template)
    return template


def render(seed: Seed) -> str:
    """The request text: the phrasing, styled, with every slot written in its chosen form."""
    it = intent_of(seed)
    template = _style_template(it.phrasings[seed.phrasing], seed.style)
    forms = dict(seed.forms)
    vals = seed.value

    def fill(m: re.Match) -> str:
        s = it.slot(m.group(1))
        options = surfaces(s.type, vals[s.name])
        return options[forms.get(s.name, 0) % len(options)]

    return re.sub(r"\{(\w+)\}", fill, template)


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


_STYLES: dict[str, Callable[[str], str]] = {
    "lowercase": lambda t: re.sub(r"[^{}]+(?=\{|$)", lambda m: m.group(0).lower(), t),
    "no_final_punctuation": lambda t: t[:-1] if t[-1:] in ".?!" else t,
    "double_space": lambda t: t.replace(" ", "  ", 1),
    "curly_quotes": lambda t: t.replace('"{', "\u201c{").replace('}"', "}\u201d"),
    "contraction": _contract,
}


# --------------------------------------------------------------------------- plan

@dataclass
class _Tracker:
    """Keeps families small: a normalised query text in at most 3 candidates, and a group of
    candidates linked by shared texts at most 6 (union-find over texts)."""

    uses: Counter = field(default_factory=Counter)
    parent: dict[str, str] = field(default_factory=dict)
    size: Counter = field(default_factory=Counter)  # root → candidates in the family

    def _root(self, t: str) -> str:
        self.parent.setdefault(t, t)
        while self.parent[t] != t:
            self.parent[t] = self.parent[self.parent[t]]
            t = self.parent[t]
        return t

    def admit(self, *texts: str) -> bool:
        keys = sorted({normalize_text(t) for t in texts})
        if any(self.uses[k] >= 3 for k in keys):
            return False
        roots = sorted({self._root(k) for k in keys})
        if sum(self.size[r] for r in roots) + 1 > 6:
            return False
        for k in keys:
            self.uses[k] += 1
        top = roots[0]
        for r in roots[1:]:
            self.parent[r] = top
            self.size[top] += self.size.pop(r, 0)
        self.size[top] += 1
        return True


@dataclass
class _Pool:
    """Renderings of one intent instance in a stable shuffled order; `take` prefers texts no
    candidate uses yet."""

    seeds: list[Seed]

    def take(self, tracker: _Tracker, avoid_phrasing: int | None = None) -> Seed | None:
        best = None
        for s in self.seeds:
            if s.phrasing == avoid_phrasing:
                continue
            n = tracker.uses[normalize_text(render(s))]
            if n == 0:
                return s
            if n < 2 and best is None:
                best = s
        return best


def _pool(intent: Intent, idx: int) -> _Pool:
    inst = intent.instances[idx]
    combos: list[Seed] = []
    counts = [len(surfaces(s.type, inst[s.name])) for s in intent.slots]
    rng = stable_rng(DOMAIN, "pool", intent.id, idx)
    for p in range(len(intent.phrasings)):
        # Each phrasing gets every slot's forms in turn (not the full product, which is large).
        for k in range(max(counts)):
            forms = tuple((s.name, (k + rng.randrange(c)) % c) for s, c in zip(intent.slots, counts))
            combos.append(Seed(intent.id, tuple(sorted(inst.items())), p, forms))
    rng.shuffle(combos)
    seen, unique = set(), []
    for s in combos:
        key = normalize_text(render(s))
        if key not in seen:
            seen.add(key)
            unique.append(s)
    return _Pool(unique)


# --------------------------------------------------------------------------- operators
# Each operator takes a seed and an rng and returns (variant seed, params) or None when it does not
# apply. The variant keeps the phrasing and every surface form, so the two requests differ only in
# the one answer-determining token the operator changed.

_ENTITY_TYPES = ("city", "country", "room", "door", "device")


def _call_valid(seed: Seed) -> bool:
    from jsonschema import Draft202012Validator

    name, args = parse_call(call_text(seed))
    v = Draft202012Validator(load().tools[name]["parameters"], format_checker=Draft202012Validator.FORMAT_CHECKER)
    return v.is_valid(args)


def _pick_other(seed: Seed, slot: Slot, rng: random.Random) -> Any:
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
    swap = intent_of(seed).swap
    if len(swap) != 2:
        return None
    a, b = swap
    va, vb = seed.value[a], seed.value[b]
    if va == vb:
        return None
    return seed.with_value(**{a: vb, b: va}), {"slots": [a, b], "from": [va, vb], "to": [vb, va]}


def op_amount_change(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    slots = _slots_of(seed, ("money", "number"))
    if not slots:
        return None
    s = rng.choice(slots)
    old = seed.value[s.name]
    amount, code = _money(old) if s.type == "money" else (_number(old), None)
    step = s.step or ((10 if amount < 1000 else 100) if s.type == "money" else 1)
    k = rng.choice([1, 2, 3, 5])
    for delta in (k * step, -k * step):
        new_amount = _number(amount + delta)
        if new_amount <= 0:
            continue
        new = f"{new_amount} {code}" if code else new_amount
        variant = seed.with_value(**{s.name: new})
        if _call_valid(variant):
            return variant, {"slot": s.name, "from": old, "to": new}
    return None


def op_date_change(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
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
    slots = _slots_of(seed, ("contact",))
    if not slots:
        return None
    s = slots[0]
    new = _pick_other(seed, s, rng)
    if new is None:
        return None
    return seed.with_value(**{s.name: new}), {"slot": s.name, "from": seed.value[s.name], "to": new}


def _entity_change(types: tuple[str, ...]) -> Callable[[Seed, random.Random], tuple[Seed, dict] | None]:
    def apply(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
        slots = _slots_of(seed, types)
        if not slots:
            return None
        s = rng.choice(slots)
        new = _pick_other(seed, s, rng)
        if new is None:
            return None
        return seed.with_value(**{s.name: new}), {"slot": s.name, "from": seed.value[s.name], "to": new}
    return apply


def op_tool_list_swap(seed: Seed, rng: random.Random) -> tuple[Seed, dict] | None:
    it = intent_of(seed)
    alt = load().alternative.get(it.tool)
    if alt is None or seed.alt:
        return None
    # The request stays the same (only a surface style on the fixed words, so the texts differ);
    # the offered tool list names another vendor's tool, so the canonical call differs.
    style = _equiv_style(seed, rng)
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


def _equiv_style(seed: Seed, rng: random.Random) -> tuple[str, ...] | None:
    """One or two surface styles that really change the phrasing's text."""
    base = intent_of(seed).phrasings[seed.phrasing]
    names = sorted(_STYLES)
    rng.shuffle(names)
    for n in range(1, 3):
        for i in range(len(names) - n + 1):
            style = tuple(names[i:i + n])
            if _style_template(base, style) != base:
                return style
    return None


# --------------------------------------------------------------------------- candidates

_GROUNDING = {
    "EQUIV": "A user repeats a request to a tool-using assistant with only typing differences (case, "
             "punctuation, spacing, quotes, contractions).",
    "PARA_SAFE": "Users word the same {tool} request differently, writing dates, amounts and places in "
                 "different but equivalent forms.",
    "ADVERSARIAL": "A tool-using assistant receives two near-identical requests in which one argument "
                   "({what}) differs, so the function call must differ.",
    "RELATED_UNSAFE": "A user follows a {tool} request with another request about the same kind of object "
                      "that needs a different call.",
    "UNRELATED": "One assistant with function calling serves unrelated requests ({tool} and {tool_b}).",
}
_POLICY_NOTE = {
    "mutation": " The call changes the world (send, pay, book, delete, set), so it is never served from "
                "a cache: policy mutation.",
    "time_sensitive": " The call reads state that changes (live prices, weather, news, or the user's own "
                      "calendar, files, contacts, accounts or devices), so the answer depends on when it is "
                      "asked and it is never served from a cache: policy time_sensitive.",
}


def _make(label: str, method: str, call_a: str, call_b: str, query_a: str, query_b: str, *,
          subcategory: str, rationale: str, template_id: str, grounding: str,
          operator: str | None = None, params: Mapping[str, Any] | None = None) -> Candidate:
    tool_a, tool_b = parse_call(call_a)[0], parse_call(call_b)[0]
    c = Candidate(
        domain=DOMAIN, subcategory=subcategory, label=label, query_a=query_a, query_b=query_b,
        expected_answer_a=call_a, expected_answer_b=call_b, rationale=rationale,
        verification_method="json_schema_call", verification_payload={},
        construction_method=method, source="curated", real_world_grounding=grounding,
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template_id,
                              operator=operator, operator_params=dict(params) if params is not None else None,
                              source_file=_REL),
        tools_a=offered_tools([tool_a]), tools_b=offered_tools([tool_b]),
    )
    reason = policy(c)
    if reason is None:
        return c
    return c.with_(verification_method="policy_no_cache",
                   verification_payload={"policy": reason, "underlying_method": "json_schema_call",
                                         "underlying_payload": {}},
                   rationale=rationale + _POLICY_NOTE[reason])


def _from_seeds(label: str, method: str, a: Seed, b: Seed, *, rationale: str, template_id: str,
                subcategory: str | None = None, operator: str | None = None, params: Mapping[str, Any] | None = None,
                query_b: str | None = None, what: str = "") -> Candidate:
    ta, tb = tool_name(a), tool_name(b)
    grounding = _GROUNDING[label].format(tool=ta, tool_b=tb, what=what or "an argument")
    return _make(label, method, call_text(a), call_text(b), render(a), query_b if query_b is not None else render(b),
                 subcategory=subcategory or intent_of(a).subcategory, rationale=rationale,
                 template_id=template_id, grounding=grounding, operator=operator, params=params)


def _is_plain(intent: Intent) -> bool:
    """True when every instance's call is cacheable (no policy): a fixed read, or a closed past range."""
    return all(call_policy(*parse_call(call_text(Seed(intent.id, tuple(sorted(inst.items())), 0, ())))) is None
               for inst in intent.instances)


def _random_seed(intent: Intent, values: Mapping[str, Any], rng: random.Random, avoid_phrasing: int | None) -> Seed:
    phrasings = [p for p in range(len(intent.phrasings)) if p != avoid_phrasing]
    forms = tuple((s.name, rng.randrange(len(surfaces(s.type, values[s.name])))) for s in intent.slots)
    return Seed(intent.id, tuple(sorted(values.items())), rng.choice(phrasings), forms)


def _distinct_typed_values(intent: Intent, values: Mapping[str, Any]) -> bool:
    """False when two slots of one vocab type hold the same value (a transfer from savings to savings)."""
    seen: set[tuple[str, Any]] = set()
    for s in intent.slots:
        if s.type in load().vocab:
            key = (s.type, values[s.name])
            if key in seen:
                return False
            seen.add(key)
    return True


@dataclass
class _Planner:
    tracker: _Tracker = field(default_factory=_Tracker)
    out: list[Candidate] = field(default_factory=list)
    drops: Counter = field(default_factory=Counter)
    pools: dict[tuple[str, int], _Pool] = field(default_factory=dict)

    def pool(self, intent: Intent, idx: int) -> _Pool:
        if (intent.id, idx) not in self.pools:
            self.pools[(intent.id, idx)] = _pool(intent, idx)
        return self.pools[(intent.id, idx)]

    def emit(self, c: Candidate | None, label: str) -> None:
        if c is None:
            self.drops[f"{label}:no_fresh_text"] += 1
        elif c.query_a == c.query_b and c.verification_method != "policy_no_cache":
            self.drops[f"{label}:identical_text_without_policy"] += 1
        elif self.tracker.admit(c.query_a, c.query_b):
            self.out.append(c)
        else:
            self.drops[f"{label}:family_limit"] += 1


def _curated(p: _Planner) -> None:
    for i, pair in enumerate(load().pairs):
        calls = [canonical_call(pair[k][0], {a: _iso(v) for a, v in pair[k][1].items()}) for k in ("call_a", "call_b")]
        tool = parse_call(calls[0])[0]
        p.emit(_make(pair["label"], "curated", calls[0], calls[1], pair["query_a"], pair["query_b"],
                     subcategory=pair["subcategory"], rationale=pair["rationale"], template_id=f"pairs[{i}]",
                     grounding=_GROUNDING[pair["label"]].format(tool=tool, tool_b=parse_call(calls[1])[0],
                                                                what="an argument")), pair["label"])


def _hits(p: _Planner) -> None:
    data = load()
    mutating_seen = 0
    for intent in data.intents.values():
        plain = _is_plain(intent)
        indices = range(len(intent.instances)) if plain else range(1)
        for idx in indices:
            rng = stable_rng(DOMAIN, "hit", intent.id, idx)
            pool = p.pool(intent, idx)
            a = pool.take(p.tracker)
            identical = False
            if a is not None and data.mutating[intent.tool]:
                mutating_seen += 1
                identical = mutating_seen % 2 == 1  # every other mutating intent: the very same request
            style = None if a is None or identical else _equiv_style(a, rng)
            if a is None or (style is None and not identical):
                p.emit(None, "EQUIV")
            else:
                b = a if identical else replace(a, style=style)
                why = ("The identical request sent twice." if identical else
                       f"Surface changes only ({', '.join(style)}); intent and slot values are the same.")
                p.emit(_from_seeds("EQUIV", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
                                   rationale=why + " The canonical call is identical."), "EQUIV")
            a = pool.take(p.tracker)
            b = pool.take(p.tracker, avoid_phrasing=a.phrasing) if a is not None else None
            if a is None or b is None:
                p.emit(None, "PARA_SAFE")
                continue
            p.emit(_from_seeds("PARA_SAFE", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
                               rationale=f"Two phrasings of {intent.id} with the same slot values; after "
                                         "normalisation (ISO dates, codes, canonical names) the canonical call "
                                         "is identical."), "PARA_SAFE")


def _adversarial(p: _Planner) -> None:
    for intent in load().intents.values():
        for idx in range(len(intent.instances)):
            rng = stable_rng(DOMAIN, "adv", intent.id, idx)
            chosen = [n for n in sorted(OPERATORS) if n != "tool_list_swap"]
            rng.shuffle(chosen)
            plan = chosen + (["tool_list_swap"] if idx % 2 == 0 else [])
            done_plain = False
            for name in plan:
                if done_plain and name != "tool_list_swap":
                    continue
                a = p.pool(intent, idx).take(p.tracker)
                if a is None:
                    p.emit(None, "ADVERSARIAL")
                    break
                res = OPERATORS[name].apply(a, stable_rng(DOMAIN, "op", name, intent.id, idx))
                if res is None:
                    continue
                b, params = res
                done_plain = done_plain or name != "tool_list_swap"
                what = params.get("slot") or "/".join(params.get("slots", [])) or "the offered tool"
                p.emit(_from_seeds("ADVERSARIAL", "adversarial_perturbation", a, b, operator=name, params=params,
                                   template_id=f"{intent.id}/{idx}", what=what,
                                   rationale=f"Operator {name} changed {what} ({params.get('from', params.get('from_tool'))} "
                                             f"-> {params.get('to', params.get('to_tool'))}); the request reads almost the "
                                             "same but the canonical call differs."), "ADVERSARIAL")


def _related(p: _Planner) -> None:
    data = load()
    for intent in data.intents.values():
        n = len(intent.instances)
        for idx in range(n):
            rng = stable_rng(DOMAIN, "rel", intent.id, idx)
            a = p.pool(intent, idx).take(p.tracker)
            if a is None:
                p.emit(None, "RELATED_UNSAFE")
                continue
            if intent.related_vary:
                s = intent.slot(intent.related_vary[0])
                new = _pick_other(a, s, rng)
                b = _random_seed(intent, {**a.value, s.name: new}, rng, a.phrasing)
                why = f"Same tool and {', '.join(k for k in a.value if k != s.name)}, but another {s.name} is asked for."
            else:
                b = p.pool(intent, (idx + 1) % n).take(p.tracker, avoid_phrasing=a.phrasing)
                if b is None:
                    p.emit(None, "RELATED_UNSAFE")
                    continue
                why = f"Same tool ({intent.tool}) and topic, but materially different arguments."
            p.emit(_from_seeds("RELATED_UNSAFE", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
                               rationale=why), "RELATED_UNSAFE")
    for r in data.related:
        ia, ib = data.intents[r["a"]], data.intents[r["b"]]
        for idx in range(len(ia.instances)):
            rng = stable_rng(DOMAIN, "relx", ia.id, ib.id, idx)
            a = p.pool(ia, idx).take(p.tracker)
            values = dict(ib.instances[idx % len(ib.instances)])
            if a is None:
                p.emit(None, "RELATED_UNSAFE")
                continue
            for sa, sb in sorted(r["share"].items()):
                values[sb] = a.value[sa]
            if not _distinct_typed_values(ib, values):
                continue
            if not same_road_region(ib, values):
                p.drops["RELATED_UNSAFE:no_road_route"] += 1
                continue
            b = _random_seed(ib, values, rng, None)
            write = data.mutating[ib.tool] and not data.mutating[ia.tool]
            sub = "read_vs_write" if write else "another_question"
            why = (f"A read ({ia.tool}) and a write ({ib.tool}) of the same object." if write else
                   f"Another question ({ib.tool}) about the same {', '.join(sorted(r['share'].values()))}.")
            p.emit(_from_seeds("RELATED_UNSAFE", "intent_bottom_up", a, b, subcategory=sub,
                               template_id=f"{ia.id}~{ib.id}/{idx}", rationale=why), "RELATED_UNSAFE")


def _unrelated(p: _Planner) -> None:
    data = load()
    intents = list(data.intents.values())
    for intent in intents:
        indices = range(len(intent.instances)) if _is_plain(intent) else range(min(2, len(intent.instances)))
        for idx in indices:
            rng = stable_rng(DOMAIN, "unrel", intent.id, idx)
            cat = data.category_of[intent.tool]
            others = [i for i in intents if data.category_of[i.tool] != cat]
            if _is_plain(intent) and idx % 3 != 2:
                # Mostly plain partners, so most UNRELATED rows are decided by the call itself.
                others = [i for i in others if _is_plain(i)]
            other = rng.choice(others)
            a = p.pool(intent, idx).take(p.tracker)
            b = p.pool(other, rng.randrange(len(other.instances))).take(p.tracker)
            if a is None or b is None:
                p.emit(None, "UNRELATED")
                continue
            p.emit(_from_seeds("UNRELATED", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
                               subcategory=f"{cat}_vs_{data.category_of[other.tool]}",
                               rationale=f"Plainly different tasks: {intent.tool} vs {other.tool}."), "UNRELATED")


@lru_cache(maxsize=1)
def plan() -> tuple[tuple[Candidate, ...], tuple[tuple[str, int], ...]]:
    """Every candidate of the domain, and the planning drops by reason. Built once: the three
    generators share it so the family limits hold across construction methods. Randomness comes
    from stable_rng(DOMAIN, ...), i.e. exactly what ctx.rng(...) gives for this domain."""
    p = _Planner()
    # Scarce fresh texts go first to the hand-written pairs, then to the cells in order.
    for step in (_curated, _hits, _adversarial, _related, _unrelated):
        step(p)
    return tuple(p.out), tuple(sorted(p.drops.items()))



SPEC = DomainSpec(
    name=DOMAIN,
    description="Function-calling requests; the answer is the canonical tool call (JSON Schema validated).",
    generators={**method_generators(DOMAIN, lambda ctx: plan()[0], ("curated", "intent_bottom_up", "adversarial_perturbation")),
                "existing_benchmark": corpus_bfcl.tool_rows},
    verifier="json_schema_call",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
)
