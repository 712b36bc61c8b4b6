"""LM-generated PARA_SAFE rows: a language model rewords curated seed questions.

For each chosen domain (qa_factual, qa_open) a few-shot prompt from configs/prompts/lm_paraphrase.yaml
asks the model, through the LLM response cache (`ctx.llm`, a CachedProvider), to reword some
phrasings of each curated item. A paraphrase is kept only if it passes the answer-token rules
against its seed:

- the seed's entity or subject appears verbatim, every number of the seed appears and no new one;
- no new entity: no capitalised word absent from the seed, no other entity or subject of the
  domain's table, and (qa_factual) no answer alias the seed lacks (the model answered instead);
- the attribute or aspect asked for is still named (a keyword of its own, none of another's);
- it differs from the seed and from every curated phrasing after normalisation; it is a question;
- the content words it shares with the seed come in the seed's order (a reordering can swap subject
  and object: "Which ocean flows into the Volga?"), both words of a seed's "X or Y" stay, and no
  "does ... has?" agreement slip.

Two kept paraphrases of the same item form a PARA_SAFE pair. Both sides are new texts, so the
curated rows' family limits (a text in at most 3 rows) are untouched. Expected answers, alias sets
and rubrics come from the curated item, never from the model; the pair then goes through the
domain's verifier and policy. Every drop is counted by reason.

With `ctx.llm` None the generators yield nothing. Their output depends only on the prompt file,
the curated files and the cached responses, never on the profile, so one set of replay entries
serves every profile.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping

from domains.base import Candidate, GenContext, Provenance, normalize_text
from domains.text import NUMBER_WORDS, ORDINALS, stem
from pipeline.core.errors import InputError
from pipeline.llm.cache import ReplayMissError
from pipeline.core.paths import CONFIGS

DOMAINS = ("qa_factual", "qa_open")
PROMPTS_FILE = CONFIGS / "prompts" / "lm_paraphrase.yaml"
PROMPTS_REL = "configs/prompts/lm_paraphrase.yaml"
REPLAY_REL = "sources/curated/llm_replay.jsonl"
VERSION = "1"
MIN_WORDS, MAX_WORDS = 3, 30
GROUNDING = ("Different users ask for the same thing in their own words; a language model's rewordings "
             "of a curated question widen the phrasings a cache must recognise as the same request.")

_NUMBER_WORDS = frozenset(NUMBER_WORDS) | ORDINALS
_IMPERATIVES = ("name", "tell", "give", "list", "explain", "describe", "state", "identify")
_PREFIX = re.compile(r"^\s*(?:rewritten question|rewritten|rewrite this question|rewrite|question|paraphrase|"
                     r"answer|q)\s*[:\-]\s*", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_DANGLING = re.compile(r"\b(?:of|the|a|an|and|is)\s*\?\s*$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Seed:
    """One curated phrasing sent to the model, with what its paraphrase must keep and avoid."""

    group: str                      # the item (fact or question id): paraphrases of one group pair up
    record: str                     # "<group>#<phrasing index>"
    text: str
    keep: tuple[str, ...]           # entity or subject text, verbatim
    keywords: tuple[str, ...]       # one must appear (the attribute or aspect asked for)
    foreign: tuple[str, ...]        # must not appear unless the seed has it (other attributes/aspects)
    others: tuple[str, ...]         # other entities or subjects of the table
    leaks: tuple[str, ...]          # answer forms: present only if the model answered
    known: frozenset[str]           # normalised curated phrasings of the item
    item: Any                       # the curated Fact or Question


# ---------------------------------------------------------------- prompt file

@lru_cache(maxsize=1)
def load_prompts() -> dict:
    """Parse and check configs/prompts/lm_paraphrase.yaml."""
    import yaml

    try:
        data = yaml.safe_load(PROMPTS_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{PROMPTS_REL}: file not found. Restore it from git") from None
    if not isinstance(data, dict) or not {"params", "domains"} <= set(data):
        raise InputError(f"{PROMPTS_REL}:top: needs params and domains. Add the missing section")
    for name in sorted(data["domains"]):
        spec = data["domains"][name]
        need = {"id", "phrasings", "max_facts", "system", "examples", "user", "keywords"}
        if not isinstance(spec, dict) or not need <= set(spec):
            raise InputError(f"{PROMPTS_REL}:domains.{name}: needs {', '.join(sorted(need))}. Add the missing keys")
        if "{q}" not in spec["user"]:
            raise InputError(f"{PROMPTS_REL}:domains.{name}.user: has no {{q}} placeholder. Add it")
        if any(not isinstance(e, list) or len(e) != 2 for e in spec["examples"]):
            raise InputError(f"{PROMPTS_REL}:domains.{name}.examples: each example is [question, rewording]. Fix it")
    return data


def messages_for(spec: Mapping[str, Any], question: str) -> list[dict]:
    """The few-shot chat: each example as a user turn and the assistant's rewording, then the seed."""
    msgs: list[dict] = []
    for q, rewording in spec["examples"]:
        msgs.append({"role": "user", "content": spec["user"].replace("{q}", q)})
        msgs.append({"role": "assistant", "content": rewording})
    msgs.append({"role": "user", "content": spec["user"].replace("{q}", question)})
    return msgs


