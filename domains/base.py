"""The contract between domain modules and the pipeline: candidates, domain specs, verifier outcomes.

A domain module builds `Candidate`s (a row without id, binary label and difficulty, which the
pipeline derives) and registers a `DomainSpec` naming its generators per construction method, its
perturbation operators, its default verifier and its policy. Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import unicodedata
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from pipeline.core.hashing import canonical_json, stable_hash
from pipeline.core.taxonomy import (CONSTRUCTION_METHODS, HIT_LABELS, LABELS, POLICY_REASONS, TIERS,
                                     VERIFICATION_METHODS, binary_label)

if TYPE_CHECKING:
    from domains.corpora.mining.engine import MinedPairs


# The template id of the team's rewordings of real corpus requests (domains/corpora/rewordings.py):
# selection offers them first, and groups them with the corpus they reword (pipeline/stages).
REAL_REWORDING = "real_rewording"


def stable_rng(*names: Any) -> random.Random:
    """A generator seeded from stable names (never global state, never hash())."""
    return random.Random(int(stable_hash(*names)[:16], 16))


_WS = re.compile(r"\s+")
_PUNCT_END = re.compile(r"[\s.?!:;,]+$")


def normalize_text(text: str) -> str:
    """The normalisation used for duplicate and leakage checks: NFKC, casefold, collapsed space,
    trailing punctuation dropped. Deliberately keeps inner punctuation and every token, so that
    `x + 2` and `a + 2` stay different."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = _WS.sub(" ", t).strip()
    return _PUNCT_END.sub("", t)


def request_key(query: str, context: Any, system_prompt: str | None) -> str:
    """The normalised full request one side of a pair sends (system prompt, earlier turns, query):
    duplicates and test leakage are judged on this."""
    return canonical_json([normalize_text(system_prompt or ""), context or [], normalize_text(query)])


def pair_signature(domain: str, side_a: tuple, side_b: tuple) -> tuple[str, str, str]:
    """Order-insensitive identity of a pair; each side is (query, context, system_prompt, tools)."""
    a = request_key(*side_a[:3]) + canonical_json(side_a[3])
    b = request_key(*side_b[:3]) + canonical_json(side_b[3])
    lo, hi = sorted([a, b])
    return (domain, lo, hi)


@dataclass(frozen=True)
class Provenance:
    """Where a candidate came from. `generator_version` must change whenever a generator's output
    for the same inputs changes."""

    generator: str
    generator_version: str
    template_id: str | None = None
    operator: str | None = None
    operator_params: Mapping[str, Any] | None = None
    source_file: str | None = None
    source_record: str | None = None
    original_label: str | int | None = None
    model_snapshot: str | None = None
    scrubbed: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "operator_params" and value is not None:
                value = json.loads(canonical_json(dict(value)))
            out[f.name] = value
        return out


@dataclass(frozen=True)
class Candidate:
    """A candidate row: every field of a benchmark row except id, binary_label and difficulty."""

    domain: str
    subcategory: str
    label: str
    query_a: str
    query_b: str
    expected_answer_a: str
    expected_answer_b: str
    rationale: str
    verification_method: str
    verification_payload: Mapping[str, Any]
    construction_method: str
    source: str
    real_world_grounding: str
    provenance: Provenance
    licence: str = "CC-BY-4.0 (CacheEval curated)"
    context_a: tuple[Mapping[str, str], ...] | None = None
    context_b: tuple[Mapping[str, str], ...] | None = None
    system_prompt_a: str | None = None
    system_prompt_b: str | None = None
    tools_a: tuple[Mapping[str, Any], ...] | None = None
    tools_b: tuple[Mapping[str, Any], ...] | None = None

    @property
    def binary_label(self) -> str:
        return binary_label(self.label, self.verification_method)

    @property
    def key(self) -> str:
        """Content key: identical candidates collapse, and selection order never depends on
        generation order."""
        return stable_hash(
            self.domain, self.label, self.query_a, self.query_b, self.context_a, self.context_b,
            self.system_prompt_a, self.system_prompt_b, self.tools_a, self.tools_b,
        )

    def pair_signature(self) -> tuple[str, ...]:
        """See `pair_signature`: two rows with the same signature are duplicates."""
        return pair_signature(self.domain, (self.query_a, self.context_a, self.system_prompt_a, self.tools_a),
                              (self.query_b, self.context_b, self.system_prompt_b, self.tools_b))

    def with_(self, **changes: Any) -> "Candidate":
        return replace(self, **changes)

    def under_policy(self, reason: str | None, **changes: Any) -> "Candidate":
        """The candidate put under the no-cache policy `reason` (one of POLICY_REASONS): verified
        by `policy_no_cache`, its own method and payload kept as the underlying check. None
        returns the candidate unchanged (with `changes` applied). The one way any domain does it."""
        if reason is None:
            return replace(self, **changes) if changes else self
        if reason not in POLICY_REASONS:
            raise ValueError(f"unknown policy reason {reason!r}; use one of {', '.join(POLICY_REASONS)}")
        if self.verification_method == "policy_no_cache":
            return replace(self, **changes) if changes else self
        payload = {"policy": reason, "underlying_method": self.verification_method,
                   "underlying_payload": self.verification_payload}
        return replace(self, verification_method="policy_no_cache", verification_payload=payload, **changes)


