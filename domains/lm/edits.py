"""LM-written near-misses: a language model rewrites a seed request with one detail changed, and
the pipeline decides what that rewrite asks for (ADVERSARIAL rows).

A domain takes part through its LM hooks (domains.base.LMHooks): `edit_seeds()` gives the requests
a model may edit, each with the detail to change in words ("the country", "one number"), and
`resolve_edit(seed, rewrite, span)` recomputes the rewrite's expected answer the domain's own way
(sympy for math, the fact table for qa_factual, the canonical call for tool) and returns the
candidate, or the reason it is dropped. The model never writes an answer, an alias set or a label.

The acceptance rule shared by every domain comes first: the rewrite differs from the seed in
exactly one contiguous span of at most MAX_SPAN word tokens (a token diff, case-insensitive, the
final punctuation mark aside); an insertion, a deletion, two changes, a copy of the seed or a long rewrite is dropped
with its reason; a seed or rewrite no user would write (naturalness.py) is dropped as
`unnatural:<kind>`. Then the domain's resolver, then the domain's policy and verifier, as for any row.

The prompts are configs/prompts/lm_edit.yaml (one section per domain, few-shot examples, sampling
parameters that enter the request key). `in_build: false` keeps these prompts out of the build
until their responses are recorded in sources/curated/llm_replay.jsonl.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Mapping

from domains.base import Candidate, DomainSpec, EditSeed, GenContext, Span, normalize_text
from domains.families import spread
from domains.lm import check_sections, read_prompt_file, section_for, section_llm, yields
from domains.lm.generate import REPLAY_REL, upstream
from domains.lm.naturalness import unnatural
from domains.lm.rules import parse_output
from domains.verify import verify
from pipeline.core.errors import InputError
from pipeline.core.paths import CONFIGS
from pipeline.services.llm.cached_provider import ReplayMissError

PROMPTS_FILE = CONFIGS / "prompts" / "lm_edit.yaml"
PROMPTS_REL = "configs/prompts/lm_edit.yaml"
VERSION = "1"
MAX_SPAN = 12       # tokens: "The Old Man and the Sea", "into a new list that it returns, leaving items unchanged"
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:['’\-][^\W\d_]+)*|[^\w\s]")
_SECTION_KEYS = {"id", "max_seeds", "system", "examples", "user"}
_OPTIONAL = {"params", "provider", "in_build"}


@dataclass
class Yield:
    """What one task did for one domain and model: seeds tried, prompts sent (a seed is asked again
    when the model copies it), non-empty outputs, rows kept, and each dropped seed's reason."""

    seeds: int = 0
    sent: int = 0
    outputs: int = 0
    kept: int = 0
    drops: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {"seeds": self.seeds, "sent": self.sent, "outputs": self.outputs, "kept": self.kept,
                "drops": dict(sorted(self.drops.items()))}


# ---------------------------------------------------------------- the token diff

def _tokens(text: str) -> list[re.Match]:
    """Word, number and symbol tokens; a final full stop, question or exclamation mark is not one
    (a rewrite that adds or drops it changes nothing a cache would answer)."""
    out = list(_TOKEN.finditer(text))
    return out[:-1] if out and out[-1].group() in ".?!" else out


