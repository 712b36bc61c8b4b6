"""real_traffic_mined: candidate pairs mined from real user prompts (ShareGPT, Chatbot Arena, WildChat).

Mining is partitioned by input shard (one corpus file: `shards(datasets)` lists them as
"<corpus>/<file>"), so a larger corpus scales out over executors; pairs are only sought within a
shard. Per shard (`mine(datasets, shard)`):
1. every prompt is scrubbed (domains.corpora.scrub) before it is embedded or used;
2. exact duplicates after `normalize_text` are grouped by hash;
3. near-duplicates come from a usearch HNSW index over MiniLM embeddings of the normalised texts
   (fixed parameters, single-threaded insertion, neighbours post-sorted): no all-pairs loop;
4. each pair is labelled ONLY by the deterministic rules below, then by its verifier; a pair no rule
   decides is kept out and counted by reason (`MineResult.drops`).

Rules (on word tokens after NFKC + casefold, sentence punctuation . , ! ? ; : dropped, operators
and quotes kept):
- same tokens (the prompts differ only in case, spacing or sentence punctuation) -> EQUIV;
- one token substituted (possibly at several places, consistently) where both tokens are numbers,
  programming or natural languages, the two ends of a direction/operator pair (encode/decode,
  ascending/descending, to/from...), or capitalised names mid-sentence -> ADVERSARIAL (the
  answer-determining-token rule: the answer repeats or depends on that token);
- two capitalised names trading places throughout (role swap) -> ADVERSARIAL;
- one number present in one prompt and absent from the other, nothing else changed ("clause 23 of
  the contract" vs "clause of the contract") -> ADVERSARIAL (the answer must use that number);
- anything else (other one-word changes, insertions, reorderings, several changes) -> dropped.
Domains: a creative request (write a poem, story, song...) -> creative under policy_no_cache
("creative"); a time-sensitive one (weather, news, prices...) -> conversational with subcategory
"time_sensitive" under policy_no_cache; every other prompt -> conversational with the rubric
verifier (3 criteria derived from the prompt itself).
"""
from __future__ import annotations

import re
import unicodedata
import weakref
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Iterable, Iterator

from domains.base import Candidate, GenContext, Provenance, normalize_text
from domains.corpora.scrub import scrub
from domains.families import FamilyGuard
from domains.text import live_request, script
from sources.registry import LOADERS

METHOD = "real_traffic_mined"
VERSION = "1"
CORPORA = tuple(name for name in LOADERS if LOADERS[name].real_traffic)  # the loaders of real user prompts
EMBEDDER = "minilm_l6"
# ANN parameters are part of the output: changing any of them changes which pairs are found.
NEIGHBOURS = 8
MIN_COSINE = 0.80
HNSW = {"connectivity": 16, "expansion_add": 128, "expansion_search": 64}
SNIPPET = 160

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|\w+|[^\w\s]")
_SENTENCE_PUNCT = frozenset(".,!?;:¿¡。，！？；：…")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
LANGUAGES = frozenset("""
python javascript typescript java kotlin swift rust golang ruby php perl scala haskell bash powershell sql
matlab julia lua dart elixir erlang clojure fortran cobol c cpp csharp html css r
english french german spanish italian portuguese chinese mandarin japanese korean russian arabic hindi dutch
swedish norwegian danish finnish polish turkish greek hebrew vietnamese thai indonesian ukrainian czech
""".split())
_DIRECTION_PAIRS = [
    ("encode", "decode"), ("encrypt", "decrypt"), ("compress", "decompress"), ("serialize", "deserialize"),
    ("ascending", "descending"), ("increase", "decrease"), ("increasing", "decreasing"), ("add", "subtract"),
    ("addition", "subtraction"), ("plus", "minus"), ("multiply", "divide"), ("to", "from"), ("before", "after"),
    ("above", "below"), ("max", "min"), ("maximum", "minimum"), ("largest", "smallest"), ("highest", "lowest"),
    ("first", "last"), ("pros", "cons"), ("advantages", "disadvantages"), ("buy", "sell"), ("import", "export"),
    ("upload", "download"), ("push", "pull"), ("left", "right"), ("north", "south"), ("east", "west"),
    ("celsius", "fahrenheit"), ("positive", "negative"), ("more", "less"), ("longer", "shorter"),
    ("faster", "slower"), ("older", "younger"), ("better", "worse"), ("uppercase", "lowercase"),
    ("horizontal", "vertical"), ("input", "output"), ("server", "client"), ("sender", "receiver"),
]
DIRECTIONS = {frozenset(p) for p in _DIRECTION_PAIRS}
DIRECTION_WORDS = frozenset(w for p in _DIRECTION_PAIRS for w in p)
_CREATIVE = re.compile(
    r"\b(write|compose|create|generate|give me|make|draft|tell me|come up with|continue)\b.{0,60}?"
    r"\b(poem|poems|poetry|story|stories|haiku|limerick|sonnet|song|lyrics|rap|ballad|verse|fable|fairy tale|"
    r"screenplay|script for a|scene|joke|jokes|slogan|tagline|novel|short story)\b")