# ---------------------------------------------------------------- parsing and the answer-token rules

def parse_output(text: str) -> str | None:
    """The rewording in a raw completion: first non-empty line, label prefixes and quotes removed."""
    for line in text.splitlines():
        line = _PREFIX.sub("", line.strip()).strip().strip('"“”\'` ').strip()
        if line:
            return line
    return None


def _has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None


def _numbers(text: str) -> Counter:
    words = [w.casefold() for w in _WORD.findall(text)]
    return Counter(_NUMBER.findall(text)) + Counter(w for w in words if w in _NUMBER_WORDS)


def _new_capitalised(seed: str, para: str) -> list[str]:
    """Capitalised words of `para` that the seed lacks (a sentence's first word is not counted)."""
    def bare(w: str) -> str:   # "Algeria's" names Algeria
        return _POSSESSIVE.sub("", w).casefold()

    seed_words = {bare(w) for w in _WORD.findall(seed)}
    out = []
    for sentence in re.split(r"(?<=[?.!])\s+", para):
        for w in _WORD.findall(sentence)[1:]:
            if w[:1].isupper() and bare(w) not in seed_words and w != "I":
                out.append(w)
    return out


_DOES_HAS = re.compile(r"\b(?:does|do|did)\b[^?.!]*\b(?:has|does|is)\b\s*\?", re.IGNORECASE)
_OR = re.compile(r"([^\W\d_]+) or ([^\W\d_]+)", re.IGNORECASE)
_FUNCTION_WORDS = frozenset("""
a an the of in on at to into from for by with about as and or but which what who whom whose when where why how
is are was were be been being do does did have has had can could should would will shall may might must
it its this that these those there their they them you your i me my we our he she his her one some any
""".split())


_GENITIVE = re.compile(r"([^\W_]+)['’]s\s+([^\W_]+)")


def _content_stems(text: str) -> list[str]:
    out: list[str] = []
    for w in _WORD.findall(_GENITIVE.sub(r"\2 of \1", text)):  # "Algeria's capital" reads "capital of Algeria"
        s = stem(_POSSESSIVE.sub("", w.casefold()))
        if w.casefold() not in _FUNCTION_WORDS and s not in out:
            out.append(s)
    return out


def _shared_order(text: str, other: str) -> list[str]:
    """`text`'s content words (first occurrences, stemmed) that `other` also has, in `text`'s order.
    A paraphrase must keep them in the seed's order: a reordering can swap subject and object."""
    theirs = set(_content_stems(other))
    return [w for w in _content_stems(text) if w in theirs]


def _alternatives(text: str) -> list[str]:
    """Both words of every "X or Y" in `text`: a paraphrase that keeps one narrows the question."""
    return [w for pair in _OR.findall(text) for w in pair if w.casefold() not in _FUNCTION_WORDS]