@dataclass(frozen=True)
class Outcome:
    """What a verifier concluded about a candidate's label."""

    tier: str
    passed: bool
    reason: str  # short, stable, countable: "ok", "answers_equal_for_miss", ...
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "passed": self.passed, "reason": self.reason,
                "evidence": json.loads(canonical_json(dict(self.evidence)))}


@dataclass(frozen=True)
class Operator:
    """A typed perturbation operator. `apply(seed, rng)` returns the perturbed variant or None
    when the operator does not apply to that seed (the reason is then counted as a drop)."""

    name: str
    description: str
    apply: Callable[..., Any]


@dataclass(frozen=True)
class GenContext:
    """What a generator may use: the profile's per-label need for its domain (generators should
    offer at least this many candidates per label, with margin for verifier drops), the datasets
    dir's source records (None for the embedded default) and stable randomness."""

    domain: str
    profile: str
    need: Mapping[str, int]
    datasets: Any = None  # sources.DatasetsDir or None
    llm: Any = None       # LLM provider resource or None
    # The pairs mined from real traffic (the mined_pairs asset's value, or domains.corpora.mining.mine
    # outside the build), the only way mined rows reach a generator; None: no mined rows.
    mined: MinedPairs | None = None
    # The corpora's verified candidate pairs (domains.corpora.extract.Extract: the committed extract, or
    # the one made from the datasets dir); generate() adds the domain's. None: no corpus rows.
    extract: Any = None
    # The domain's policy (its DomainSpec.policy), for helpers shared by several domains that must
    # apply it (domains/corpora); None: the caller did not pass it.
    policy: Policy | None = None

    def rng(self, *names: Any) -> random.Random:
        return stable_rng(self.domain, *names)


Generator = Callable[[GenContext], Iterable[Candidate]]
# A domain's caching policy: the reason ("creative", "mutation", ...) that forces policy_no_cache, or None.
Policy = Callable[[Candidate], str | None]


@dataclass(frozen=True)
class LMItem:
    """One curated item a language model may reword (domains/lm): its phrasings, what a rewording
    must keep or must not add, and what both sides of a pair of rewordings expect. The answer and
    the verification payload come from the curated item, never from the model."""

    group: str                      # the item's id: rewordings of one item pair up
    spread_key: str                 # the seed sample takes turns over these (attribute, family, ...)
    phrasings: tuple[str, ...]      # the curated phrasings; the prompt file says which are sent
    keep: tuple[str, ...]           # entity or subject text a rewording keeps verbatim
    keywords: tuple[str, ...]       # one must appear: the attribute or aspect asked for
    foreign: tuple[str, ...]        # must not appear unless the seed has it (other attributes/aspects)
    others: tuple[str, ...]         # the other entities or subjects of the domain's table
    leaks: tuple[str, ...]          # answer forms: present only if the model answered instead
    subcategory: str
    answer: str                     # expected_answer_a and _b
    verification_method: str
    payload: Mapping[str, Any]      # verification_payload
    asks_for: str                   # for the rationale: "the capital of Peru; both expect 'Lima'"
    row: Mapping[str, Any] = field(default_factory=dict)   # other Candidate fields both sides share (tools_a, tools_b)
    # When set, a rewording may use no content word outside these and the common request words
    # (domains.lm.rules.REQUEST_WORDS): free-text requests whose subject no entity table pins down.
    vocabulary: tuple[str, ...] = ()


