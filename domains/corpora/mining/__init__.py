"""real_traffic_mined: pairs mined from every user turn of real conversations (ShareGPT, Chatbot
Arena, WildChat).

Modules: turns (every user message scrubbed, length-limited, sorted into first / standalone /
follow-up, follow-ups with their cut earlier turns), context (the follow-up and standalone rules),
rules (the single-turn labelling rules), near (MinHash/LSH and the MiniLM ANN index), single and
followups (single-turn and multi-turn candidates), routes (which domain takes each mining rule: the
one whose spec names it, DomainSpec.mined_rules), engine (prepare a shard, pair all shards:
MinedPairs).

One way in: mining is `prepare_shard` for each shard, then `pair` over all of them, giving a
`MinedPairs`; `mine(datasets)` does both in process, and the build runs the same two steps as
Dagster ops (below). A domain's real_traffic_mined generator only reads GenContext.mined (that
value): it never mines. The candidates are verified once, by the build's verified_rows, like every
other generator's.

Shards: `shards(datasets)` lists one per input file ("<corpus>/<file>"), and a file holding more
than SHARD_RECORDS records is cut into fixed record ranges ("<corpus>/<file>@<start>-<end>", loader
order), so the 125 MB ShareGPT file is several steps. The build prepares the shards in SHARD_SLOTS
fixed slot steps (assets/sources.py: scrub, sign, embed; shard k of the sorted list in slot
k mod SHARD_SLOTS, `slot_shards`) and pairs them all in one (`pair`), so a pair across two shards
is still found. The slots are static, so every executor (in-process, multiprocess, Dask) plans and
runs the same steps.
"""
from __future__ import annotations

import re
import weakref
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from domains.base import Candidate, GenContext
from domains.corpora.mining.engine import MinedPairs, PreparedShard, pair, prepare
from domains.corpora.mining.near import embed, neighbour_pairs
from domains.corpora.mining.rules import DIRECTION_WORDS, DIRECTIONS, LANGUAGES, Decision, classify, decide, tokens
from domains.corpora.mining.single import METHOD, VERSION, criteria, route
from sources.registry import LOADERS

__all__ = ["CORPORA", "DIRECTIONS", "DIRECTION_WORDS", "LANGUAGES", "METHOD", "VERSION", "Decision", "MinedPairs",
           "PreparedShard", "SHARD_RECORDS", "SHARD_SLOTS", "classify", "criteria", "decide", "embed", "mine",
           "neighbour_pairs", "pair", "prepare", "prepare_shard", "real_traffic_build", "real_traffic_rows", "route",
           "shard_records", "shard_order", "shards", "slot_shards", "summarise", "tokens"]

CORPORA = tuple(name for name in LOADERS if LOADERS[name].real_traffic)  # the loaders of real user prompts
SHARD_RECORDS = 2500
# Fixed slot steps of the build's mining fan-out (assets/sources.py): more than the shared corpora's
# 13 shards, so each is prepared in its own step; a larger corpus puts several shards in a slot.
SHARD_SLOTS = 16
_RANGE = re.compile(r"^(?P<file>.+)@(?P<start>\d+)-(?P<end>\d+)$")
_RECORDS: "weakref.WeakKeyDictionary[Any, dict[str, list]]" = weakref.WeakKeyDictionary()


def _corpus_records(datasets: Any, corpus: str) -> list:
    per = _RECORDS.setdefault(datasets, {})
    if corpus not in per:
        per[corpus] = list(datasets.load(corpus))
    return per[corpus]


def _file_records(datasets: Any, corpus: str, rel: str) -> list:
    return [r for r in _corpus_records(datasets, corpus) if r.source_file == rel]


