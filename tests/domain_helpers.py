"""Assertions shared by the tests/test_domain_*.py files: quota, the family (split) rule,
deterministic rebuilds and one-line input errors; and `Conversation`, a corpus record the mining
tests build by hand.

The family check here is written independently of domains/families.py on purpose, so that a bug
in the shared guard cannot hide behind the same bug in its test.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import pytest

from domains.base import LABELS, Candidate, GenContext, normalize_text
from domains.check import DomainReport, generate_verified
from pipeline.core.config import load_profile
from pipeline.core.errors import InputError


def kept(domain: str, profile: str) -> tuple[dict[str, int], DomainReport]:
    """The profile's per-label need for `domain`, and the domain's verified candidates for it."""
    need = dict(load_profile(profile).matrix[domain])
    return need, generate_verified(domain, need, profile=profile)


def assert_quota(domain: str, profile: str, margin: float = 1.0, floor: int = 0) -> DomainReport:
    """Every label keeps at least ceil(max(need, floor) * margin) candidates and nothing is dropped;
    returns the report for further checks."""
    need, rep = kept(domain, profile)
    for lab in LABELS:
        want = math.ceil(max(need[lab], floor) * margin)
        assert len(rep.kept[lab]) >= want, (lab, len(rep.kept[lab]), want)
    assert not rep.drops, dict(rep.drops)
    return rep


def family_stats(cands: Sequence[Candidate]) -> tuple[int, int]:
    """(most candidates sharing one normalised query text, most candidates in one group linked by
    shared texts)."""
    uses: dict[str, int] = {}
    parent: dict[Any, Any] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for n, c in enumerate(cands):
        for t in {normalize_text(c.query_a), normalize_text(c.query_b)}:
            uses[t] = uses.get(t, 0) + 1
            parent[find(("t", t))] = find(("c", n))
    sizes: dict[Any, int] = {}
    for n in range(len(cands)):
        r = find(("c", n))
        sizes[r] = sizes.get(r, 0) + 1
    return max(uses.values()), max(sizes.values())


def assert_family_rule(cands: Sequence[Candidate], max_uses: int = 3, max_group: int = 6,
                       sides_differ: Callable[[Candidate], bool] = lambda c: c.query_a != c.query_b) -> None:
    """The split rule holds, pair signatures are distinct, and every pair's two sides differ
    (`sides_differ` says how, e.g. by system prompt for personalized rows)."""
    assert cands, "no candidates"
    uses, group = family_stats(cands)
    assert uses <= max_uses and group <= max_group, (uses, group)
    assert len({c.pair_signature() for c in cands}) == len(cands)
    bad = [c.query_a for c in cands if not sides_differ(c)]
    assert not bad, bad[:3]


def built(module: Any, profile: str = "v1.1") -> tuple[Candidate, ...]:
    """A domain module's one cached build (`module._build.for_ctx`, see families.capped_builder)
    for the profile's need: its candidates before verification."""
    need = dict(load_profile(profile).matrix[module.DOMAIN])
    return module._build.for_ctx(GenContext(domain=module.DOMAIN, profile=profile, need=need))


def assert_rebuild_same(build: Callable[[], Iterable[Candidate]], *caches: Any) -> None:
    """Building again after clearing `caches` (and `build`'s own cache, if it has one) gives the
    same keys in the same order."""
    first = [c.key for c in build()]
    for cached in (build, *caches):
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
    assert [c.key for c in build()] == first


def assert_input_error(monkeypatch, module: Any, attr: str, bad_file: Any, loader: Any, match: str) -> str:
    """Pointing `module.attr` at `bad_file` makes the cached `loader()` raise a one-line InputError
    whose text matches `match` (returned); the loader's cache is cleared before and after."""
    monkeypatch.setattr(module, attr, bad_file)
    loader.cache_clear()
    try:
        with pytest.raises(InputError, match=match) as err:
            loader()
        assert "\n" not in str(err.value), str(err.value)
    finally:
        loader.cache_clear()
    return str(err.value)


@dataclass(frozen=True)
class Conversation:
    """A conversation record as a loader yields it (id, (role, text) turns), for the mining tests."""
    record_id: str
    conversation: tuple
    text: str = ""
    source_file: str = "t.json"
    licence: str = "none stated"
