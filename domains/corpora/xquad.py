"""existing_benchmark rows from XQuAD parallel questions: the mapping "xquad" (MAPPINGS; a domain's
spec names it with its shares, domains/corpora/feeds.py: the project's multilingual domain, after
"paws_x").

XQuAD mapping (translated_exact_match with each language's answers):
- the English question and its translation (same XQuAD id) -> ADVERSARIAL: the same request in
  another language, near-identical for a multilingual embedder, but a cached answer would come in
  the wrong language (the multilingual domain's convention for translations, see
  domains/multilingual.py). The verifier confirms the MISS by the language difference.
- two questions on the same paragraph, same language, whose answer sets share no form ->
  RELATED_UNSAFE (same passage, another question). Not in English: a multilingual pair needs a
  non-English side (domains/multilingual.py), so English passages give only the cross-language
  pairs above (counted as `english_only_pair`).

Each side carries its passage (in its own language) as an earlier user turn in context_a /
context_b: XQuAD questions are written against the passage ("the university", "the Far East
collections"), so without it a question is underspecified and its answer span unrecoverable.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Mapping

from domains.base import Candidate, GenContext, normalize_text
from domains.corpora.common import make, pick, records

GROUNDING = {
    "ADVERSARIAL": "Users share a passage and ask the same question about it in two languages; each expects an answer in their own.",
    "RELATED_UNSAFE": "Two users share the same passage and ask different questions about it.",
}


def _cand(ctx: GenContext, label: str, a, b, why: str) -> Candidate:
    payload = {"lang_a": a.language, "lang_b": b.language, "aliases_a": list(a.answers), "aliases_b": list(b.answers)}
    return make(
        ctx, method="existing_benchmark", label=label, subcategory=f"xquad_{a.language}_{b.language}",
        query_a=a.question, query_b=b.question, answer_a=a.answers[0], answer_b=b.answers[0], rationale=why,
        verification_method="translated_exact_match", payload=payload, source="xquad", licence=a.licence,
        grounding=GROUNDING[label],
        source_file=a.source_file if a.source_file == b.source_file else f"{a.source_file}|{b.source_file}",
        source_record=f"{a.split}/{a.record_id}|{b.split}/{b.record_id}", original_label="parallel_id" if
        label == "ADVERSARIAL" else "same_context", template_id=f"xquad:{label}", generator="xquad",
        context_a=passage(a), context_b=passage(b))


def passage(r) -> tuple[dict[str, str], ...]:
    """The question's passage as the earlier user turn it was asked about."""
    return ({"role": "user", "content": " ".join(r.context.split())},)


def xquad_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                  drops: Counter) -> list[Candidate]:
    """XQuAD cross-language and same-passage pairs (mapping in the module docstring)."""
    recs = records(ctx, "xquad")
    by_id: dict[str, dict[str, object]] = defaultdict(dict)
    by_context: dict[tuple[str, str], list] = defaultdict(list)
    for r in recs:
        by_id[r.parallel_id][r.language] = r
        by_context[(r.language, r.context or "")].append(r)
    pools: dict[str, list[Candidate]] = defaultdict(list)
    for pid in sorted(by_id):
        langs = by_id[pid]
        others = sorted(l for l in langs if l != "en")
        if "en" not in langs or not others:
            drops["no_parallel_translation"] += 1
            continue
        if not all((langs[l].context or "").strip() for l in langs):
            drops["no_passage"] += 1
            continue
        other = others[ctx.rng("xquad", pid).randrange(len(others))]
        pools["ADVERSARIAL"].append(_cand(ctx, "ADVERSARIAL", langs["en"], langs[other],
                                          f"XQuAD {pid}: the same question in en and {other}."))
    for key in sorted(by_context, key=lambda k: (k[0], k[1])):
        if not key[1].strip():
            drops["no_passage"] += len(by_context[key])
            continue
        if key[0] == "en":
            drops["english_only_pair"] += len(by_context[key]) // 2
            continue
        qs = sorted(by_context[key], key=lambda r: r.record_id)
        for a, b in zip(qs[0::2], qs[1::2]):
            if {normalize_text(x) for x in a.answers} & {normalize_text(x) for x in b.answers}:
                drops["same_passage_answers_overlap"] += 1
                continue
            pools["RELATED_UNSAFE"].append(_cand(ctx, "RELATED_UNSAFE", a, b,
                                                 "Two questions on one XQuAD passage with different answers."))
    return pick(ctx, "xquad", pools, shares, drops, used)


MAPPINGS = {"xquad": xquad_mapping}
