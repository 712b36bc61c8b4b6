"""LM-generated PARA_SAFE rows: a language model rewords curated seed questions.

A domain takes part by giving its `DomainSpec` LM hooks (`lm=LMHooks(...)`: the curated items a
model may reword, see domains.base.LMItem) and registering `lm_generated` rows made by
`generate(SPEC, ctx)`. Nothing here names a domain. For such a domain, the few-shot prompt of its
section in configs/prompts/lm_paraphrase.yaml asks the model, through the LLM response cache
(`ctx.llm`, a CachedProvider), to reword some phrasings of some items; a rewording is kept only if
it passes the answer-token rules against its seed (rules.py).

Two kept rewordings of the same item form a PARA_SAFE pair. Both sides are new texts, so the
curated rows' family limits (a text in at most 3 rows) are untouched. Expected answers, alias sets
and rubrics come from the curated item, never from the model; the pair then goes through the
domain's verifier and policy. Every drop is counted by reason.

With `ctx.llm` None nothing is generated. The output depends only on the prompt file, the curated
files and the cached responses, never on the profile, so one set of replay entries serves every
profile.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any, Mapping

from domains.base import Candidate, DomainSpec, GenContext, LMItem, Provenance, normalize_text
from domains.families import spread
from domains.lm import check_sections, read_prompt_file, section_for, section_llm, yields
from domains.lm.naturalness import pair_problem, upside_pair
from domains.lm.rules import Seed, paraphrase_problem, parse_output
from domains.verify import verify
from pipeline.core.errors import InputError
from pipeline.core.paths import CONFIGS
from pipeline.services.llm.cached_provider import ReplayMissError

PROMPTS_FILE = CONFIGS / "prompts" / "lm_paraphrase.yaml"
PROMPTS_REL = "configs/prompts/lm_paraphrase.yaml"
REPLAY_REL = "sources/curated/llm_replay.jsonl"
VERSION = "1"
GROUNDING = ("Different users ask for the same thing in their own words; a language model's rewordings "
             "of a curated question widen the phrasings a cache must recognise as the same request.")


# ---------------------------------------------------------------- prompt file

_OPTIONAL = {"in_build", "params", "provider"}
_SECTION_KEYS = {"id", "phrasings", "max_facts", "system", "examples", "user", "keywords"}
# A rewording dropped for one of these is asked again with the next sampling seed (up to the file's
# `attempts`): the model copied the seed, or wrote what another phrasing of the item already gave.
RETRY = frozenset({"identical_to_seed", "copies_curated_phrasing", "duplicate"})
# Blind readers found many pairs of one pattern, the pros / upsides / benefits of X: at most one
# such pair per item and this many per domain (the first ones in item order).
MAX_UPSIDE_PAIRS = 5


@lru_cache(maxsize=1)
def load_prompts() -> dict:
    """Parse and check configs/prompts/lm_paraphrase.yaml."""
    data = read_prompt_file(PROMPTS_FILE, PROMPTS_REL)
    if not isinstance(data, dict) or not {"params", "domains"} <= set(data):
        raise InputError(f"{PROMPTS_REL}:top: needs params and domains. Add the missing section")
    check_sections(data, PROMPTS_REL, _SECTION_KEYS, _OPTIONAL, ("{q}",), ("question", "rewording"))
    return data


def prompt_for(domain: str) -> dict:
    """The prompt file's section for `domain`."""
    return section_for(load_prompts(), PROMPTS_REL, domain, "LM", _SECTION_KEYS)


def messages_for(spec: Mapping[str, Any], question: str) -> list[dict]:
    """The few-shot chat: each example as a user turn and the assistant's rewording, then the seed."""
    msgs: list[dict] = []
    for q, rewording in spec["examples"]:
        msgs.append({"role": "user", "content": spec["user"].replace("{q}", q)})
        msgs.append({"role": "assistant", "content": rewording})
    msgs.append({"role": "user", "content": spec["user"].replace("{q}", question)})
    return msgs


# ---------------------------------------------------------------- seeds

def seeds(spec: DomainSpec, prompt: Mapping[str, Any], ctx: GenContext, limit: int | None = None) -> list[Seed]:
    """The phrasings sent to the model: up to `max_facts` (or `limit`) of the domain's LM items,
    taking turns over their spread keys in an order seeded by the prompt id, and of each (in item
    order) the phrasings the prompt names."""
    if spec.lm is None or spec.lm.items is None:
        return []
    keywords = {a: tuple(str(k) for k in ks) for a, ks in prompt["keywords"].items()}
    n = int(prompt["max_facts"]) if limit is None else min(int(prompt["max_facts"]), limit)
    chosen = spread(spec.lm.items(keywords), lambda it: it.spread_key, ctx.rng("lm", prompt["id"]))[:n]
    return [Seed(it, i) for it in sorted(chosen, key=lambda it: it.group)
            for i in prompt["phrasings"] if i < len(it.phrasings)]


# ---------------------------------------------------------------- candidates

