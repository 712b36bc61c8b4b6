"""existing_benchmark rows from paraphrase benchmarks (QQP; PAWS, PAWS-X, MRPC unfed) and AmbigNQ.

Mappings "qqp", "paws", "mrpc", "paws_x" and "ambigqa" (MAPPINGS; a domain's spec names the ones
that feed it and their shares, domains/corpora/feeds.py). Rows must be requests people send, so
only the question corpora feed a domain: QQP (qa_open) and AmbigNQ (qa_factual). PAWS, PAWS-X and
MRPC hold declarative encyclopedia and news sentences ("The FDA said ..."), which nobody sends to
an assistant as they are; no domain feeds them (an earlier build wrapped them in "Fact-check this
news claim: ..." requests, which made templates of them). Their mappings stay registered, with
their guards and tests, for a domain whose requests are statements. The benchmark's label is kept
in provenance.original_label:
- QQP (-> qa_open: Quora questions are mostly advice and opinion questions with no single factual
  answer): is_duplicate=1 -> PARA_SAFE (EQUIV when the texts differ only in case, spacing or
  punctuation); is_duplicate=0 with word overlap >= HIGH -> ADVERSARIAL; is_duplicate=0 with
  overlap < LOW -> RELATED_UNSAFE (GLUE's negatives were drawn from related questions, so "same
  topic, other answer"); overlap in [LOW, HIGH) is left out as undecided.
- PAWS and PAWS-X German (both sides German): label 1 -> PARA_SAFE; label 0 with overlap >= HIGH
  -> ADVERSARIAL (PAWS negatives are word-swap pairs whose meaning changed); label 0 with lower
  overlap is left out (the rule does not decide it).
- MRPC (news sentences): 1 -> PARA_SAFE; 0 -> ADVERSARIAL when overlap >= HIGH, RELATED_UNSAFE when
  < LOW (MRPC pairs are from the same news story), otherwise left out.
- AmbigNQ (-> qa_factual): a question whose readings have different answers gives RELATED_UNSAFE
  pairs between two of its disambiguated questions whose answer sets share no form; a
  disambiguated question that the annotators wrote in several wordings ("When was women's soccer
  first added in the Olympics?|When was women's soccer first introduced in the Olympics?", one
  answer set) gives a PARA_SAFE pair of two wordings that pass `duplicate_question_guard`.

Guards, because an annotation of "same" or "different" is not answer (in)equivalence: about half
the PARA_SAFE rows taken on the label alone were wrong (other numbers, an added constraint), and
some QQP negatives are plain rewordings (label noise).
- QQP and AmbigNQ wordings: PARA_SAFE only when `duplicate_question_guard`
  (domains.corpora.duplicates) passes: the answer-determining-token rule rather than the same
  words (same numbers, names, negation, scope, polarity, question type and person; no added
  modifier; swaps only of synonyms or inflections).
- PAWS, PAWS-X, MRPC: PARA_SAFE only when `paraphrase_guard` passes: same numbers, same named
  entities, no constraint word on one side only, the same content words up to spelling (PAWS and
  PAWS-X: also in the same order, as their pairs come from word swaps).
- ADVERSARIAL only when `miss_difference` names an answer-determining difference (a number, a
  named entity, a language, a direction word, two names trading places); otherwise dropped.
- RELATED_UNSAFE only when the two texts share a content word ("same topic"); otherwise dropped.
- AmbigNQ: a disambiguated question that joins several variants with "|" is not a RELATED_UNSAFE
  side (the variants can be different questions: "... American football?|... Association
  football?", which the guard tells apart for PARA_SAFE), nor one that asks for a list or whose
  answers are not aliases of one answer (a list of towns given as alternatives would be cut to
  one of them).

Verification: AmbigNQ has answers, so alias_exact_match (a PARA_SAFE pair: the one answer set on
both sides). The paraphrase benchmarks have no answers; their label's evidence is the benchmark's
human annotation. No new verifier is allowed, so they use `rubric`, with criteria that state the
annotation honestly: a HIT pair gets one rubric for both sides ("an answer to <text a>", "serves
the other wording unchanged", the annotation); a MISS pair gets a rubric per side naming its own
request and that it must not answer the other one. The rubric verifier then confirms that the
rubrics agree exactly for HIT labels and differ for MISS labels; the payload also records
`benchmark`, `benchmark_label` and `word_overlap`, so a reviewer sees the evidence. ADVERSARIAL
here is a benchmark's own near-miss, not an operator output (BENCHMARK.md reserves operators for
the embedded default).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Mapping

from domains.base import Candidate, GenContext, normalize_text
from domains.corpora.common import (content_stems, make, miss_difference, overlap, paraphrase_guard, pick, records,
                                    words)
from domains.corpora.duplicates import duplicate_question_guard

HIGH = 0.6   # word-set Jaccard at or above which a non-paraphrase counts as a near-miss
LOW = 0.5    # below this a non-paraphrase counts as merely related
MAX_CHARS = 300  # longer texts are documents, not cache queries

FIELD = {"qqp": "is_duplicate", "paws": "label", "paws_x": "label", "mrpc": "Quality"}
GROUNDING = {
    "EQUIV": "Two users post the same question to a Q&A site, differing only in case or punctuation.",
    "PARA_SAFE": "Two wordings that the benchmark's human annotators judged to mean the same thing.",
    "RELATED_UNSAFE": "Two texts on the same topic that the benchmark's annotators judged to mean different things.",
    "ADVERSARIAL": "Two texts sharing nearly all their words that the benchmark's annotators judged to differ in meaning.",
}


def decide(corpus: str, label01: int, text_a: str, text_b: str) -> tuple[str | None, str]:
    """(5-class label, "" or for ADVERSARIAL the answer-determining difference) for one annotated
    pair under the mapping and guards above, or (None, drop reason)."""
    if normalize_text(text_a) == normalize_text(text_b):
        return ("EQUIV", "") if label01 == 1 else (None, "identical_text_annotated_different")
    german = corpus == "paws_x"
    if label01 == 1:
        if corpus == "qqp":
            why = duplicate_question_guard(text_a, text_b)
            return ("PARA_SAFE", "") if why is None else (None, f"duplicate_question_guard:{why}")
        why = paraphrase_guard(text_a, text_b, german=german, keep_order=corpus in ("paws", "paws_x"))
        return ("PARA_SAFE", "") if why is None else (None, f"paraphrase_guard:{why}")
    ov = overlap(text_a, text_b)
    if ov >= HIGH:
        kind = miss_difference(text_a, text_b, german=german)
        return ("ADVERSARIAL", kind) if kind else (None, "near_miss_without_answer_determining_difference")
    if corpus in ("paws", "paws_x"):
        return None, "label0_low_overlap_undecided"
    if ov < LOW:
        if not content_stems(text_a) & content_stems(text_b):
            return None, "non_paraphrase_shares_no_content_word"   # another topic, not RELATED
        return "RELATED_UNSAFE", ""
    return None, "overlap_between_bands"


def _rubric(corpus: str, label: str, orig: int, a: str, b: str) -> tuple[list[str], list[str]]:
    note = f"{corpus} human annotation {FIELD[corpus]}={orig}"
    if label in ("EQUIV", "PARA_SAFE"):
        crit = [f"is an answer to: {a}", "serves the other wording unchanged", note]
        return crit, list(crit)
    return ([f"is an answer to: {a}", f"is not an answer to: {b}", note],
            [f"is an answer to: {b}", f"is not an answer to: {a}", note])


def _pair_pool(ctx: GenContext, corpus: str, drops: Counter, language: str | None = None) -> dict[str, list[Candidate]]:
    pools: dict[str, list[Candidate]] = {}
    for r in records(ctx, corpus):
        if language is not None and r.language != language:
            drops["other_language"] += 1
            continue
        sa, sb = " ".join(r.text_a.split()), " ".join(r.text_b.split())
        if max(len(sa), len(sb)) > MAX_CHARS:
            drops["text_too_long"] += 1
            continue
        label, why = decide(corpus, r.label, sa, sb)
        if label is None:
            drops[why] += 1
            continue
        a, b = sa, sb
        kind = f"; the texts differ in an answer-determining way ({why.replace('_', ' ')})" if why else ""
        crit_a, crit_b = _rubric(corpus, label, r.label, a, b)
        hit = label in ("EQUIV", "PARA_SAFE")
        payload = {"criteria_a": crit_a, "criteria_b": crit_b, "benchmark": corpus,
                   "benchmark_label": r.label, "word_overlap": round(overlap(sa, sb), 3)}
        if why:
            payload["difference"] = why
        sub = f"{corpus}_{'paraphrase' if hit else 'non_paraphrase'}"
        pools.setdefault(label, []).append(make(
            ctx, method="existing_benchmark", label=label, subcategory=sub, query_a=a, query_b=b,
            answer_a=f"An answer to: {a}", answer_b=f"An answer to: {a if hit else b}",
            rationale=f"{corpus} annotators labelled this pair {FIELD[corpus]}={r.label}; mapped to {label} "
                      f"(word overlap {payload['word_overlap']}){kind}.",
            verification_method="rubric", payload=payload, source=corpus, licence=r.licence,
            grounding=GROUNDING[label], source_file=r.source_file,
            source_record=f"{r.split}/{r.record_id}", original_label=r.label,
            template_id=f"{corpus}:{label}", generator=corpus))
    return pools


def _pairs(corpus: str):
    """The mapping of a paraphrase benchmark (QQP, PAWS, MRPC): its pick is named after the feed
    ("paws_mrpc/paws"), so two benchmarks feeding one domain draw apart."""
    def mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str], drops: Counter) -> list[Candidate]:
        return pick(ctx, f"{feed}/{corpus}", _pair_pool(ctx, corpus, drops), shares, drops, used)
    mapping.__name__ = f"{corpus}_mapping"
    return mapping


def paws_x_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                   drops: Counter) -> list[Candidate]:
    """PAWS-X German pairs (both sides German, so within-language labels)."""
    return pick(ctx, "paws_x", _pair_pool(ctx, "paws_x", drops, "de"), shares, drops, used)


_LIST_QUESTION = re.compile(r"^(what|which|who)\s+(are|were)\b|\b(list|name all|name the|all the|members|"
                            r"towns|cities|countries|states|players|songs|episodes|books|films|movies|albums|"
                            r"teams|winners|characters|cast|names|ones)\b", re.IGNORECASE)


def _disambiguation_problem(question: str, answers: tuple[str, ...]) -> str | None:
    """Why an AmbigNQ disambiguated question cannot be a row side, or None.

    - several variants joined by "|": the variants can be different questions (American vs
      Association football), so no single one of them owns the answer set;
    - a list question ("what are the towns surrounding ..."): the annotation lists the items as
      separate answers, and alias matching would take one item for the whole answer;
    - answers that are not aliases of one answer (no content word shared with the first, and not
      containing it: "Jim Bottomley" and "Mark Whiten"): the same list problem without a plural cue.
    """
    if not answers or not question.strip():
        return "disambiguation_without_answer"
    if "|" in question:
        return "disambiguation_joins_variants"
    ws = words(question)
    if len(ws) >= 8 and " ".join(ws[:4]) in " ".join(ws[4:]):
        return "disambiguation_garbled_repeat"     # "How many cars fit on the How many cars fit on the ..."
    if _LIST_QUESTION.search(question):
        return "disambiguation_asks_for_a_list"
    first = set(words(answers[0]))
    for other in answers[1:]:
        ow = set(words(other))
        if not (first & ow) and not (normalize_text(answers[0]) in normalize_text(other)):
            return "disambiguation_answers_not_aliases"
    return None


def ambigqa_mapping(ctx: GenContext, feed: str, shares: Mapping[str, float], used: set[str],
                    drops: Counter) -> list[Candidate]:
    """AmbigNQ: RELATED_UNSAFE pairs between two disambiguations of one ambiguous question whose
    answer sets share no normalised form, and PARA_SAFE pairs of two wordings of one
    disambiguation (`_reworded`), both alias_exact_match."""
    pool: list[Candidate] = []
    para: list[Candidate] = []
    for r in records(ctx, "ambigqa"):
        if not r.ambiguous:
            drops["not_ambiguous"] += 1
            continue
        para += [c for q, ans in r.qa_pairs if "|" in q for c in [_reworded(ctx, r, q, ans, drops)] if c]
        pairs = []
        for q, ans in r.qa_pairs:
            why = _disambiguation_problem(q, ans)
            if why:
                drops[why] += 1
            else:
                pairs.append((q.strip(), ans))
        found = None
        for i in range(len(pairs)):          # first pair in annotation order with disjoint answers
            for j in range(i + 1, len(pairs)):
                fa = {normalize_text(x) for x in pairs[i][1]}
                fb = {normalize_text(x) for x in pairs[j][1]}
                if not fa & fb and normalize_text(pairs[i][0]) != normalize_text(pairs[j][0]):
                    found = (pairs[i], pairs[j])
                    break
            if found:
                break
        if found is None:
            drops["no_disambiguations_with_different_answers"] += 1
            continue
        (qa, aa), (qb, ab) = found
        payload = {"aliases_a": list(aa), "aliases_b": list(ab)}
        pool.append(make(
            ctx, method="existing_benchmark", label="RELATED_UNSAFE", subcategory="ambiguous_question",
            query_a=qa, query_b=qb, answer_a=aa[0], answer_b=ab[0],
            rationale=f"Two readings of the ambiguous question '{r.question}' with different annotated answers.",
            verification_method="alias_exact_match", payload=payload, source="ambigqa", licence=r.licence,
            grounding="An ambiguous factual question whose readings (a date, a title, an edition) have different answers.",
            source_file=r.source_file, source_record=f"{r.split}/{r.record_id}", original_label="multipleQAs",
            template_id="ambigqa:disambiguations", generator="ambigqa"))
    return pick(ctx, "ambigqa", {"PARA_SAFE": para, "RELATED_UNSAFE": pool}, shares, drops, used)


def _reworded(ctx: GenContext, r, joined: str, answers: tuple[str, ...], drops: Counter) -> Candidate | None:
    """The PARA_SAFE candidate of one disambiguated question written in several wordings joined by
    "|": its first two wordings (in annotation order) that `duplicate_question_guard` lets through
    and that are not a list question, with the one answer set on both sides; None (a drop
    counted) when there is none."""
    variants: list[str] = []
    for v in (x.strip() for x in joined.split("|")):
        if v and normalize_text(v) not in {normalize_text(w) for w in variants}:
            variants.append(v)
    problems = [_disambiguation_problem(v, answers) for v in variants]
    if len(variants) < 2:
        problems = ["wordings_differ_only_in_case_or_punctuation"]
    if any(problems):
        drops[f"rewording_{next(p for p in problems if p)}"] += 1
        return None
    reasons: Counter = Counter()
    for i in range(len(variants)):
        for j in range(i + 1, len(variants)):
            why = duplicate_question_guard(variants[i], variants[j])
            if why:
                reasons[why] += 1
                continue
            qa, qb = variants[i], variants[j]
            return make(
                ctx, method="existing_benchmark", label="PARA_SAFE", subcategory="disambiguation_rewording",
                query_a=qa, query_b=qb, answer_a=answers[0], answer_b=answers[0],
                rationale=f"AmbigNQ annotators wrote one reading of '{r.question}' in these two wordings, with one "
                          "answer set; the wordings differ in no answer-determining token.",
                verification_method="alias_exact_match",
                payload={"aliases_a": list(answers), "aliases_b": list(answers)}, source="ambigqa",
                licence=r.licence, grounding="Two wordings of one factual question, written by the annotators of an "
                                             "ambiguous question for one of its readings.",
                source_file=r.source_file, source_record=f"{r.split}/{r.record_id}", original_label="multipleQAs",
                template_id="ambigqa:rewordings", generator="ambigqa")
    drops[f"rewording_duplicate_question_guard:{min(reasons, key=lambda k: (-reasons[k], k))}"] += 1
    return None


MAPPINGS = {"qqp": _pairs("qqp"), "paws": _pairs("paws"), "mrpc": _pairs("mrpc"), "paws_x": paws_x_mapping,
            "ambigqa": ambigqa_mapping}