def paraphrase_problem(seed: Seed, para: str | None) -> str | None:
    """Why a paraphrase breaks the answer-token rules (a short countable reason), or None."""
    if not para:
        return "empty"
    n_words = len(_WORD.findall(para))
    if n_words < MIN_WORDS:
        return "too_short"
    if n_words > MAX_WORDS:
        return "too_long"
    norm = normalize_text(para)
    if norm == normalize_text(seed.text):
        return "identical_to_seed"
    if norm in seed.known:
        return "copies_curated_phrasing"
    if not (para.rstrip().endswith("?") or para.split()[0].casefold().strip(",:") in _IMPERATIVES):
        return "not_a_question"
    if _DANGLING.search(para) and not _DANGLING.search(seed.text):
        return "ungrammatical"   # "Which city in Algeria is the capital of?": the object went missing
    if _DOES_HAS.search(para) and not _DOES_HAS.search(seed.text):
        return "ungrammatical"   # "Which atomic number does gold has?"
    if any(not _has(para, x) for x in _alternatives(seed.text)):
        return "alternative_dropped"  # "sea or ocean" -> "ocean": the question now presumes the answer's kind
    if _shared_order(seed.text, para) != _shared_order(para, seed.text):
        return "order_changed"   # "Which ocean flows into the Volga?": who does what to whom may have flipped
    if any(not _has(para, k) for k in seed.keep):
        return "entity_missing"
    if _numbers(para) != _numbers(seed.text):
        return "number_changed"
    if any(_has(para, a) and not _has(seed.text, a) for a in seed.leaks):
        return "answers_instead"
    if any(_has(para, o) and not _has(seed.text, o) for o in seed.others) or _new_capitalised(seed.text, para):
        return "new_entity"
    if not any(_has(para, k) for k in seed.keywords):
        return "attribute_missing"
    if any(_has(para, f) and not _has(seed.text, f) for f in seed.foreign):
        return "attribute_changed"
    return None


# ---------------------------------------------------------------- seeds per domain

def _spread_sample(items: list, key, n: int, rng) -> list:
    """Up to n items, shuffled within each key and interleaved, so every subcategory is seeded."""
    groups: dict[str, list] = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    lanes = []
    for k in sorted(groups):
        lane = list(groups[k])
        rng.shuffle(lane)
        lanes.append(lane)
    out = []
    for i in range(max((len(l) for l in lanes), default=0)):
        out.extend(l[i] for l in lanes if i < len(l))
    return out[:n]


def _qa_factual_seeds(spec: Mapping[str, Any], ctx: GenContext) -> list[Seed]:
    from domains.qa_factual import load_facts

    facts = load_facts()
    keywords = {a: tuple(str(k) for k in ks) for a, ks in spec["keywords"].items()}
    names = sorted({f.name for f in facts})
    chosen = _spread_sample([f for f in facts if f.attribute in keywords], lambda f: f.attribute,
                            int(spec["max_facts"]), ctx.rng("lm", spec["id"]))
    seeds = []
    for f in sorted(chosen, key=lambda f: f.fid):
        foreign = sorted({k for a, ks in keywords.items() if a != f.attribute for k in ks} - set(keywords[f.attribute]))
        for i in spec["phrasings"]:
            if i < len(f.questions):
                seeds.append(Seed(
                    group=f.fid, record=f"{f.fid}#{i}", text=f.questions[i], keep=(f.name,),
                    keywords=keywords[f.attribute], foreign=tuple(foreign),
                    others=tuple(n for n in names if n.casefold() != f.name.casefold()),
                    leaks=tuple(a for a in f.answers if a.strip()), known=frozenset(map(normalize_text, f.questions)),
                    item=f))
    return seeds


@lru_cache(maxsize=1)
def _qa_open_subjects() -> dict[str, str]:
    """Subject id -> its text ({s}) from the curated qa_open file (load_questions keeps only the id)."""
    import yaml
    from domains.qa_open import SOURCE_FILE

    data = yaml.safe_load(SOURCE_FILE.read_text(encoding="utf-8"))
    return {str(sub["id"]): str(sub["s"]) for sub in data["subjects"]}


def _qa_open_seeds(spec: Mapping[str, Any], ctx: GenContext) -> list[Seed]:
    from domains.qa_open import load_questions

    questions, subject_text = load_questions(), _qa_open_subjects()
    keywords = {a: tuple(str(k) for k in ks) for a, ks in spec["keywords"].items()}
    texts = sorted(set(subject_text.values()))
    chosen = _spread_sample([q for q in questions if q.aspect in keywords], lambda q: q.family,
                            int(spec["max_facts"]), ctx.rng("lm", spec["id"]))
    seeds = []
    for q in sorted(chosen, key=lambda q: q.qid):
        s = subject_text[q.subject]
        foreign = tuple(k for k in keywords.get(q.other_aspect, ()) if k not in keywords[q.aspect])
        for i in spec["phrasings"]:
            if i < len(q.phrasings):
                seeds.append(Seed(
                    group=q.qid, record=f"{q.qid}#{i}", text=q.phrasings[i], keep=(s,), keywords=keywords[q.aspect],
                    foreign=foreign, others=tuple(t for t in texts if t.casefold() != s.casefold()), leaks=(),
                    known=frozenset(map(normalize_text, q.phrasings)), item=q))
    return seeds


_SEEDS = {"qa_factual": _qa_factual_seeds, "qa_open": _qa_open_seeds}