@dataclass(frozen=True)
class Prompt:
    """A scrubbed prompt of one shard."""

    record_id: str
    text: str
    scrubbed: bool
    corpus: str
    source_file: str
    licence: str


@dataclass
class MineResult:
    """One shard's mined candidates, its drops by reason, and counts for the benchmark."""

    shard: str
    candidates: list[Candidate] = field(default_factory=list)
    drops: Counter = field(default_factory=Counter)
    n_prompts: int = 0
    n_pairs: int = 0  # pairs considered: duplicate pairs + ANN neighbour pairs above MIN_COSINE


# ---- tokens and rules ----

def tokens(text: str) -> list[str]:
    """Word, number and symbol tokens (NFKC, casefold) without sentence punctuation."""
    return [t for t in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()) if t not in _SENTENCE_PUNCT]


def _capitalised_mid_sentence(text: str, token: str) -> bool:
    """The token occurs capitalised somewhere that is not the start of a sentence or line."""
    norm = unicodedata.normalize("NFKC", text)
    for m in re.finditer(r"(?<!\w)" + re.escape(token) + r"(?!\w)", norm, re.IGNORECASE):
        before = norm[:m.start()].rstrip(" \t\"'(")
        if m.group(0)[:1].isupper() and before and before[-1] not in ".!?\n:":
            return True
    return False


def substitution_kind(old: str, new: str, text_a: str, text_b: str) -> str | None:
    """Which answer-determining kind a one-token substitution is, or None when no rule decides."""
    if _NUMBER.match(old) and _NUMBER.match(new):
        return "number_change"
    if old in LANGUAGES and new in LANGUAGES:
        return "language_swap"
    if frozenset((old, new)) in DIRECTIONS:
        return "direction_swap"
    if (old.isalpha() and new.isalpha() and len(old) > 1 and len(new) > 1
            and _capitalised_mid_sentence(text_a, old) and _capitalised_mid_sentence(text_b, new)):
        return "entity_change"
    return None


@dataclass(frozen=True)
class Decision:
    label: str | None       # None: dropped
    rule: str               # the rule that decided, or the drop reason
    old: str | None = None
    new: str | None = None


def classify(text_a: str, text_b: str) -> Decision:
    """Label a pair of prompts by the deterministic rules, or say why no rule decides."""
    if text_a == text_b:
        return Decision(None, "identical_text")
    ta, tb = tokens(text_a), tokens(text_b)
    if not ta or not tb:
        return Decision(None, "no_tokens")
    if ta == tb:
        return Decision("EQUIV", "surface_variant")
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    subs = {(ta[i1], tb[j1]) for tag, i1, i2, j1, j2 in ops if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1}
    if all(tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1 for tag, i1, i2, j1, j2 in ops) and len(subs) == 1:
        old, new = next(iter(subs))
        kind = substitution_kind(old, new, text_a, text_b)
        if kind is None:
            return Decision(None, "one_token_undecided")
        return Decision("ADVERSARIAL", kind, old, new)
    # Position by position (same length): difflib may align a swap as insertions and deletions.
    at = [k for k, (x, y) in enumerate(zip(ta, tb)) if x != y] if len(ta) == len(tb) else []
    swaps = {(ta[k], tb[k]) for k in at}
    # Adjacent positions are a reordering ("HIA NSW" vs "NSW HIA"), not two roles trading places.
    apart = all(k2 - k1 > 1 for k1, k2 in zip(at, at[1:]))
    if len(swaps) == 2 and apart:
        (x, y), (u, v) = sorted(swaps)
        # Two names trading places (who is charged, who is the victim): the roles, hence the answer, change.
        if (x, y) == (v, u) and substitution_kind(x, y, text_a, text_b) == "entity_change":
            return Decision("ADVERSARIAL", "role_swap", ta[at[0]], tb[at[0]])
    if len(ops) == 1 and ops[0][0] in ("insert", "delete"):
        tag, i1, i2, j1, j2 = ops[0]
        gone = ta[i1:i2] if tag == "delete" else tb[j1:j2]
        if len(gone) == 1 and _NUMBER.match(gone[0]):
            # "clause 23" vs "clause": one side names a number the answer must use, the other leaves it open.
            return Decision("ADVERSARIAL", "number_dropped", gone[0] if tag == "delete" else None,
                            gone[0] if tag == "insert" else None)
    if sorted(ta) == sorted(tb):
        return Decision(None, "word_order_change")
    if all(tag in ("insert", "delete") for tag, *_ in ops):
        return Decision(None, "insertion_or_deletion")
    return Decision(None, "multi_token_change")


