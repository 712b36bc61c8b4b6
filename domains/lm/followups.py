"""LM-written follow-ups: a language model rewords the user's next message of a curated
conversation, and the pipeline, from the conversation, decides what every pair of them asks for.

A domain takes part through its LM hooks (domains.base.LMHooks): `follow_ups()` gives the
conversation states a model may write a follow-up for (FollowUpItem: the earlier turns, the curated
follow-ups of one target, the words the follow-up must keep, must not name or must not restate),
and `pair_follow_ups(item, texts, others)` makes the rows from the kept follow-ups `texts` of the
item (and `others`, kept earlier for other items of the same target) the domain's own way
(multi_turn: the same follow-up after earlier turns with one fact changed is ADVERSARIAL, after
another conversation of the same kind RELATED_UNSAFE, two follow-ups of one target after the same
turns PARA_SAFE). The model never writes an answer, an alias set or a label.

A follow-up is kept only when (`follow_up_problem`): it keeps the target verbatim ("Fahrenheit",
"second") and names no other; it restates no fact of the earlier turns and no number the curated
follow-up lacks (else it no longer depends on the conversation); it refers back (a pronoun such as
"it", "that", "there", "one", "we", or an elliptic opening "And ...", "What about ..."); its content
words are the conversation's, the curated follow-ups' or common request words; it is one question
or request and reads as a person would write it (naturalness.py). Every drop is counted by reason.

The prompts are configs/prompts/lm_followup.yaml; `in_build: false` keeps a section out of the
build until its responses are recorded in sources/curated/llm_replay.jsonl.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping

from domains.base import Candidate, DomainSpec, GenContext, normalize_text
from domains.families import FamilyGuard, spread, word_overlap
from domains.lm import check_sections, read_prompt_file, section_for, section_llm, yields
from domains.lm.generate import REPLAY_REL, upstream
from domains.lm.naturalness import unnatural
from domains.lm.rules import _DANGLING, _DOES_HAS, _IS_HAS, _count, _has, _new_capitalised, new_words, parse_output
from domains.text import NUMBER_WORDS
from domains.verify import verify
from pipeline.core.errors import InputError
from pipeline.core.paths import CONFIGS
from pipeline.services.llm.cached_provider import ReplayMissError

PROMPTS_FILE = CONFIGS / "prompts" / "lm_followup.yaml"
PROMPTS_REL = "configs/prompts/lm_followup.yaml"
VERSION = "1"
MAX_WORDS = 25
# Two follow-ups that share more of their words than this are no PARA_SAFE row worth a curated
# one's place ("Which continent is this country in?" / "... that country in?").
MAX_PARA_OVERLAP = 0.5
_SECTION_KEYS = {"id", "finals", "max_items", "max_para_safe", "system", "examples", "user"}
_OPTIONAL = {"params", "provider", "in_build", "keywords"}
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
# A word that points back into the conversation, or an opening that leaves out what it continues.
_REFERS = re.compile(r"\b(?:it|its|it's|that|this|those|these|them|there|one|ones|we|us|our|each|the same)\b", re.IGNORECASE)
_ELLIPTIC = re.compile(r"^\s*(?:and|what about|how about|now|then|so)\b", re.IGNORECASE)
# Request verbs a follow-up may open with, besides the curated follow-ups' own first words.
_IMPERATIVES = {"convert", "give", "tell", "translate", "split", "scale", "divide", "name", "show", "express", "make",
                "put", "say", "remind", "work"}
RETRY = frozenset({"identical_to_seed", "copies_curated", "duplicate"})
# Slips seen in the trial's follow-ups (kind -> pattern): a follow-up showing one is dropped as
# `unnatural:<kind>`. Kept here, not in naturalness.py, so the other tasks' rows do not move.
AWKWARD: dict[str, re.Pattern] = {k: re.compile(p, re.IGNORECASE) for k, p in {
    # "How much does that per person?": the verb went missing
    "verb_missing": r"\b(?:does|do|did)\s+(?:that|it|this)\s+(?:per|in|for|to)\b",
    # "What is the author of the first one?": a person is asked for with "what"
    "what_for_person": r"^\s*what\s+(?:is|was|'s)\s+the\s+(?:author|writer|painter|artist)\b",
    # "How is that temperature in Fahrenheit?"
    "how_is_that": r"^\s*how(?:\s+is|['’]s)\s+(?:that|it|this)\b",
    # "Is that in Kelvin?": asks whether, not for the value
    "yes_no_question": r"^\s*(?:is|are|was|were|does|do|did)\s+(?:that|it|this|they)\b",
    # "Which continent is that?": a country is not a continent
    "continent_is_it": r"\b(?:which|what)\s+continent\s+is\s+(?:it|that|this)(?:\s+country)?\s*\?",
}.items()}
# "one" is a pronoun here ("the second one"); ordinals are targets (keep/foreign)
_FIGURE_WORDS = frozenset(NUMBER_WORDS) - {"one", "single"}
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")


def _figures(text: str) -> Counter:
    """The numbers a text states, in digits or words ("8", "eight"), as written."""
    return Counter(_DIGITS.findall(text)) + Counter(w.casefold() for w in _WORD.findall(text)
                                                    if w.casefold() in _FIGURE_WORDS)


@dataclass(frozen=True)
class FollowUpItem:
    """One conversation state a model writes follow-ups for: the earlier turns it is shown, the
    curated follow-ups asking for one target (the prompt file says which are sent to be reworded),
    the words a follow-up keeps verbatim (`keep`: the target), must not name (`foreign`: the
    other targets) and must not restate (`facts`: what the earlier turns establish, in any
    conversation the follow-up is paired after). `data` is the domain's own handle."""

    group: str
    spread_key: str
    context: tuple[Mapping[str, str], ...]
    finals: tuple[str, ...]
    keep: tuple[str, ...]
    foreign: tuple[str, ...]
    facts: tuple[str, ...]
    topic: str = ""                 # words naming what the conversation is about ("temperature")
    target: str = ""                # items asking for the same thing share it ("weight|convert|pounds")
    data: Any = None

    @property
    def vocabulary(self) -> tuple[str, ...]:
        """Where a follow-up's content words may come from: the curated follow-ups, the turns, the topic."""
        return self.finals + tuple(t["content"] for t in self.context) + (self.topic,)


