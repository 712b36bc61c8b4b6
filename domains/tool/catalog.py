"""The curated catalog of the tool domain: tools, vocab and intents from sources/curated/tool.yaml.

`load()` parses and checks the file once per process into a frozen `ToolData`: every tool's
parameters schema (through `schemas.schema_problem`), its caching state, the categories offered
together, the alternative vendors' tools, the slot vocab, the road regions and the intent
templates. Every problem is a one-line InputError naming the record and how to fix it.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping

from domains.curated import read_curated
from domains.tool.schemas import schema_problem
from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

DOMAIN = "tool"
VERSION = "1"
SOURCE_FILE = CURATED / "tool.yaml"
# Messages name the shipped file even when a test points SOURCE_FILE at a copy.
SOURCE_REL = "sources/curated/tool.yaml"
FIXED_SLOT_TYPES = ("number", "money", "date", "time", "year", "text")
STATES = ("fixed", "mutable", "closed_range")


def _fail(record: str, problem: str, fix: str) -> InputError:
    return InputError(f"{SOURCE_REL}: {record}: {problem}. {fix}")


@dataclass(frozen=True)
class Slot:
    """One slot of an intent: its name, its type (a vocab table or a fixed type) and, for amounts,
    the step an amount change moves by."""

    name: str
    type: str
    step: float | None = None


@dataclass(frozen=True)
class Intent:
    """An intent-and-slot template: the tool it calls, its phrasings and its instances (one
    canonical call each), with the operator hints the curated file gives."""

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
        """The slot called `name`."""
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


def iso(value: Any) -> Any:
    """A YAML date as its ISO string (YAML reads an unquoted 2025-03-03 as a date); anything else
    unchanged."""
    return value.isoformat() if isinstance(value, dt.date) else value


def _parse_intent(raw: Mapping[str, Any], vocab: Mapping[str, Any], tools: Mapping[str, Any]) -> Intent:
    rid = f"intents[{raw.get('id')}]"
    if raw.get("tool") not in tools:
        raise _fail(rid, f"unknown tool {raw.get('tool')!r}", "Name a tool listed under tools")
    slots = []
    for name, spec in sorted(dict(raw["slots"]).items()):
        spec = {"type": spec} if isinstance(spec, str) else dict(spec)
        if spec["type"] not in FIXED_SLOT_TYPES and spec["type"] not in vocab:
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
        inst = {k: iso(v) for k, v in dict(inst).items()}
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


def _check_parameters(kind: str, t: Mapping[str, Any]) -> None:
    """A tool's parameters must be JSON Schema and nothing else (see schemas.py)."""
    found = schema_problem(t.get("parameters"))
    if found is not None:
        raise _fail(f"{kind}[{t.get('name')}]", *found)


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
        _check_parameters("tools", t)
        st, end = _read_state(t)
        tools[t["name"]] = t
        mutating[t["name"]] = t["mutating"]
        if st is not None:
            state[t["name"]] = st
        if end is not None:
            range_end[t["name"]] = end
    as_of = iso(raw.get("as_of"))
    try:
        dt.date.fromisoformat(as_of)
    except (TypeError, ValueError):
        raise _fail("as_of", f"{as_of!r} is not an ISO date", "Set as_of: YYYY-MM-DD (the reference day)") from None
    alternative = {}
    for a in raw.get("alternatives", []):
        if a.get("replaces") not in tools:
            raise _fail(f"alternatives[{a.get('name')}]", "replaces an unknown tool", "Name a primary tool")
        _check_parameters("alternatives", a)
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


def same_road_region(intent: Intent, values: Mapping[str, Any]) -> bool:
    """True when the intent's same_road_region slots (origin, destination) lie in one road network,
    so a driving route between them exists."""
    if not intent.same_road_region:
        return True
    region = load().road_region
    return len({region[values[n]] for n in intent.same_road_region}) == 1


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
