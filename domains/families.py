"""Family limits and small candidate-building helpers shared by the domain modules.

The split rule (domains/README.md): a normalised query text appears in at most 3 candidates, and a
group of candidates linked by shared query texts holds at most 6, so that splits can keep test
queries out of train/dev. `FamilyGuard` enforces it; `limit_families` (one ordered stream) and
`select` (labels taking turns) are the two ways domains feed it. The surface helpers make EQUIV
variants; `caps_for`, `capped_builder` and `method_generator` wire a domain's cached build into
per-method generators. Standard library only.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from domains.base import LABELS, Candidate, GenContext, normalize_text, stable_rng

MAX_TEXT_USES = 3
MAX_GROUP = 6


class FamilyGuard:
    """Accepts candidates while every normalised query text stays in at most `max_uses`
    candidates and every group of candidates linked by shared texts holds at most `max_group`.
    A candidate whose pair signature was already accepted is refused."""

    def __init__(self, max_uses: int = MAX_TEXT_USES, max_group: int = MAX_GROUP) -> None:
        self.max_uses = max_uses
        self.max_group = max_group
        self.uses: dict[str, int] = {}
        self.parent: dict[str, str] = {}
        self.size: dict[str, int] = {}
        self.signatures: set = set()

    def _find(self, t: str) -> str:
        while self.parent.get(t, t) != t:
            t = self.parent[t]
        return t

    def offer(self, c: Candidate) -> bool:
        """Accept `c` (and count it) if it keeps both limits, else leave the state unchanged."""
        texts = sorted({normalize_text(c.query_a), normalize_text(c.query_b)})
        sig = c.pair_signature()
        if sig in self.signatures or any(self.uses.get(t, 0) >= self.max_uses for t in texts):
            return False
        # Sorted roots, so the merged group's root never depends on offer order within a pair.
        roots = sorted({self._find(t) for t in texts})
        if sum(self.size.get(r, 0) for r in roots) + 1 > self.max_group:
            return False
        self.signatures.add(sig)
        for t in texts:
            self.uses[t] = self.uses.get(t, 0) + 1
            self.parent.setdefault(t, t)
        root = roots[0]
        self.size[root] = sum(self.size.get(r, 0) for r in roots) + 1
        for r in roots[1:]:
            self.parent[r] = root
            self.size.pop(r, None)
        return True


def limit_families(cands: Iterable[Candidate], max_uses: int = MAX_TEXT_USES, max_group: int = MAX_GROUP,
                   cap: Mapping[str, int] | None = None) -> list[Candidate]:
    """Keep candidates in order while every normalised query text stays in at most `max_uses`
    candidates and every group linked by shared texts holds at most `max_group` (the split rule,
    which looks at query text only, not system prompts or context). Duplicate pair signatures are
    dropped first, and a label stops at its `cap`, so that neither uses up the text budget the
    other labels need."""
    guard = FamilyGuard(max_uses, max_group)
    per_label: dict[str, int] = {}
    kept: list[Candidate] = []
    for c in cands:
        if cap is not None and per_label.get(c.label, 0) >= cap[c.label]:
            continue
        if guard.offer(c):
            per_label[c.label] = per_label.get(c.label, 0) + 1
            kept.append(c)
    return kept


def select(pools: Mapping[str, list[Candidate]], caps: Mapping[str, int], turn_order: Sequence[str],
           max_uses: int = MAX_TEXT_USES, max_group: int = MAX_GROUP) -> list[Candidate]:
    """Labels take turns (in `turn_order`) offering their next candidate to one family guard until
    each reaches its cap or runs out; a label whose candidate is refused offers its next one in the
    same turn."""
    guard = FamilyGuard(max_uses, max_group)
    pos = {lab: 0 for lab in turn_order}
    kept = {lab: 0 for lab in turn_order}
    out = []
    while True:
        progressed = False
        for lab in turn_order:
            pool = pools.get(lab, [])
            while kept[lab] < caps[lab] and pos[lab] < len(pool):
                c = pool[pos[lab]]
                pos[lab] += 1
                if guard.offer(c):
                    kept[lab] += 1
                    out.append(c)
                    progressed = True
                    break
        if not progressed:
            return out


def interleave(groups: Mapping[str, list[Candidate]], labels: Sequence[str] = LABELS) -> list[Candidate]:
    """Round-robin over `labels` so a family limit applied afterwards never starves one label."""
    out: list[Candidate] = []
    longest = max((len(v) for v in groups.values()), default=0)
    for i in range(longest):
        for lab in labels:
            if i < len(groups[lab]):
                out.append(groups[lab][i])
    return out


def limited_candidates(proposals: Callable[[], Mapping[str, list[Candidate]]], cap: Mapping[str, int],
                       max_uses: int = MAX_TEXT_USES, max_group: int = MAX_GROUP) -> Callable[[], tuple[Candidate, ...]]:
    """A cached build (with `cache_clear()`) of a domain's candidates: its per-label proposals
    interleaved by label, then `limit_families` with the per-label `cap`."""
    @lru_cache(maxsize=1)
    def candidates() -> tuple[Candidate, ...]:
        return tuple(limit_families(interleave(proposals()), max_uses, max_group, cap=cap))
    candidates.__doc__ = "All candidates of the domain after the family limit, in a stable order."
    return candidates


def spread(items: list, key: Callable[[Any], str], rng) -> list:
    """Shuffle within each key (in place), then interleave the keys in sorted order, so early picks
    cover every subcategory."""
    groups: dict[str, list] = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    lanes = []
    for k in sorted(groups):
        lane = groups[k]
        rng.shuffle(lane)
        lanes.append(lane)
    out = []
    for i in range(max((len(l) for l in lanes), default=0)):
        out.extend(l[i] for l in lanes if i < len(l))
    return out


_ARTICLE = re.compile(r"\b([Aa]) (?=([A-Za-z]+))")
# Vowel letters sounded as a consonant ("a university", "a European", "a one-day trip").
_CONSONANT_SOUND = ("uni", "use", "usu", "uti", "eu", "one", "once", "ure")


def fix_articles(text: str) -> str:
    """'a' before a vowel sound becomes 'an' ("a accountant" -> "an accountant"); templates say
    "a {role}" and the value decides."""
    def repl(m: re.Match) -> str:
        word = m.group(2).lower()
        if word[0] in "aeiou" and not word.startswith(_CONSONANT_SOUND):
            return m.group(1) + "n "
        return m.group(0)
    return _ARTICLE.sub(repl, text)


def surface_variant(text: str, k: int) -> str:
    """A surface change of `text` that leaves its normalised form unchanged (k picks which);
    ValueError when none of the variants keeps the normalised form."""
    stripped = text.rstrip("?.! ")
    variants = [
        stripped.lower(),
        text.upper(),
        text.replace(" ", "  ", 1) + " ",
        stripped + "??",
        "  " + stripped,
        text[:1].lower() + text[1:] + " ",
    ]
    for step in range(len(variants)):
        v = variants[(k + step) % len(variants)]
        if v != text and normalize_text(v) == normalize_text(text):
            return v
    raise ValueError(f"no surface variant for {text!r}")


def surface(text: str, k: int) -> str:
    """A surface-only variant (case, punctuation, spacing), never a change of words; k picks one
    of three forms."""
    body = text.rstrip(".?!")
    end = text[len(body):] or "?"
    if k % 3 == 0:
        return body.lower()
    if k % 3 == 1:
        return f"{body} {end}"
    return body.lower() + end[-1] * 2


def caps_for(need: Mapping[str, int], labels: Sequence[str] = LABELS) -> dict[str, int]:
    """Offer at least max(need, 40) per label plus a 20% margin."""
    return {lab: math.ceil(max(int(need.get(lab, 0)), 40) * 1.2) for lab in labels}


def capped_builder(domain: str, pools: Callable[[Callable[..., Any]], Mapping[str, list[Candidate]]],
                   turn_order: Sequence[str]) -> Callable[[tuple[tuple[str, int], ...]], tuple[Candidate, ...]]:
    """A cached build (per sorted caps tuple) of `select` over the pools `pools(rng_for)` makes.
    `rng_for` is stable_rng(domain, ...), exactly ctx.rng(...): the build is cached per caps, not
    per ctx. The result has `cache_clear()` for tests that rebuild."""
    @lru_cache(maxsize=8)
    def build(caps: tuple[tuple[str, int], ...]) -> tuple[Candidate, ...]:
        return tuple(select(pools(lambda *names: stable_rng(domain, *names)), dict(caps), turn_order))
    build.__doc__ = f"{domain} candidates for the given caps, after the family guard."
    build.for_ctx = lambda ctx: build(tuple(sorted(caps_for(ctx.need).items())))  # caps from the profile's need
    return build


CURATED_METHODS = ("curated", "adversarial_perturbation")


def method_generators(domain: str, produce: Callable[[GenContext], Iterable[Candidate]],
                      methods: Sequence[str] = CURATED_METHODS) -> dict[str, Callable[[GenContext], list[Candidate]]]:
    """One generator per construction method, each filtering the one cached build `produce(ctx)`:
    the `generators` of a DomainSpec whose curated and operator rows come from one plan."""
    return {m: method_generator(domain, m, produce) for m in methods}


def method_generator(domain: str, method: str,
                     produce: Callable[[GenContext], Iterable[Candidate]]) -> Callable[[GenContext], list[Candidate]]:
    """A generator yielding the candidates of `produce(ctx)` made by construction `method`, so one
    cached build serves every method of a domain."""
    def gen(ctx: GenContext) -> list[Candidate]:
        return [c for c in produce(ctx) if c.construction_method == method]
    gen.__doc__ = f"{domain} candidates made by the {method} method (see the module docstring)."
    return gen