def route(text: str) -> tuple[str, str | None]:
    """(domain, policy reason or None) for a prompt."""
    t = " ".join(tokens(text)[:60])
    if _CREATIVE.search(t):
        return "creative", "creative"
    if live_request(normalize_text(text)):
        return "conversational", "time_sensitive"
    return "conversational", None


def criteria(text: str, changed: str | None = None) -> list[str]:
    """Three criteria an answer to `text` must meet, derived from the prompt alone (plus the token
    a mined ADVERSARIAL pair changed, which must be honoured)."""
    toks = tokens(text)
    snippet = " ".join(toks)
    snippet = snippet if len(snippet) <= SNIPPET else snippet[:SNIPPET].rsplit(" ", 1)[0] + " ..."
    keys = sorted({t for t in toks if _NUMBER.match(t) or t in LANGUAGES or t in DIRECTION_WORDS})
    keys = ([changed] if changed else []) + [k for k in keys if k != changed][:9]
    detail = ("uses exactly these answer-determining values from the request: " + ", ".join(keys)) if keys \
        else "keeps every detail the request states"
    return [f"answers the request: {snippet}", detail, f"replies in the request's script ({script(text).lower()})"]


# ---- candidates ----

GROUNDING = {
    "EQUIV": "Two users of a public chat service sent the same prompt, differing only in case, spacing or punctuation.",
    "ADVERSARIAL": "Two real chat prompts that read almost the same but change one answer-determining value "
                   "(a number, a name, a language or a direction, or a number one of them leaves out).",
}
GROUNDING_POLICY = {
    "creative": "A real creative request: each user expects a fresh piece, so it is never served from a cache.",
    "time_sensitive": "A real request for live information that must be answered fresh, never from a cache.",
}


def _candidate(a: Prompt, b: Prompt, d: Decision) -> Candidate | None:
    domain, reason = route(a.text)
    if route(b.text) != (domain, reason):
        return None
    ca, cb = criteria(a.text, d.old), criteria(b.text, d.new)
    crit = {"criteria_a": ca, "criteria_b": cb}
    if reason:
        vm, payload = "policy_no_cache", {"policy": reason, "underlying_method": "rubric", "underlying_payload": crit}
    else:
        vm, payload = "rubric", crit
    sub = d.rule if reason != "time_sensitive" else f"time_sensitive+{d.rule}"
    if d.label == "EQUIV":
        rationale = (f"Mined from {a.corpus}: the two prompts differ only in case, spacing or sentence punctuation, "
                     "so they are the same request.")
        ans_a = ans_b = f"A response that {ca[0]}."
    elif d.rule == "number_dropped":
        number = d.old or d.new
        rationale = (f"Mined from {a.corpus}: the prompts differ only in that one names the number '{number}' and the "
                     "other leaves it out; the answer must use that number, so a cached answer would be wrong.")
        ans_a, ans_b = (f"A response that {c[0]}" + (f", using '{t}'." if t else ", without assuming a number.")
                        for c, t in ((ca, d.old), (cb, d.new)))
    else:
        rationale = (f"Mined from {a.corpus}: the prompts differ only in '{d.old}' vs '{d.new}' ({d.rule.replace('_', ' ')}); "
                     "the answer repeats or depends on that token, so a cached answer would be wrong.")
        ans_a, ans_b = f"A response that {ca[0]}, using '{d.old}'.", f"A response that {cb[0]}, using '{d.new}'."
    return Candidate(
        domain=domain, subcategory=sub, label=d.label, query_a=a.text, query_b=b.text,
        expected_answer_a=ans_a, expected_answer_b=ans_b, rationale=rationale, verification_method=vm,
        verification_payload=payload, construction_method=METHOD, source=a.corpus,
        real_world_grounding=GROUNDING_POLICY[reason] if reason else GROUNDING[d.label],
        provenance=Provenance(generator=f"{domain}.{METHOD}", generator_version=VERSION, template_id=d.rule,
                              source_file=f"{a.corpus}/{a.source_file}",
                              source_record=f"{a.record_id}|{b.record_id}", scrubbed=a.scrubbed or b.scrubbed),
        licence=a.licence,
    )


# ---- shards, records, embeddings ----