@dataclass(frozen=True)
class EditSeed:
    """One request a language model is asked to rewrite with exactly one answer-determining detail
    changed (domains/lm/edits.py). The domain resolves the rewrite through `data`, its own handle
    (a fact and phrasing, a sampled problem, a tool request), never through the model."""

    record: str                     # the source record, e.g. "austria.capital#0"
    text: str                       # the request sent to the model
    spread_key: str                 # the seed sample takes turns over these
    what: str                       # the detail to change, in words ("Austria to another country, such as Chile")
    data: Any = None


@dataclass(frozen=True)
class Span:
    """The one contiguous span a rewrite changed (a token diff against the seed): the seed's text
    of it, the rewrite's text of it, and the character offset of each."""

    old: str
    new: str
    start_old: int
    start_new: int


@dataclass(frozen=True)
class LMHooks:
    """A domain's part in LM-generated rows; the prompting and the acceptance rules are generic
    (domains/lm). `items(keywords)` gives the items whose attribute or aspect has keywords in the
    prompt file (attribute -> words of which a rewording must use one): PARA_SAFE rewordings.
    `edit_seeds()` and `resolve_edit(seed, rewrite, span)` give ADVERSARIAL rewrites: the seeds a
    model may edit, and the domain's recomputation of a rewrite's answer (a Candidate, or the
    reason it is dropped). `follow_ups()` and `pair_follow_ups(item, texts, others)` give rows made from
    model-written follow-ups of a conversation (domains/lm/followups.py: FollowUpItem): the
    conversation states, and the domain's rows from the kept follow-ups of one, labelled by the
    conversation, never by the model."""

    items: Callable[[Mapping[str, tuple[str, ...]]], Sequence[LMItem]] | None = None
    source_file: str = ""           # the curated file, relative to the project, for provenance
    edit_seeds: Callable[[], Sequence[EditSeed]] | None = None
    resolve_edit: Callable[[EditSeed, str, Span], "Candidate | str"] | None = None
    follow_ups: Callable[[], Sequence[Any]] | None = None
    pair_follow_ups: Callable[[Any, Sequence[str], Sequence[str]], Sequence["Candidate"]] | None = None


@dataclass(frozen=True)
class CorpusFeed:
    """Corpus mappings that feed one construction method of a domain (domains/corpora/feeds.py
    names them: "qqp", "paws", "massive/en-US", ...), picked in this order, and the share of each
    label's need they offer together (label -> fraction; a label not named gets none), spread
    evenly over the mappings. The shares keep a cell from filling with corpus rows alone
    (domains/corpora/common.py: caps)."""

    mappings: tuple[str, ...]
    shares: Mapping[str, float]


@dataclass(frozen=True)
class MinedRule:
    """A rule of real-traffic mining whose pairs go to the domain (domains/corpora/mining/routes.py):
    one of mining's rules by name ("creative", "time_sensitive", "explanatory", "general",
    "follow_up"), or with `test` a rule of the domain's own: the single-turn prompts `test` accepts
    (after the creative and time-sensitive rules). A rule routes to one domain."""

    name: str
    test: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class DomainSpec:
    """A domain's registration: generators per construction method, operators, verifier, policy,
    (for a domain with lm_generated rows) its LM hooks, and its own tables for corpus rows: the
    corpus feeds of each corpus method (`corpus_feeds`: method -> CorpusFeeds, read by
    domains.corpora.feeds.corpus_rows) and the mining rules whose pairs it takes (`mined_rules`,
    read by domains.corpora.mining)."""

    name: str
    description: str
    generators: Mapping[str, Generator]
    verifier: str
    operators: Mapping[str, Operator] = field(default_factory=dict)
    policy: Policy = lambda c: None
    version: str = "1"
    lm: LMHooks | None = None
    corpus_feeds: Mapping[str, tuple[CorpusFeed, ...]] = field(default_factory=dict)
    mined_rules: tuple[MinedRule, ...] = ()