def shards(datasets: Any) -> list[str]:
    """Every input shard of the real-traffic corpora present, sorted (see the module docstring)."""
    if datasets is None:
        return []
    out = []
    for corpus in CORPORA:
        for rel in datasets.files(corpus):
            n = len(_file_records(datasets, corpus, rel))
            if n <= SHARD_RECORDS:
                out.append(f"{corpus}/{rel}")
            else:
                out.extend(f"{corpus}/{rel}@{s}-{min(s + SHARD_RECORDS, n)}" for s in range(0, n, SHARD_RECORDS))
    return sorted(out, key=shard_order)


def slot_shards(names: list[str], slot: int) -> list[str]:
    """The shards slot `slot` prepares: every SHARD_SLOTS-th of `names` (shards(datasets), sorted),
    starting at index `slot`."""
    if not 0 <= slot < SHARD_SLOTS:
        raise ValueError(f"slot {slot}: not in 0..{SHARD_SLOTS - 1}")
    return [name for k, name in enumerate(names) if k % SHARD_SLOTS == slot]


def shard_order(shard: str) -> tuple:
    """Sort key of shard names: by file, then a file's record ranges by their start."""
    m = re.search(r"@(\d+)-\d+$", shard)
    return (shard[:m.start()], int(m.group(1))) if m else (shard, -1)


def shard_records(datasets: Any, shard: str) -> tuple[str, list]:
    """(corpus, the shard's records in loader order)."""
    corpus, _, rel = shard.partition("/")
    m = _RANGE.match(rel)
    file = m.group("file") if m else rel
    if corpus not in CORPORA or not rel or file not in (datasets.files(corpus) if datasets else []):
        from pipeline.core.errors import InputError
        raise InputError(f"{shard}:file: not a real-traffic shard. Use one of shards(datasets): <corpus>/<file> "
                         f"or <corpus>/<file>@<start>-<end> with corpus in {', '.join(CORPORA)}")
    recs = _file_records(datasets, corpus, file)
    return corpus, (recs[int(m.group("start")):int(m.group("end"))] if m else recs)


def prepare_shard(datasets: Any, shard: str, cache_dir: Path | None = None) -> PreparedShard:
    """One shard's turns scrubbed and sorted, its single-turn prompts signed and embedded."""
    corpus, records = shard_records(datasets, shard)
    return prepare(shard, corpus, records, cache_dir)


def mine(datasets: Any, names: Sequence[str] | None = None, cache_dir: Path | None = None) -> MinedPairs:
    """Mine in process (tools, tests, domains.check): prepare each shard of `names` (default: every
    shard of the datasets dir) and pair them all, as the build's mined_pairs steps do."""
    names = shards(datasets) if names is None else list(names)
    return pair([prepare_shard(datasets, s, cache_dir) for s in names])


def real_traffic_build(ctx: GenContext) -> tuple[list[Candidate], Counter]:
    """ctx.domain's mined candidates (content-key order) and the mining drops by reason (whatever
    the domain), from ctx.mined; nothing without it."""
    if ctx.mined is None:
        return [], Counter()
    return ctx.mined.of(ctx.domain), Counter(ctx.mined.drops)


def real_traffic_rows(ctx: GenContext) -> Iterator[Candidate]:
    """Generator for a SPEC's "real_traffic_mined" method: the mined candidates of ctx.domain (the
    rules its spec names, DomainSpec.mined_rules)."""
    yield from real_traffic_build(ctx)[0]


def summarise(results: Iterable[MinedPairs]) -> dict[str, Any]:
    """Counts per domain and label, per rule (domain:label:rule), and drops by reason."""
    labels: Counter = Counter()
    rules: Counter = Counter()
    drops: Counter = Counter()
    for r in results:
        labels.update(f"{c.domain}:{c.label}" for c in r.candidates)
        rules.update(f"{c.domain}:{c.label}:{c.provenance.template_id}" for c in r.candidates)
        drops.update(r.drops)
    return {"kept": dict(sorted(labels.items())), "rules": dict(sorted(rules.items())),
            "drops": dict(sorted(drops.items()))}
