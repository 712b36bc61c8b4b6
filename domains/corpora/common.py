"""Helpers shared by the corpus generators: cached corpus reads, word overlap, the candidate
factory (with the domain's policy applied) and the capped, verified pick per label.

Why caps: `configs/sampling.yaml` gives corpus methods a large weight against `curated` (179 and
338 against 1), so a cell takes nearly all its rows from whatever a corpus generator offers. Each
generator therefore offers about `fraction * need[label]` rows per label, chosen so that the whole
build approaches BENCHMARK.md's target mix (about 179 existing_benchmark and 338 intent_bottom_up
rows of 2,000) instead of letting corpora fill every cell.
"""
from __future__ import annotations

import math
import re
import unicodedata
import weakref
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable, Mapping, Sequence

from domains.base import Candidate, GenContext, Provenance, normalize_text

GENERATOR_VERSION = "1"
_RECORDS: "weakref.WeakKeyDictionary[Any, dict[str, list]]" = weakref.WeakKeyDictionary()
_WORD = re.compile(r"\w+")


def records(ctx: GenContext, corpus: str) -> list:
    """Every record of `corpus` from ctx.datasets (read once per DatasetsDir), [] without one."""
    ds = ctx.datasets
    if ds is None:
        return []
    per = _RECORDS.setdefault(ds, {})
    if corpus not in per:
        per[corpus] = list(ds.load(corpus))
    return per[corpus]


def words(text: str) -> list[str]:
    """Lower-cased word tokens (NFKC, casefold), punctuation dropped."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' word sets (0 when either has no word)."""
    wa, wb = set(words(a)), set(words(b))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def make(ctx: GenContext, *, method: str, label: str, subcategory: str, query_a: str, query_b: str,
         answer_a: str, answer_b: str, rationale: str, verification_method: str,
         payload: Mapping[str, Any], source: str, licence: str, grounding: str, source_file: str,
         source_record: str, original_label: Any, template_id: str, generator: str,
         tools_a: Sequence[Mapping[str, Any]] | None = None,
         tools_b: Sequence[Mapping[str, Any]] | None = None) -> Candidate:
    """A corpus candidate; when the domain's own policy holds for it, it is re-wrapped under
    policy_no_cache with its method as the underlying check (as the curated generators do)."""
    from domains import get_domain

    c = Candidate(
        domain=ctx.domain, subcategory=subcategory, label=label, query_a=query_a, query_b=query_b,
        expected_answer_a=answer_a, expected_answer_b=answer_b, rationale=rationale,
        verification_method=verification_method, verification_payload=dict(payload),
        construction_method=method, source=source, real_world_grounding=grounding,
        provenance=Provenance(generator=f"{ctx.domain}.{method}.{generator}", generator_version=GENERATOR_VERSION,
                              template_id=template_id, source_file=source_file, source_record=source_record,
                              original_label=original_label),
        licence=licence,
        tools_a=tuple(tools_a) if tools_a is not None else None,
        tools_b=tuple(tools_b) if tools_b is not None else None,
    )
    reason = get_domain(ctx.domain).policy(c)
    if reason:
        c = c.with_(verification_method="policy_no_cache",
                    verification_payload={"policy": reason, "underlying_method": verification_method,
                                          "underlying_payload": dict(payload)})
    return c


def cap(ctx: GenContext, label: str, fraction: float) -> int:
    """How many rows of `label` a generator offers: `fraction` of the profile's need (40 when the
    context names no need, e.g. in unit tests)."""
    need = ctx.need.get(label, 40) if ctx.need else 40
    return math.ceil(fraction * need)


def pick(ctx: GenContext, name: str, pools: Mapping[str, Iterable[Candidate]], fractions: Mapping[str, float],
         drops: Counter, used: set[str] | None = None) -> list[Candidate]:
    """Up to `cap(label)` verified candidates per label from each pool.

    Order: content key, then a shuffle seeded by (domain, name, label), then round-robin over
    subcategories for variety. A candidate whose verifier fails is dropped with its reason; a
    candidate that reuses a query text already used by this generator is dropped as
    `query_text_reused` (each corpus text appears in one row, so splits never need to break a
    family)."""
    from domains.verify import verify

    used = set() if used is None else used
    out: list[Candidate] = []
    for label in sorted(pools):
        limit = cap(ctx, label, fractions.get(label, 0.0))
        pool = sorted(pools[label], key=lambda c: c.key)
        ctx.rng("corpora", name, label).shuffle(pool)
        by_sub: dict[str, list[Candidate]] = defaultdict(list)
        for c in pool:
            by_sub[c.subcategory].append(c)
        order = _round_robin([by_sub[s] for s in sorted(by_sub)])
        taken = 0
        for c in order:
            if taken >= limit:
                drops[f"{label}:surplus"] += 1
                continue
            texts = {normalize_text(c.query_a), normalize_text(c.query_b)}
            if texts & used:
                drops[f"{label}:query_text_reused"] += 1
                continue
            outcome = verify(c)
            if not outcome.passed:
                drops[f"{label}:{outcome.reason}"] += 1
                continue
            used |= texts
            out.append(c)
            taken += 1
    return out


def _round_robin(lists: list[list[Candidate]]) -> list[Candidate]:
    out: list[Candidate] = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return out


def generator(build: Callable[[GenContext], tuple[list[Candidate], Counter]]) -> Callable[[GenContext], list[Candidate]]:
    """The SPEC-facing generator of a `*_build` function: candidates only."""
    def gen(ctx: GenContext) -> list[Candidate]:
        return build(ctx)[0]
    gen.__name__ = build.__name__.replace("_build", "_rows")
    gen.__doc__ = build.__doc__
    return gen