# ---------------------------------------------------------------- candidates

def _upstream(snapshot: str) -> str:
    names = load_prompts().get("upstream") or {}
    return str(names.get(snapshot) or snapshot)


def _candidate(domain: str, a: Seed, pa: str, b: Seed, pb: str, template_id: str, snapshot: str) -> Candidate:
    item = a.item
    if domain == "qa_factual":
        from domains.qa_factual import SOURCE_REL

        payload = {"aliases_a": list(item.answers), "aliases_b": list(item.answers)}
        method, answer, sub = "alias_exact_match", item.answers[0], item.subcategory
        what = f"the {item.attribute} of {item.name}; both expect '{answer}'"
    else:
        from domains.qa_open import SOURCE_REL, SUBCATEGORY

        payload = {"criteria_a": item.criteria, "criteria_b": item.criteria}
        method, answer, sub = "rubric", item.answer, SUBCATEGORY[item.family]
        what = f"the {item.aspect} of {item.subject}; the same 3-point rubric"
    return Candidate(
        domain=domain, subcategory=sub, label="PARA_SAFE", query_a=pa, query_b=pb,
        expected_answer_a=answer, expected_answer_b=answer,
        rationale=f"Two model rewordings of curated phrasings ('{a.text}' / '{b.text}') asking for {what}; "
                  f"every answer-determining token kept.",
        verification_method=method, verification_payload=payload, construction_method="lm_generated",
        source=f"lm:{_upstream(snapshot)}", real_world_grounding=GROUNDING,
        provenance=Provenance(generator=f"{domain}.lm_generated", generator_version=VERSION, template_id=template_id,
                              source_file=SOURCE_REL, source_record=f"{a.record}|{b.record}",
                              model_snapshot=snapshot))


def _ask(llm, spec: Mapping[str, Any], params: Mapping[str, Any], seed: Seed) -> str:
    try:
        return llm.complete(messages_for(spec, seed.text), system=spec["system"], **params).text
    except ReplayMissError as exc:
        raise ReplayMissError(
            f"{REPLAY_REL}: no recorded response for prompt {spec['id']} on {seed.record} ({exc}). Re-record the "
            f"entries: CACHEEVAL_LLM_CACHE_MODE=both python -m pipeline.llm.replay record") from None


def generate(domain: str, ctx: GenContext) -> tuple[list[Candidate], Counter, int]:
    """PARA_SAFE candidates for `domain`, the drops by reason, and how many prompts were sent."""
    drops: Counter = Counter()
    if ctx.llm is None:
        return [], drops, 0
    from domains import get_domain
    from domains.verify import verify

    data = load_prompts()
    spec, params = data["domains"][domain], dict(data["params"])
    seeds = _SEEDS[domain](spec, ctx)
    by_group: dict[str, list[tuple[Seed, str]]] = {}
    for seed in seeds:
        para = parse_output(_ask(ctx.llm, spec, params, seed))
        problem = paraphrase_problem(seed, para)
        if problem:
            drops[f"paraphrase:{problem}"] += 1
            continue
        kept = by_group.setdefault(seed.group, [])
        if any(normalize_text(p) == normalize_text(para) for _, p in kept):
            drops["paraphrase:duplicate"] += 1
            continue
        kept.append((seed, para))
    policy = get_domain(domain).policy
    out: list[Candidate] = []
    for group in sorted(by_group):
        kept = by_group[group]
        if len(kept) < 2:
            drops["paraphrase:unpaired"] += len(kept)
            continue
        for x in range(len(kept)):
            for y in range(x + 1, len(kept)):
                c = _candidate(domain, kept[x][0], kept[x][1], kept[y][0], kept[y][1], spec["id"],
                               ctx.llm.model_snapshot)
                reason = policy(c)
                outcome = verify(c)
                if reason:
                    drops[f"policy:{reason}"] += 1
                elif not outcome.passed:
                    drops[f"verify:{outcome.reason}"] += 1
                else:
                    out.append(c)
    return sorted(out, key=lambda c: c.key), drops, len(seeds)


def qa_factual_lm_rows(ctx: GenContext) -> Iterable[Candidate]:
    """qa_factual PARA_SAFE pairs reworded by the configured model (nothing when ctx.llm is None)."""
    return generate("qa_factual", ctx)[0]


def qa_open_lm_rows(ctx: GenContext) -> Iterable[Candidate]:
    """qa_open PARA_SAFE pairs reworded by the configured model (nothing when ctx.llm is None)."""
    return generate("qa_open", ctx)[0]
