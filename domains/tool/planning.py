"""The one plan of the tool domain: every candidate of every label, under one family guard.

Scarce fresh texts go first to the hand-written pairs, then to the cells in order (EQUIV and
PARA_SAFE, ADVERSARIAL, RELATED_UNSAFE, UNRELATED). Each intent instance has a pool of renderings
in a stable shuffled order, and a step takes the rendering whose text the fewest candidates use
yet, so the family limits (a query text in at most 3 candidates, a linked family of at most 6)
hold across construction methods. Every refusal is counted by label and reason.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Mapping

from domains.base import Candidate, normalize_text, stable_rng
from domains.families import FamilyGuard
from domains.tool.candidates import GROUNDING, from_seeds, make
from domains.tool.catalog import DOMAIN, Intent, iso, load, same_road_region
from domains.tool.operators import OPERATORS, pick_other
from domains.tool.policy import call_policy
from domains.tool.rendering import Seed, call_text, equiv_style, render, surfaces
from domains.verify.tool_call import canonical_call, parse_call


@dataclass
class Pool:
    """Renderings of one intent instance in a stable shuffled order; `take` prefers texts no
    candidate uses yet."""

    seeds: list[Seed]

    def take(self, guard: FamilyGuard, avoid_phrasing: int | None = None) -> Seed | None:
        """The first rendering whose text no accepted candidate uses, else the first used once,
        else None; never one of phrasing `avoid_phrasing`."""
        best = None
        for s in self.seeds:
            if s.phrasing == avoid_phrasing:
                continue
            n = guard.uses.get(normalize_text(render(s)), 0)
            if n == 0:
                return s
            if n < 2 and best is None:
                best = s
        return best


def build_pool(intent: Intent, idx: int) -> Pool:
    """Every phrasing of instance `idx` with each slot's surface forms in turn, shuffled, one
    seed per distinct normalised text."""
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
    return Pool(unique)


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
    """The plan being built: accepted candidates, drops by reason, and one pool per instance."""

    # The shared guard also refuses a repeated pair signature; no tool pair the plan admits
    # repeats one, so it changes nothing here and guards future curated edits.
    guard: FamilyGuard = field(default_factory=FamilyGuard)
    out: list[Candidate] = field(default_factory=list)
    drops: Counter = field(default_factory=Counter)
    pools: dict[tuple[str, int], Pool] = field(default_factory=dict)

    def pool(self, intent: Intent, idx: int) -> Pool:
        if (intent.id, idx) not in self.pools:
            self.pools[(intent.id, idx)] = build_pool(intent, idx)
        return self.pools[(intent.id, idx)]

    def take(self, intent: Intent, idx: int, avoid_phrasing: int | None = None) -> Seed | None:
        return self.pool(intent, idx).take(self.guard, avoid_phrasing)

    def emit(self, c: Candidate | None, label: str) -> None:
        if c is None:
            self.drops[f"{label}:no_fresh_text"] += 1
        elif c.query_a == c.query_b and c.verification_method != "policy_no_cache":
            self.drops[f"{label}:identical_text_without_policy"] += 1
        elif self.guard.offer(c):
            self.out.append(c)
        else:
            self.drops[f"{label}:family_limit"] += 1


def _curated(p: _Planner) -> None:
    for i, pair in enumerate(load().pairs):
        calls = [canonical_call(pair[k][0], {a: iso(v) for a, v in pair[k][1].items()}) for k in ("call_a", "call_b")]
        tool = parse_call(calls[0])[0]
        p.emit(make(pair["label"], "curated", calls[0], calls[1], pair["query_a"], pair["query_b"],
                    subcategory=pair["subcategory"], rationale=pair["rationale"], template_id=f"pairs[{i}]",
                    grounding=GROUNDING[pair["label"]].format(tool=tool, tool_b=parse_call(calls[1])[0],
                                                              what="an argument")), pair["label"])


def _hits(p: _Planner) -> None:
    data = load()
    mutating_seen = 0
    for intent in data.intents.values():
        plain = _is_plain(intent)
        indices = range(len(intent.instances)) if plain else range(1)
        for idx in indices:
            rng = stable_rng(DOMAIN, "hit", intent.id, idx)
            a = p.take(intent, idx)
            identical = False
            if a is not None and data.mutating[intent.tool]:
                mutating_seen += 1
                identical = mutating_seen % 2 == 1  # every other mutating intent: the very same request
            style = None if a is None or identical else equiv_style(a, rng)
            if a is None or (style is None and not identical):
                p.emit(None, "EQUIV")
            else:
                b = a if identical else replace(a, style=style)
                why = ("The identical request sent twice." if identical else
                       f"Surface changes only ({', '.join(style)}); intent and slot values are the same.")
                p.emit(from_seeds("EQUIV", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
                                  rationale=why + " The canonical call is identical."), "EQUIV")
            a = p.take(intent, idx)
            b = p.take(intent, idx, avoid_phrasing=a.phrasing) if a is not None else None
            if a is None or b is None:
                p.emit(None, "PARA_SAFE")
                continue
            p.emit(from_seeds("PARA_SAFE", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
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
                a = p.take(intent, idx)
                if a is None:
                    p.emit(None, "ADVERSARIAL")
                    break
                res = OPERATORS[name].apply(a, stable_rng(DOMAIN, "op", name, intent.id, idx))
                if res is None:
                    continue
                b, params = res
                done_plain = done_plain or name != "tool_list_swap"
                what = params.get("slot") or "/".join(params.get("slots", [])) or "the offered tool"
                p.emit(from_seeds("ADVERSARIAL", "adversarial_perturbation", a, b, operator=name, params=params,
                                  template_id=f"{intent.id}/{idx}", what=what,
                                  rationale=f"Operator {name} changed {what} ({params.get('from', params.get('from_tool'))} "
                                            f"-> {params.get('to', params.get('to_tool'))}); the request reads almost the "
                                            "same but the canonical call differs."), "ADVERSARIAL")


def _related_within(p: _Planner, intent: Intent) -> None:
    """RELATED_UNSAFE pairs of one intent: another value of its related_vary slot, or the next
    instance."""
    n = len(intent.instances)
    for idx in range(n):
        rng = stable_rng(DOMAIN, "rel", intent.id, idx)
        a = p.take(intent, idx)
        if a is None:
            p.emit(None, "RELATED_UNSAFE")
            continue
        if intent.related_vary:
            s = intent.slot(intent.related_vary[0])
            new = pick_other(a, s, rng)
            b = _random_seed(intent, {**a.value, s.name: new}, rng, a.phrasing)
            why = f"Same tool and {', '.join(k for k in a.value if k != s.name)}, but another {s.name} is asked for."
        else:
            b = p.take(intent, (idx + 1) % n, avoid_phrasing=a.phrasing)
            if b is None:
                p.emit(None, "RELATED_UNSAFE")
                continue
            why = f"Same tool ({intent.tool}) and topic, but materially different arguments."
        p.emit(from_seeds("RELATED_UNSAFE", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
                          rationale=why), "RELATED_UNSAFE")


def _related_across(p: _Planner, r: Mapping[str, Any]) -> None:
    """RELATED_UNSAFE pairs of two intents the curated `related` entry `r` links by shared slots."""
    data = load()
    ia, ib = data.intents[r["a"]], data.intents[r["b"]]
    for idx in range(len(ia.instances)):
        rng = stable_rng(DOMAIN, "relx", ia.id, ib.id, idx)
        a = p.take(ia, idx)
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
        p.emit(from_seeds("RELATED_UNSAFE", "intent_bottom_up", a, b, subcategory=sub,
                          template_id=f"{ia.id}~{ib.id}/{idx}", rationale=why), "RELATED_UNSAFE")


def _related(p: _Planner) -> None:
    data = load()
    for intent in data.intents.values():
        _related_within(p, intent)
    for r in data.related:
        _related_across(p, r)


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
            a = p.take(intent, idx)
            b = p.take(other, rng.randrange(len(other.instances)))
            if a is None or b is None:
                p.emit(None, "UNRELATED")
                continue
            p.emit(from_seeds("UNRELATED", "intent_bottom_up", a, b, template_id=f"{intent.id}/{idx}",
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