def follow_up_problem(item: FollowUpItem, seed: str, text: str | None, keywords: tuple[str, ...] = ()) -> str | None:
    """Why a model's follow-up (written from the curated follow-up `seed`) may not stand, or None.
    `keywords`: words of which the follow-up must use one (the attribute asked for: "wrote",
    "author" for a list of novels), from the prompt section's `keywords` for the item's topic."""
    if not text:
        return "empty"
    words = _WORD.findall(text)
    if len(words) < 2:
        return "too_short"
    if len(words) > MAX_WORDS:
        return "too_long"
    norm = normalize_text(text)
    if norm == normalize_text(seed):
        return "identical_to_seed"
    if norm in {normalize_text(f) for f in item.finals}:
        return "copies_curated"
    verbs = _IMPERATIVES | {f.split()[0].casefold().strip(",:") for f in item.finals}
    if not (text.rstrip().endswith("?") or words[0].casefold() in verbs):
        return "not_a_question"
    if text.count("?") > max(1, seed.count("?")):
        return "several_questions"
    if any(not _has(text, k) for k in item.keep):
        return "target_missing"
    if any(_count(text, k) > max(1, _count(seed, k)) for k in item.keep):
        return "repeated"              # "The second painting, who painted the second one?"
    if any(_has(text, f) for f in item.foreign if not _has(seed, f)):
        return "target_changed"
    if keywords and not any(_has(text, k) for k in keywords):
        return "attribute_missing"     # "Which painting painted the second one?" asks for a painting
    if any(_has(text, f) for f in item.facts if not _has(seed, f)) or _figures(text) != _figures(seed):
        return "restates_context"      # "What's 12 °C in Fahrenheit?" no longer needs the conversation
    if not (_REFERS.search(text) or _ELLIPTIC.search(text)):
        return "no_reference"
    if _new_capitalised(seed, text):
        return "new_entity"
    if new_words(text, item.vocabulary):
        return "new_word"
    if (_DANGLING.search(text) and not _DANGLING.search(seed)) or _DOES_HAS.search(text) or _IS_HAS.search(text):
        return "ungrammatical"
    kind = next((k for k, pattern in AWKWARD.items() if pattern.search(text)), None) or unnatural(text)
    # "What about in German?" opens a follow-up naturally; the pattern is for a first message
    return f"unnatural:{kind}" if kind and kind != "follow_up_opening" else None


# ---------------------------------------------------------------- prompt file

@lru_cache(maxsize=1)
def load_prompts() -> dict:
    """Parse and check configs/prompts/lm_followup.yaml."""
    data = read_prompt_file(PROMPTS_FILE, PROMPTS_REL)
    if not isinstance(data, dict) or not {"params", "domains"} <= set(data) or "seed" not in (data["params"] or {}):
        raise InputError(f"{PROMPTS_REL}:top: needs params (with a seed) and domains. Add what is missing")
    check_sections(data, PROMPTS_REL, _SECTION_KEYS, _OPTIONAL, ("{context}", "{q}"),
                   ("earlier turns", "follow-up", "reworded follow-up"))
    return data


def prompt_for(domain: str) -> dict:
    """The prompt file's section for `domain`."""
    return section_for(load_prompts(), PROMPTS_REL, domain, "follow-up", _SECTION_KEYS)


def show(context) -> str:
    """The earlier turns as the prompt shows them: one "User: ..." or "Assistant: ..." line each."""
    return "\n".join(f"{t['role'].capitalize()}: {t['content']}" for t in context)


def messages_for(section: Mapping[str, Any], context, final: str) -> list[dict]:
    """The few-shot chat: each example's turns and follow-up, the assistant's rewording, then the seed."""
    def ask(turns: str, q: str) -> dict:
        return {"role": "user", "content": section["user"].replace("{context}", turns).replace("{q}", q)}

    msgs: list[dict] = []
    for turns, q, reworded in section["examples"]:
        msgs += [ask(turns.strip(), q), {"role": "assistant", "content": reworded}]
    return msgs + [ask(show(context), final)]


