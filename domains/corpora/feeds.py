"""Corpus rows by declaration: each domain names, on its spec (`DomainSpec.corpus_feeds`), the corpus
mappings that feed each of its construction methods and the share of each label's need they offer;
`corpus_rows(method)` is the generator that reads the declaration and runs the mappings. Nothing
here is keyed by a domain's name: a new domain takes corpus rows by declaring feeds on its spec.

Mappings (MAPPINGS; each is documented in its module):
- existing_benchmark: "qqp" (Quora duplicate questions, domains.corpora.benchmarks), "ambigqa"
  (AmbigNQ disambiguations and their rewordings), "xquad" (XQuAD parallel questions,
  domains.corpora.xquad), "bfcl" (BFCL calls, domains.corpora.bfcl); "paws", "mrpc" and "paws_x"
  (PAWS-X German) are registered but fed by no domain: their texts are declarative sentences, not
  requests;
- intent_bottom_up (domains.corpora.intents): "massive/en-US" and "banking77" (within-language
  frames, alias_exact_match), "massive/translations" (MASSIVE's other locales, within each locale
  and against the en-US utterance its translators localised, translated_exact_match).

A feed's shares are spread evenly over its mappings (`CorpusFeed`); the mappings pick in feed
order, and every feed of one method shares one set of used query texts, so a corpus text appears
in one row of the domain. Nothing without a datasets dir, so the embedded default is unchanged.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping

from domains.base import Candidate, CorpusFeed, GenContext
from domains.corpora import benchmarks, bfcl, intents, xquad
from pipeline.core.registry import Registry

# (ctx, feed name, this mapping's shares, used query texts, drops) -> the candidates it picks
CorpusMapping = Callable[[GenContext, str, Mapping[str, float], set, Counter], list[Candidate]]

MAPPINGS: Registry[CorpusMapping] = Registry("corpus mapping")
for _module in (benchmarks, intents, xquad, bfcl):
    for _name, _mapping in _module.MAPPINGS.items():
        MAPPINGS.register(_name, _mapping)


def feeds_of(domain: str) -> Mapping[str, tuple[CorpusFeed, ...]]:
    """The registered domain's corpus feeds by construction method (its spec's `corpus_feeds`)."""
    from domains import get_domain

    return get_domain(domain).corpus_feeds


def feed_name(feed: CorpusFeed) -> str:
    """The feed's mappings joined by "_" ("massive/en-US_banking77"): the paraphrase benchmarks name their pick by it."""
    return "_".join(feed.mappings)


def corpus_build(ctx: GenContext, method: str) -> tuple[list[Candidate], Counter]:
    """ctx.domain's `method` rows from the corpus mappings its spec declares, and drops by reason."""
    drops: Counter = Counter()
    if ctx.datasets is None:
        return [], drops
    used: set[str] = set()
    out: list[Candidate] = []
    for feed in feeds_of(ctx.domain).get(method, ()):
        share = {label: f / len(feed.mappings) for label, f in feed.shares.items()}
        for mapping in feed.mappings:
            out += MAPPINGS[mapping](ctx, feed_name(feed), share, used, drops)
    return out, drops


def mapping_build(ctx: GenContext, mapping: str, shares: Mapping[str, float] | None = None,
                  used: set[str] | None = None) -> tuple[list[Candidate], Counter]:
    """One mapping on its own (tests, tools): its rows for ctx.domain with `shares` (default: the
    shares the domain's feed of it declares, as in the build; a mapping no feed of the domain names
    needs explicit shares) and the drops by reason."""
    drops: Counter = Counter()
    if ctx.datasets is None:
        return [], drops
    name = mapping
    if shares is None:
        feed = next((f for feeds in feeds_of(ctx.domain).values() for f in feeds if mapping in f.mappings), None)
        if feed is None:
            raise ValueError(f"corpus mapping {mapping!r}: no feed of domain {ctx.domain!r} names it; pass its shares")
        shares, name = {label: f / len(feed.mappings) for label, f in feed.shares.items()}, feed_name(feed)
    return MAPPINGS[mapping](ctx, name, shares, set() if used is None else used, drops), drops


def corpus_rows(method: str) -> Callable[[GenContext], list[Candidate]]:
    """The SPEC-facing generator of `method` ("existing_benchmark", "intent_bottom_up"): the rows of
    the corpus feeds the domain declares for it."""
    def gen(ctx: GenContext) -> list[Candidate]:
        return corpus_build(ctx, method)[0]
    gen.__name__ = f"corpus_rows_{method}"
    gen.__doc__ = f"{method} rows from the corpus feeds the domain's spec declares (domains.corpora.feeds)."
    return gen