_RECORDS: "weakref.WeakKeyDictionary[Any, dict[str, list]]" = weakref.WeakKeyDictionary()


def shards(datasets: Any) -> list[str]:
    """Every input shard ("<corpus>/<file>") of the real-traffic corpora present, sorted."""
    if datasets is None:
        return []
    return sorted(f"{corpus}/{rel}" for corpus in CORPORA for rel in datasets.files(corpus))


def _corpus_records(datasets: Any, corpus: str) -> list:
    per = _RECORDS.setdefault(datasets, {})
    if corpus not in per:
        per[corpus] = list(datasets.load(corpus))
    return per[corpus]


def shard_prompts(datasets: Any, shard: str, limit: int | None = None) -> tuple[list[Prompt], int]:
    """The shard's non-empty prompts, scrubbed, in record-id order (at most `limit`), and how many
    records had no prompt text."""
    from sources.base import natural_key

    corpus, _, rel = shard.partition("/")
    if corpus not in CORPORA or not rel:
        from pipeline.core.errors import InputError
        raise InputError(f"{shard}:file: not a real-traffic shard. Use one of shards(datasets): <corpus>/<file> "
                         f"with corpus in {', '.join(CORPORA)}")
    recs = sorted((r for r in _corpus_records(datasets, corpus) if r.source_file == rel),
                  key=lambda r: (r.split, natural_key(r.record_id)))
    out, empty = [], 0
    for r in recs:
        if not r.text.strip():
            empty += 1
            continue
        s = scrub(r.text)
        out.append(Prompt(r.record_id, s.text, s.scrubbed, corpus, rel, r.licence))
        if limit is not None and len(out) >= limit:
            break
    return out, empty


def default_cache_dir() -> Path:
    """The cache root (pipeline.core.settings): $CACHEEVAL_CACHE_DIR, else <project>/.cache/cacheeval."""
    from pipeline.core import settings

    return settings.cache_root()


def embed(texts: list[str], cache_dir: Path | None = None) -> Any:
    """MiniLM vectors (L2-normalised float32) for `texts`, through the content-addressed cache."""
    from pipeline.core import settings
    from pipeline.stages.embed_cache import EmbeddingCache, embed_texts
    from pipeline.stages.embedders import load_embedders_config

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    spec = load_embedders_config().specs[EMBEDDER]
    cache = EmbeddingCache(settings.embeddings_db(cache_dir))
    try:
        vecs, _ = embed_texts(spec, texts, cache, cache_dir)
    finally:
        cache.close()
    return vecs


def neighbour_pairs(vecs: Any, k: int = NEIGHBOURS, min_cosine: float = MIN_COSINE) -> list[tuple[int, int]]:
    """Index pairs (i < j) among each vector's k approximate nearest neighbours with cosine >=
    min_cosine, sorted. usearch HNSW, fixed parameters, one thread, so the graph is reproducible."""
    import numpy as np
    from usearch.index import Index

    n = len(vecs)
    if n < 2:
        return []
    index = Index(ndim=int(vecs.shape[1]), metric="cos", dtype="f32", **HNSW)
    index.add(np.arange(n, dtype=np.uint64), np.ascontiguousarray(vecs, dtype=np.float32), threads=1)
    found = index.search(np.ascontiguousarray(vecs, dtype=np.float32), min(k + 1, n), threads=1)
    pairs = set()
    for i in range(n):
        for key, dist in zip(found.keys[i][:found.counts[i]], found.distances[i][:found.counts[i]]):
            j = int(key)
            # Rounded, so a last-bit difference between machines cannot move a pair across the threshold.
            if j != i and round(1.0 - float(dist), 4) >= min_cosine:
                pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)


# ---- mining ----

