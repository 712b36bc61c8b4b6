"""Corpus rows that must read as requests and follow the policies (issue #11, item 8; issue #27):
declarative MRPC/PAWS/PAWS-X sentences feed no domain, MASSIVE/BANKING77 intents that ask for live
information or change state under their no-cache policy, transcripts cut off mid-phrase dropped,
and no English-only XQuAD pair in the multilingual domain. On the fixtures and hand-made records."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from domains.base import GenContext
from domains.corpora import benchmarks, common, intents
from domains.corpora.feeds import corpus_build, mapping_build
from domains.verify import verify
from sources.base import IntentRecord, QARecord

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parents[2] / "sources" / "fixtures"


@pytest.fixture(scope="module")
def fixtures():
    from sources.datasets_dir import DatasetsDir

    return DatasetsDir(FIXTURES)


def ctx(domain, datasets):
    return GenContext(domain=domain, profile="v1.1", need={}, datasets=datasets)


def _massive(rid, locale, text, intent, slots=()):
    return IntentRecord("massive", "train", rid, f"{locale}.jsonl", "CC-BY-4.0", text=text, intent=intent,
                        slots=tuple(slots), locale=locale, parallel_id=rid.split("-")[0], scenario=intent.split("_")[0])


def test_declarative_benchmark_sentences_feed_no_domain(fixtures):
    # 14 of 120 conversational rows of a corpora build were bare news or encyclopedia sentences
    # ("The FDA said ..."), which nobody sends to an assistant; wrapping them in "Fact-check this
    # news claim: ..." made templates of them. PAWS, MRPC and PAWS-X now feed no domain, and the
    # benchmark rows that do come are the questions as people wrote them.
    from domains import all_domains, get_domain

    fed = {m for d in all_domains() for feeds in d.corpus_feeds.values() for f in feeds for m in f.mappings}
    assert not fed & {"paws", "mrpc", "paws_x"} and {"qqp", "ambigqa"} <= fed
    assert not hasattr(benchmarks, "FRAMINGS") and not hasattr(benchmarks, "frame")
    assert corpus_build(ctx("conversational", fixtures), "existing_benchmark") == ([], Counter())
    assert "existing_benchmark" not in get_domain("conversational").generators
    ml, _ = corpus_build(ctx("multilingual", fixtures), "existing_benchmark")
    assert ml and {c.source for c in ml} == {"xquad"}
    questions = {}
    for corpus in ("qqp", "ambigqa"):
        for r in fixtures.load(corpus):
            texts = [r.text_a, r.text_b] if corpus == "qqp" else [r.question] + [q for q, _ in r.qa_pairs]
            questions.update({" ".join(t.split()): corpus for t in texts})
    for domain in ("qa_open", "qa_factual"):
        rows, _ = corpus_build(ctx(domain, fixtures), "existing_benchmark")
        assert rows
        for c in rows:
            assert questions[c.query_a] == questions[c.query_b] == c.source      # verbatim, unframed
            assert not c.provenance.template_id.endswith(":framed") and "fact-check" not in c.real_world_grounding
    # the unfed mappings still run, unframed, for a domain that names them
    paws, _ = mapping_build(ctx("conversational", fixtures), "paws", {"ADVERSARIAL": 0.5})
    assert ("Mara sold the farm to Tomas in 1902 .", "Tomas sold the farm to Mara in 1902 .") in \
        {(c.query_a, c.query_b) for c in paws}


def test_live_and_state_changing_intents_never_hit_and_take_their_policy():
    # A real-corpora build labelled "list all train times to ny" / "list all train time to ny" and
    # "what are the train times for" / "what are the train times" PARA_SAFE (HIT): live information,
    # and an utterance cut off mid-phrase.
    train = [("transport_type", "train"), ("place_name", "leeds")]
    recs = [_massive("1-en", "en-US", "show me train times to leeds", "transport_query", train),
            _massive("2-en", "en-US", "show me the train times to leeds", "transport_query", train),
            _massive("3-en", "en-US", "what are the train times for", "transport_query", train[:1]),
            _massive("4-en", "en-US", "book a train ticket to", "transport_ticket", train[:1]),
            _massive("5-en", "en-US", "how do i make pancakes", "cooking_recipe", [("food_type", "pancakes")]),
            _massive("6-en", "en-US", "how do i make the pancakes", "cooking_recipe", [("food_type", "pancakes")]),
            _massive("7-en", "en-US", "wake me up at seven am", "alarm_set", [("time", "seven am")])]
    d = Counter()
    pools = intents._pools(ctx("conversational", None), recs, d, False)
    assert d["utterance_cut_off"] == 2
    assert common.paraphrase_guard(recs[0].text, recs[1].text) is None    # a paraphrase, but live
    hits = [c for lab in ("EQUIV", "PARA_SAFE") for c in pools[lab]]
    assert [(c.query_a, c.query_b) for c in hits] in ([("how do i make pancakes", "how do i make the pancakes")],
                                                      [("how do i make the pancakes", "how do i make pancakes")])
    misses = [c for lab in ("RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED") for c in pools[lab]]
    assert misses
    for c in hits + misses:
        pair = set(c.provenance.original_label.split("|"))
        reason = "mutation" if "alarm_set" in pair else "time_sensitive" if "transport_query" in pair else None
        assert (c.verification_payload.get("policy") if c.verification_method == "policy_no_cache" else None) == reason
        assert verify(c).passed
    # the multilingual domain holds the same markers (no time word in "wie wird das wetter in berlin")
    de = [_massive("8-de", "de-DE", "wie wird das wetter in berlin", "weather_query", [("place_name", "berlin")]),
          _massive("9-de", "de-DE", "wie mache ich pfannkuchen", "cooking_recipe", [("food_type", "pfannkuchen")])]
    ml = [c for pool in intents._pools(ctx("multilingual", None), de, Counter(), True).values() for c in pool]
    assert ml and all(c.verification_payload["policy"] == "time_sensitive" and verify(c).passed for c in ml)
    # BANKING77: FAQ intents stay cacheable, the live exchange rate does not
    texts = [("How is the exchange rate doing?", "exchange_rate"), ("How's the exchange rate doing?", "exchange_rate"),
             ("How do I top up my card?", "top_up"), ("How can I top up my card?", "top_up")]
    bank = [IntentRecord("banking77", "train", str(i), "train.csv", "CC-BY-4.0", text=t, intent=intent)
            for i, (t, intent) in enumerate(texts)]
    assert common.paraphrase_guard(texts[0][0], texts[1][0]) is None
    pools = intents._pools(ctx("conversational", None), bank, Counter(), False)
    assert {c.provenance.original_label for c in pools["PARA_SAFE"]} == {"top_up|top_up"}
    misses = pools["RELATED_UNSAFE"] + pools["UNRELATED"]
    assert misses and all(c.verification_payload["policy"] == "time_sensitive" for c in misses)


def test_cut_off_transcripts():
    for text in ("what are the train times for", "book a plane ticket to", "remind me at", "current time in",
                 "tell me the recipe of", "play me some from the"):
        assert common.cut_off(text), text
    for text in ("turn the lights on", "what is the weather like", "remind me a week before", "events near by",
                 "what are the train times to chicago"):
        assert not common.cut_off(text), text


class _Datasets:
    """A datasets dir holding given records (weak-referenceable, as common.records needs)."""

    def __init__(self, **corpora):
        self.corpora = corpora

    def load(self, corpus):
        return iter(self.corpora.get(corpus, []))


def test_xquad_pairs_have_a_non_english_side(fixtures):
    # A multilingual pair needs a non-English side: two English questions on one passage are what
    # the qa domains cover, so only the German pair on the German passage is RELATED_UNSAFE (no
    # parallel ids here, so no cross-language pair takes the texts first).
    passages = {"en": "The Tessa is 240 metres long and was bridged in 1850.",
                "de": "Die Tessa ist 240 Meter lang und wurde 1850 überbrückt."}
    questions = {"en": ("How long is the Tessa?", "When was the Tessa bridged?"),
                 "de": ("Wie lang ist die Tessa?", "Wann wurde die Tessa überbrückt?")}
    answers = {"en": (("240 metres",), ("1850",)), "de": (("240 Meter",), ("1850",))}
    recs = [QARecord("xquad", lang, f"q{i}", f"xquad.{lang}.json", "CC-BY-SA-4.0", question=questions[lang][i],
                     answers=answers[lang][i], language=lang, parallel_id=f"{lang}{i}", context=passages[lang])
            for lang in ("en", "de") for i in range(2)]
    cands, drops = mapping_build(ctx("multilingual", _Datasets(xquad=recs)), "xquad")
    related = [(c.query_a, c.query_b) for c in cands if c.label == "RELATED_UNSAFE"]
    assert related == [("Wie lang ist die Tessa?", "Wann wurde die Tessa überbrückt?")]
    assert drops["english_only_pair"] == 1
    cands, _ = mapping_build(ctx("multilingual", fixtures), "xquad")
    langs = [(c.verification_payload["lang_a"], c.verification_payload["lang_b"]) for c in cands]
    assert langs and ("en", "en") not in langs