@lru_cache(maxsize=8)
def upstream(snapshot: str) -> str:
    """The upstream model name configs/llm.yaml records for a snapshot (a row's source "lm:<name>")."""
    from pipeline.services.llm.providers import load_llm_config

    for spec in load_llm_config().providers.values():
        if spec.get("snapshot") == snapshot and spec.get("upstream"):
            return str(spec["upstream"])
    return snapshot


def _candidate(spec: DomainSpec, a: Seed, pa: str, b: Seed, pb: str, template_id: str, snapshot: str) -> Candidate:
    item = a.item   # both seeds are phrasings of one item
    return Candidate(
        domain=spec.name, subcategory=item.subcategory, label="PARA_SAFE", query_a=pa, query_b=pb,
        expected_answer_a=item.answer, expected_answer_b=item.answer,
        rationale=f"Two model rewordings of curated phrasings ('{a.text}' / '{b.text}') asking for "
                  f"{item.asks_for}; every answer-determining token kept.",
        verification_method=item.verification_method, verification_payload=dict(item.payload),
        construction_method="lm_generated", source=f"lm:{upstream(snapshot)}", real_world_grounding=GROUNDING,
        provenance=Provenance(generator=f"{spec.name}.lm_generated", generator_version=VERSION,
                              template_id=template_id, source_file=spec.lm.source_file,
                              source_record=f"{a.record}|{b.record}", model_snapshot=snapshot),
        **dict(item.row))


def _ask(llm, prompt: Mapping[str, Any], params: Mapping[str, Any], seed: Seed) -> str:
    try:
        return llm.complete(messages_for(prompt, seed.text), system=prompt["system"], **params).text
    except ReplayMissError as exc:
        raise ReplayMissError(
            f"{REPLAY_REL}: no recorded response for prompt {prompt['id']} on {seed.record} ({exc}). Re-record the "
            f"entries: CACHEEVAL_LLM_CACHE_MODE=both python -m domains.lm.record") from None


def generate(spec: DomainSpec, ctx: GenContext, limit: int | None = None,
             in_build: bool = True) -> tuple[list[Candidate], Counter, int]:
    """PARA_SAFE candidates of the domain `spec` (nothing without `ctx.llm` or `spec.lm`), the drops
    by reason, and how many prompts were sent (`limit`: at most that many items, for a trial).
    A section with `in_build: false` (responses not recorded yet) sends nothing in the build.
    A seed whose rewording is a copy (RETRY) is asked again with the next sampling seed, up to the
    file's `attempts` in all; every dropped output counts its reason."""
    drops: Counter = Counter()
    if ctx.llm is None or spec.lm is None or spec.lm.items is None:
        return [], drops, 0
    data, prompt = load_prompts(), prompt_for(spec.name)
    if in_build and prompt.get("in_build") is False:
        return [], drops, 0
    llm = section_llm(ctx.llm, prompt, f"{PROMPTS_REL}:domains.{spec.name}")
    params = {**data["params"], **(prompt.get("params") or {})}
    sent = seeds(spec, prompt, ctx, limit)
    by_group: dict[str, list[tuple[Seed, str]]] = {}
    n_sent = n_out = 0
    for seed in sent:
        kept = by_group.setdefault(seed.item.group, [])
        for attempt in range(int(data.get("attempts") or 1)):
            para = parse_output(_ask(llm, prompt, {**params, "seed": params["seed"] + attempt}, seed))
            n_sent, n_out = n_sent + 1, n_out + bool(para)
            problem = paraphrase_problem(seed, para)
            if problem is None and any(normalize_text(p) == normalize_text(para) for _, p in kept):
                problem = "duplicate"
            if problem is None:
                kept.append((seed, para))
                break
            drops[f"paraphrase:{problem}"] += 1
            if problem not in RETRY:
                break
    out: list[Candidate] = []
    upsides: set[str] = set()
    for group in sorted(by_group):
        kept = by_group[group]
        if len(kept) < 2:
            drops["paraphrase:unpaired"] += len(kept)
            continue
        for x in range(len(kept)):
            for y in range(x + 1, len(kept)):
                c = _candidate(spec, kept[x][0], kept[x][1], kept[y][0], kept[y][1], prompt["id"], llm.model_snapshot)
                reason = spec.policy(c)
                outcome = verify(c, spec.policy)
                # two phrasings of one curated item may differ in kind ("public" / "national holidays")
                problem = pair_problem(kept[x][1], kept[y][1])
                upside = upside_pair(kept[x][1], kept[y][1])
                if problem:
                    drops[f"pair:{problem}"] += 1
                elif reason:
                    drops[f"policy:{reason}"] += 1
                elif not outcome.passed:
                    drops[f"verify:{outcome.reason}"] += 1
                elif upside and (group in upsides or len(upsides) >= MAX_UPSIDE_PAIRS):
                    drops["pair:template_repeated"] += 1
                else:
                    upsides.update([group] if upside else [])
                    out.append(c)
    yields.record(spec.name, "paraphrase", llm.model_snapshot, seeds=len(sent), sent=n_sent, outputs=n_out,
                  kept=len(out), drops=drops)
    return sorted(out, key=lambda c: c.key), drops, n_sent