def mine(datasets: Any, shard: str, cache_dir: Path | None = None, limit: int | None = None,
         prompts: list[Prompt] | None = None) -> MineResult:
    """Mine one shard: exact duplicates after normalisation plus ANN near-duplicates, labelled by the
    rules, family-limited and verified. Returns the candidates and the drops by reason."""
    from domains.verify import verify
    from sources.base import natural_key

    res = MineResult(shard)
    if prompts is None:
        prompts, empty = shard_prompts(datasets, shard, limit)
        if empty:
            res.drops["empty_prompt"] += empty
    res.n_prompts = len(prompts)
    groups: dict[str, list[Prompt]] = {}
    for p in prompts:
        groups.setdefault(normalize_text(p.text), []).append(p)
    norms = sorted(groups)
    pairs: list[tuple[Prompt, Prompt]] = []
    for norm in norms:
        # Each distinct wording once (first record), chained: no all-pairs blow-up on a big group.
        distinct: dict[str, Prompt] = {}
        for p in groups[norm]:
            distinct.setdefault(p.text, p)
        if len(groups[norm]) > len(distinct):
            res.drops["identical_text"] += len(groups[norm]) - len(distinct)
        reps = list(distinct.values())
        pairs.extend(zip(reps, reps[1:]))
    vecs = embed(norms, cache_dir) if len(norms) > 1 else None
    for i, j in (neighbour_pairs(vecs) if vecs is not None else []):
        pairs.append((groups[norms[i]][0], groups[norms[j]][0]))
    res.n_pairs = len(pairs)
    # query_a is the prompt with the smaller record id, whichever way the index or hash found the pair.
    pairs = [tuple(sorted(ab, key=lambda p: natural_key(p.record_id))) for ab in pairs]
    proposals: list[tuple[int, str, str, Candidate]] = []
    for a, b in pairs:
        d = classify(a.text, b.text)
        if d.label is None:
            res.drops[d.rule] += 1
            continue
        c = _candidate(a, b, d)
        if c is None:
            res.drops["domain_mismatch"] += 1
            continue
        # EQUIV first, then ADVERSARIAL; within a label by record ids: the family guard's order.
        proposals.append((0 if d.label == "EQUIV" else 1, natural_key(a.record_id), natural_key(b.record_id), c))
    guard = FamilyGuard()
    for _, _, _, c in sorted(proposals, key=lambda t: t[:3]):
        if not guard.offer(c):
            res.drops["family_limit_or_duplicate"] += 1
            continue
        out = verify(c)
        if not out.passed:
            res.drops[f"verifier:{out.reason}"] += 1
            continue
        res.candidates.append(c)
    return res


def mine_shard(datasets: Any, shard: str, cache_dir: Path | None = None) -> list[Candidate]:
    """The verified candidates mined from one shard (see `mine` for the drops)."""
    return mine(datasets, shard, cache_dir).candidates


_MINED: dict[tuple, MineResult] = {}


def _mined(datasets: Any, shard: str) -> MineResult:
    """One shard's result, memoised per (datasets root, shard, file size and mtime, cache dir), so
    the conversational and creative generators mine each shard once."""
    corpus, _, rel = shard.partition("/")
    path = datasets.folder(corpus) / rel
    st = path.stat()
    key = (str(Path(datasets.root).resolve()), shard, st.st_size, st.st_mtime_ns, str(default_cache_dir()))
    if key not in _MINED:
        _MINED[key] = mine(datasets, shard)
    return _MINED[key]


def real_traffic_build(ctx: GenContext) -> tuple[list[Candidate], Counter]:
    """All shards' candidates for ctx.domain (sorted by content key) and the drops summed by reason
    (over every shard, whatever the domain): from ctx.mined when the build mined them (the
    mined_pairs asset, one step per shard), else mined here. Nothing without a datasets dir."""
    if ctx.mined is not None:  # the build mined every shard already (assets/mining.py)
        return ([c for c in ctx.mined["candidates"] if c.domain == ctx.domain],
                Counter(ctx.mined["drops"]))
    if ctx.datasets is None:
        return [], Counter()
    cands: list[Candidate] = []
    drops: Counter = Counter()
    for shard in shards(ctx.datasets):
        res = _mined(ctx.datasets, shard)
        cands.extend(c for c in res.candidates if c.domain == ctx.domain)
        drops.update(res.drops)
    return sorted(cands, key=lambda c: c.key), drops


def real_traffic_rows(ctx: GenContext) -> Iterator[Candidate]:
    """Generator for a SPEC's "real_traffic_mined" method: the mined candidates of ctx.domain."""
    yield from real_traffic_build(ctx)[0]


def conversational_traffic_rows(ctx: GenContext) -> Iterator[Candidate]:
    """real_traffic_mined rows for the conversational domain (time-sensitive ones under policy_no_cache)."""
    yield from real_traffic_rows(ctx)


def creative_traffic_rows(ctx: GenContext) -> Iterator[Candidate]:
    """real_traffic_mined rows for the creative domain (all under policy_no_cache "creative")."""
    yield from real_traffic_rows(ctx)


def summarise(results: Iterable[MineResult]) -> dict[str, Any]:
    """Counts per label and domain, and drops by reason, over several shards' results."""
    labels: Counter = Counter()
    drops: Counter = Counter()
    for r in results:
        labels.update(f"{c.domain}:{c.label}" for c in r.candidates)
        drops.update(r.drops)
    return {"kept": dict(sorted(labels.items())), "drops": dict(sorted(drops.items()))}
