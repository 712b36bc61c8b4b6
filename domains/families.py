"""Family limits and the one candidate-building path shared by the domain modules.

The split rule (domains/README.md): a normalised query text appears in at most 3 candidates, and a
group of candidates linked by shared query texts holds at most 6, so that splits can keep test
queries out of train/dev. `FamilyGuard` enforces it. A domain builds its candidates once:
`capped_builder` runs `select` (labels taking turns at one guard) over its per-label pools up to
`caps_for(ctx.need)`, and `method_generators` serves that one build per construction method.
`spread` and `round_robin` order pools so that early picks cover every subcategory; the surface
helpers make EQUIV variants; `far_rotation` picks a wording's least-overlapping rewording for
PARA_SAFE pairs that embedders find hard. Standard library only.
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


def select(pools: Mapping[str, Sequence[Candidate]], caps: Mapping[str, int], turn_order: Sequence[str],
           max_uses: int = MAX_TEXT_USES, max_group: int = MAX_GROUP, tries: int | None = None) -> list[Candidate]:
    """Labels take turns (in `turn_order`) offering their next candidates to one family guard until
    each reaches its cap or runs out.

    `tries` is how many candidates a label may offer in one turn: None (the default) lets a label
    whose candidate is refused offer its next one in the same turn, until one is accepted; 1 makes
    strict rounds, where a refused candidate costs its label the turn, so every label stays at the
    same position of its pool (see `capped_builder`)."""
    guard = FamilyGuard(max_uses, max_group)
    pos = {lab: 0 for lab in turn_order}
    kept = {lab: 0 for lab in turn_order}
    out = []
    while True:
        offered = False
        for lab in turn_order:
            pool = pools.get(lab, ())
            left = tries
            while kept[lab] < caps[lab] and pos[lab] < len(pool) and (left is None or left > 0):
                c = pool[pos[lab]]
                pos[lab] += 1
                offered = True
                left = None if left is None else left - 1
                if guard.offer(c):
                    kept[lab] += 1
                    out.append(c)
                    break
        if not offered:
            return out


def round_robin(lanes: Iterable[Sequence[Any]]) -> list:
    """The lanes interleaved: every lane's first item (in lane order), then every second, ..."""
    lanes = list(lanes)
    out: list = []
    for i in range(max((len(lane) for lane in lanes), default=0)):
        out.extend(lane[i] for lane in lanes if i < len(lane))
    return out


def spread(items: Iterable[Any], key: Callable[[Any], str], rng) -> list:
    """Items grouped by `key`, each group shuffled by `rng` (groups in sorted key order), then
    interleaved, so that any prefix covers every key (subcategory, operator, ...) evenly."""
    groups: dict[str, list] = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    lanes = []
    for k in sorted(groups):
        lane = groups[k]
        rng.shuffle(lane)
        lanes.append(lane)
    return round_robin(lanes)


def template_words(template: str) -> set[str]:
    """The lowercase words of a wording template, its {slots} left out."""
    return set(re.findall(r"[a-z']+", re.sub(r"\{[^}]*\}", " ", template).lower()))


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of two texts' `template_words` (1.0 when both have none)."""
    wa, wb = template_words(a), template_words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def far_rotation(templates: Sequence[str], i: int) -> int:
    """The rotation index j in i+1 .. i+len-1 whose template shares the fewest words with the i-th
    (`word_overlap`; ties: the first in rotation). Pairing the i-th wording with it gives the
    paraphrases that share few words, the ones embedders find hard (issue 17)."""
    n = len(templates)
    mine = templates[i % n]
    return min(range(i + 1, i + n), key=lambda j: (word_overlap(mine, templates[j % n]), j)) if n > 1 else i


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


FLOOR = 40   # the lifted40 profile's per-cell need: every domain offers at least this many per label
MARGIN = 0.2


def caps_for(need: Mapping[str, int], labels: Sequence[str] = LABELS, margin: float = MARGIN,
             spare: int = 0) -> dict[str, int]:
    """How many candidates a domain offers per label for a profile's `need`: max(need, FLOOR) plus
    a `margin` (a fraction, 20% by default) rounded up, plus `spare` more. Because of the floor the
    v1.1 and lifted40 profiles ask for the same caps wherever v1.1 needs 40 or fewer."""
    return {lab: math.ceil(max(int(need.get(lab, 0)), FLOOR) * (1 + margin)) + spare for lab in labels}


def capped_builder(domain: str, pools: Callable[[Callable[..., Any]], Mapping[str, Sequence[Candidate]]],
                   turn_order: Sequence[str] = LABELS, *, margin: float = MARGIN, spare: int = 0,
                   tries: int | None = None) -> Callable[[tuple[tuple[str, int], ...]], tuple[Candidate, ...]]:
    """The one way a domain builds its candidates once and serves every construction method:
    `select` over the per-label pools that `pools(rng_for)` makes, cached per sorted caps tuple.

    `rng_for` is stable_rng(domain, ...), exactly ctx.rng(...), so the build is cached per caps,
    not per ctx. `build.for_ctx(ctx)` builds for the caps of the profile's need
    (`caps_for(ctx.need, margin=margin, spare=spare)`): feed it to `method_generators`. The result
    has `cache_clear()` for tests that rebuild."""
    @lru_cache(maxsize=8)
    def build(caps: tuple[tuple[str, int], ...]) -> tuple[Candidate, ...]:
        return tuple(select(pools(lambda *names: stable_rng(domain, *names)), dict(caps), turn_order, tries=tries))

    def for_ctx(ctx: GenContext) -> tuple[Candidate, ...]:
        return build(tuple(sorted(caps_for(ctx.need, margin=margin, spare=spare).items())))

    build.__doc__ = f"{domain} candidates for the given caps, after the family guard."
    build.for_ctx = for_ctx
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