def _ask(llm, section, params, item: FollowUpItem, final: str) -> str:
    try:
        return llm.complete(messages_for(section, item.context, final), system=section["system"], **params).text
    except ReplayMissError as exc:
        raise ReplayMissError(
            f"{REPLAY_REL}: no recorded response for prompt {section['id']} on {item.group} ({exc}). Re-record the "
            f"entries: python -m domains.lm.record --resume") from None


# ---------------------------------------------------------------- generation

def items(spec: DomainSpec, section: Mapping[str, Any], ctx: GenContext, limit: int | None = None) -> list[FollowUpItem]:
    """Up to `max_items` (or `limit`) of the domain's follow-up items, taking turns over their spread keys."""
    chosen = spread(list(spec.lm.follow_ups()), lambda it: it.spread_key, ctx.rng("lm_followup", section["id"]))
    return chosen[:min(int(section["max_items"]), limit if limit is not None else len(chosen))]


def _stamp(c: Candidate, spec: DomainSpec, section, snapshot: str, record: str) -> Candidate:
    return c.with_(construction_method="lm_generated", source=f"lm:{upstream(snapshot)}",
                   provenance=replace(c.provenance, generator=f"{spec.name}.lm_generated", generator_version=VERSION,
                                      template_id=section["id"], source_record=record, model_snapshot=snapshot))


def generate(spec: DomainSpec, ctx: GenContext, *, in_build: bool = True, limit: int | None = None) -> list[Candidate]:
    """The domain's rows made from model-written follow-ups (nothing without `ctx.llm` or follow-up
    hooks, nor in the build while the section says its responses are not recorded yet); the yield
    is recorded as task "followup". At most `max_para_safe` PARA_SAFE rows are offered, each of two
    follow-ups sharing at most half their words: the curated ones, worded to share few words, are
    the hard paraphrases (issue 17 item 5) that these take the place of."""
    if ctx.llm is None or spec.lm is None or spec.lm.follow_ups is None:
        return []
    data, section = load_prompts(), prompt_for(spec.name)
    if in_build and section.get("in_build") is False:
        return []
    llm = section_llm(ctx.llm, section, f"{PROMPTS_REL}:domains.{spec.name}")
    params = {**data["params"], **(section.get("params") or {})}
    keywords = {str(t): tuple(str(w) for w in ws) for t, ws in (section.get("keywords") or {}).items()}
    drops: Counter = Counter()
    n_items = n_sent = n_out = 0
    out: list[Candidate] = []
    guard, para = FamilyGuard(), 0
    seen: set[str] = set()
    by_target: dict[str, list[str]] = {}    # kept follow-ups of earlier items, by target
    for item in items(spec, section, ctx, limit):
        n_items += 1
        kept: list[str] = []
        for i in (i for i in section["finals"] if i < len(item.finals)):
            for attempt in range(int(data.get("attempts") or 1)):
                text = parse_output(_ask(llm, section, {**params, "seed": params["seed"] + attempt}, item, item.finals[i]))
                n_sent, n_out = n_sent + 1, n_out + bool(text)
                problem = follow_up_problem(item, item.finals[i], text, keywords.get(item.topic, ()))
                if problem is None and normalize_text(text) in seen:
                    problem = "duplicate"
                if problem is None:
                    kept.append(text)
                    seen.add(normalize_text(text))
                    break
                drops[f"followup:{problem}"] += 1
                if problem not in RETRY:
                    break
        others = by_target.setdefault(item.target or item.group, [])
        paired = list(spec.lm.pair_follow_ups(item, kept, tuple(others)))
        others.extend(kept)
        lone = sum(not any(text in (c.query_a, c.query_b) for c in paired) for text in kept)
        if lone:
            drops["followup:no_pair"] += lone
        for c in paired:
            c = _stamp(c, spec, section, llm.model_snapshot, item.group)
            outcome = verify(c, spec.policy)
            if spec.policy(c) and c.verification_method != "policy_no_cache":
                drops[f"pair:policy:{spec.policy(c)}"] += 1
            elif not outcome.passed:
                drops[f"pair:verify:{outcome.reason}"] += 1
            elif c.label == "PARA_SAFE" and word_overlap(c.query_a, c.query_b) > MAX_PARA_OVERLAP:
                drops["pair:para_safe_too_close"] += 1
            elif c.label == "PARA_SAFE" and para >= int(section["max_para_safe"]):
                drops["pair:para_safe_cap"] += 1
            elif not guard.offer(c):
                drops["pair:family_limit"] += 1
            else:
                para += c.label == "PARA_SAFE"
                out.append(c)
    yields.record(spec.name, "followup", llm.model_snapshot, seeds=n_items, sent=n_sent, outputs=n_out, kept=len(out),
                  drops=drops)
    return sorted(out, key=lambda c: c.key)