def one_span(seed: str, rewrite: str) -> Span | str:
    """The one contiguous span `rewrite` changed in `seed`, or why there is not exactly one."""
    a, b = _tokens(seed), _tokens(rewrite)
    fa, fb = [m.group().casefold() for m in a], [m.group().casefold() for m in b]
    ops = [op for op in difflib.SequenceMatcher(None, fa, fb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return "unchanged"
    if len(ops) > 1:
        return "several_changes"
    tag, i1, i2, j1, j2 = ops[0]
    if tag != "replace":
        return "insertion" if tag == "insert" else "deletion"
    if max(i2 - i1, j2 - j1) > MAX_SPAN:
        return "span_too_long"
    return Span(old=seed[a[i1].start():a[i2 - 1].end()], new=rewrite[b[j1].start():b[j2 - 1].end()],
                start_old=a[i1].start(), start_new=b[j1].start())


# ---------------------------------------------------------------- prompt file

@lru_cache(maxsize=1)
def load_prompts() -> dict:
    """Parse and check configs/prompts/lm_edit.yaml."""
    data = read_prompt_file(PROMPTS_FILE, PROMPTS_REL)
    if not isinstance(data, dict) or not {"in_build", "params", "domains"} <= set(data) or "seed" not in data["params"]:
        raise InputError(f"{PROMPTS_REL}:top: needs in_build, params (with a seed) and domains. Add what is missing")
    check_sections(data, PROMPTS_REL, _SECTION_KEYS, _OPTIONAL, ("{q}", "{what}"), ("what", "request", "rewrite"))
    for name, spec in sorted(data["domains"].items()):
        for n, (_, q, r) in enumerate(spec["examples"]):
            if isinstance(one_span(q, r), str):
                raise InputError(f"{PROMPTS_REL}:domains.{name}.examples[{n}]: the rewrite does not change exactly "
                                 f"one span ({one_span(q, r)}). Fix the example")
    return data


def prompt_for(domain: str) -> dict:
    """The prompt file's section for `domain`."""
    return section_for(load_prompts(), PROMPTS_REL, domain, "edit", _SECTION_KEYS)


def messages_for(section: Mapping[str, Any], seed: EditSeed) -> list[dict]:
    """The few-shot chat: each example as a user turn and the assistant's rewrite, then the seed."""
    def ask(what: str, q: str) -> dict:
        return {"role": "user", "content": section["user"].replace("{what}", what).replace("{q}", q)}

    msgs: list[dict] = []
    for what, q, rewrite in section["examples"]:
        msgs += [ask(what, q), {"role": "assistant", "content": rewrite}]
    return msgs + [ask(seed.what, seed.text)]


# ---------------------------------------------------------------- generation

def _stamp(c: Candidate, spec: DomainSpec, seed: EditSeed, section: Mapping[str, Any], snapshot: str,
           span: Span) -> Candidate:
    """The candidate as an LM-generated row: method, source and provenance set here, in one place."""
    params = {**dict(c.provenance.operator_params or {}), "from": span.old, "to": span.new}
    return c.with_(construction_method="lm_generated", source=f"lm:{upstream(snapshot)}",
                   provenance=replace(c.provenance, generator=f"{spec.name}.lm_generated", generator_version=VERSION,
                                      template_id=section["id"], operator="lm_edit", operator_params=params,
                                      source_record=seed.record, model_snapshot=snapshot))


def _ask(llm, section: Mapping[str, Any], params: Mapping[str, Any], seed: EditSeed) -> str:
    try:
        return llm.complete(messages_for(section, seed), system=section["system"], **params).text
    except ReplayMissError as exc:
        raise ReplayMissError(
            f"{REPLAY_REL}: no recorded response for prompt {section['id']} on {seed.record} ({exc}). Re-record the "
            f"entries: CACHEEVAL_LLM_CACHE_MODE=both python -m domains.lm.record") from None


def seeds(spec: DomainSpec, section: Mapping[str, Any], ctx: GenContext, limit: int | None = None) -> list[EditSeed]:
    """Up to `max_seeds` (or `limit`) of the domain's edit seeds, taking turns over their spread keys."""
    pool = list(spec.lm.edit_seeds())
    chosen = spread(pool, lambda s: s.spread_key, ctx.rng("lm_edit", section["id"]))
    return chosen[:min(int(section["max_seeds"]), limit if limit is not None else len(chosen))]


def generate(spec: DomainSpec, ctx: GenContext, *, in_build: bool = True,
             limit: int | None = None) -> tuple[list[Candidate], Yield]:
    """ADVERSARIAL candidates of the domain `spec` written by the model and resolved by the domain,
    and the task's yield. Nothing without `ctx.llm` or edit hooks, nor in the build (`in_build`)
    while the prompt file says the responses are not recorded yet."""
    out, y = [], Yield()
    if ctx.llm is None or spec.lm is None or spec.lm.edit_seeds is None:
        return out, y
    data = load_prompts()
    if in_build and not data["in_build"]:
        return out, y
    section = prompt_for(spec.name)
    if in_build and section.get("in_build") is False:   # this section's responses are not recorded yet
        return out, y
    llm = section_llm(ctx.llm, section, f"{PROMPTS_REL}:domains.{spec.name}")
    params = {**data["params"], **(section.get("params") or {})}
    seen: set[str] = set()
    for seed in seeds(spec, section, ctx, limit):
        y.seeds += 1
        for attempt in range(int(data.get("attempts") or 1)):   # a copy of the seed is asked again
            y.sent += 1
            rewrite = parse_output(_ask(llm, section, {**params, "seed": params["seed"] + attempt}, seed))
            y.outputs += bool(rewrite)
            span = one_span(seed.text, rewrite) if rewrite else "empty"
            if span != "unchanged":
                break
        if not rewrite:
            y.drops["empty"] += 1
            continue
        if isinstance(span, str):
            y.drops[f"diff:{span}"] += 1
            continue
        kind = unnatural(seed.text) or unnatural(rewrite)   # both sides stand in the row
        if kind:
            y.drops[f"unnatural:{kind}"] += 1
            continue
        resolved = spec.lm.resolve_edit(seed, rewrite, span)
        if isinstance(resolved, str):
            y.drops[f"resolve:{resolved}"] += 1
            continue
        c = _stamp(resolved, spec, seed, section, llm.model_snapshot, span)
        reason = spec.policy(c)
        outcome = verify(c, spec.policy)
        if c.label != "ADVERSARIAL":
            y.drops["label_not_adversarial"] += 1
        elif reason and c.verification_method != "policy_no_cache":
            # a row the resolver put under its domain's policy (personalized: another user's
            # profile, cross_user) is meant; any other the policy catches is no near-miss
            y.drops[f"policy:{reason}"] += 1
        elif not outcome.passed:
            y.drops[f"verify:{outcome.reason}"] += 1
        elif normalize_text(rewrite) in seen:
            y.drops["duplicate"] += 1
        else:
            seen.add(normalize_text(rewrite))
            out.append(c)
    y.kept = len(out)
    yields.record(spec.name, "edit", llm.model_snapshot, **y.as_dict())
    return sorted(out, key=lambda c: c.key), y
