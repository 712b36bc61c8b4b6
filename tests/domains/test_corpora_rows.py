"""Corpus generators (domains/corpora): each mapping on the fixtures, the embedded default
unchanged, every generator's rows verified on the real corpora, and --commercial-only."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from domains import get_domain
from domains.base import GenContext
from domains.base import normalize_text
from domains.corpora import benchmarks, bfcl, common, intents, licences, slot_values
from domains.corpora.feeds import corpus_build, mapping_build
from sources.base import IntentRecord, ToolRecord
from domains.verify import verify

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parents[2] / "sources" / "fixtures"
REAL = Path("/work/shared/datasets")
# (domain, corpus method): the corpus feeds each domain's spec declares (domains/corpora/feeds.py)
BUILDS = [("qa_factual", "existing_benchmark"), ("qa_open", "existing_benchmark"),
          ("conversational", "intent_bottom_up"),
          ("multilingual", "intent_bottom_up"), ("multilingual", "existing_benchmark"),
          ("tool", "existing_benchmark")]


@pytest.fixture(scope="module")
def fixtures():
    from sources.datasets_dir import DatasetsDir

    return DatasetsDir(FIXTURES)


def ctx(domain, datasets, need=None):
    return GenContext(domain=domain, profile="v1.1", need=need or {}, datasets=datasets)


def by_record(cands):
    return {c.provenance.source_record: c for c in cands}


def test_embedded_default_unchanged():
    for domain, method in BUILDS:
        assert corpus_build(ctx(domain, None), method) == ([], Counter())
    for domain in ("qa_factual", "qa_open", "conversational", "multilingual", "tool"):
        gens = get_domain(domain).generators
        corpus = [m for m in gens if m in ("existing_benchmark",) or (m == "intent_bottom_up" and domain != "tool")]
        assert corpus and all(list(gens[m](ctx(domain, None))) == [] for m in corpus)


def test_every_fixture_row_verifies_and_is_documented(fixtures):
    for domain, method in BUILDS:
        cands, _ = corpus_build(ctx(domain, fixtures), method)
        assert cands, (domain, method)
        for c in cands:
            assert verify(c).passed, (c.query_a, c.query_b, verify(c))
            assert c.licence == licences.LICENCES[c.source][0]  # the loader's licence, word for word
            assert c.provenance.source_file and c.provenance.source_record and c.provenance.original_label is not None


def test_qqp_mapping(fixtures):
    cands, drops = corpus_build(ctx("qa_open", fixtures), "existing_benchmark")
    labels = {(c.query_a, c.query_b): (c.label, c.provenance.original_label) for c in cands}
    # is_duplicate=1 but other words ("bad" vs "harm"): not a provable paraphrase, left out
    assert ("Is coffee bad for your heart?", "Does drinking coffee harm the heart?") not in labels
    # is_duplicate=0, "capital" vs "population": another attribute, no answer-determining token
    assert ("What is the capital of Peru?", "What is the population of Peru?") not in labels
    assert labels[("How do I bake sourdough bread?", "How long does bread dough need to rise?")] == ("RELATED_UNSAFE", 0)
    assert drops["near_miss_without_answer_determining_difference"] >= 1
    for c in cands:
        assert c.verification_method == "rubric" and c.verification_payload["benchmark_label"] == c.provenance.original_label
        assert (c.label in ("PARA_SAFE", "EQUIV")) == (c.provenance.original_label == 1)


def test_decide_rules():
    assert benchmarks.decide("qqp", 1, "How do I learn Python?", "How can I learn Python?") == ("PARA_SAFE", "")
    assert benchmarks.decide("qqp", 1, "How do I learn Python?", "What is the best way to learn Python?")[0] is None
    assert benchmarks.decide("qqp", 0, "How do I learn Python?", "How do I learn Java?") == ("ADVERSARIAL", "language_swap")
    assert benchmarks.decide("qqp", 0, "How do I learn Python programming?", "Why is Python slow at runtime?")[0] == "RELATED_UNSAFE"
    # no content word shared: another topic, not "related" (audit cb-qa_open-0124)
    assert benchmarks.decide("qqp", 0, "Which fast food chains hire 15 year olds?",
                             "Have you ever told people you no longer want to be friends?") == (None, "non_paraphrase_shares_no_content_word")
    assert benchmarks.decide("paws", 0, "Cats chase dogs in parks.", "Why is the sky blue at noon?") == (None, "label0_low_overlap_undecided")
    assert benchmarks.decide("mrpc", 0, "Tom sold the farm to Mara.", "Mara sold the farm to Tom.") == ("ADVERSARIAL", "role_swap")
    assert benchmarks.decide("qqp", 1, "how do i learn python", "How do I learn Python?")[0] == "EQUIV"


# PARA_SAFE rows of a real-corpora build that the audit found wrong or doubtful (upstream said "same").
AUDITED_NOT_PARAPHRASES = [
    ("qqp", "Can India win 30 gold medals in forthcoming Olympics?", "Can India win 10 gold medals in 2020?"),
    ("qqp", "How do I post a question in Quora?", "How do I write a post Quora?"),
    ("qqp", "What is the biggest obstacle you have had to overcome in order to reach your goal?",
     "What are some of the biggest hurdles that you had to overcome in order to become a writer?"),
    ("qqp", "Who would win in a war between Russia and the US?", "Who would win in a nuclear war between US and Russia?"),
    ("qqp", "Can we definitively state that there is a higher education bubble, and if so, should we expect it to burst?",
     "If higher education is a bubble, when will it burst?"),
    ("qqp", "What's your favourite colour?", "What is your favourite colour and why?"),
    ("qqp", "How can I improve my English pronunciation?",
     "How can I improve my fluency in English to face a more confortable job interview?"),
    ("qqp", "How can I come out of my comfort zone?", "What does one's own comfort zone mean? How do I come out of it?"),
    ("qqp", "Can I work on Facebook from my home?", "How can I work for Facebook from home?"),
    ("qqp", "Is Hillary Clinton going to go to jail?", "Why is Hillary Clinton not in jail after all the allegations of crimes?"),
    ("qqp", "How could I improve my English pronunciation?", "How can I improve fluency in English?"),
    ("qqp", "Did matter exist before the big bang?", "Did the void exist before the Big Bang?"),
    ("qqp", "How do I use a small hay grinder?", "What is a small hay grinder used for?"),
    ("mrpc", "Median household income declined 1.1 percent between 2001 and 2002 to $42,409.",
     "The median household earned income fell $500 over the same period to $42,400."),
    ("mrpc", '"We have found the smoking gun," board member Scott Hubbard said.',
     '"We have found the smoking gun," said Hubbard, director of NASA\'s Ames Research Center in California.'),
    ("mrpc", '"Just as before, it will be up to the council to decide the direction and the timing of the process."',
     "Just as before, it will be up to the Council to decide the direction and process."),
    ("mrpc", '"This will put a severe crimp in our reserves," O\'Keefe said Friday during a roundtable discussion with '
             "reporters at NASA headquarters.",
     '"This is going to put a severe crimp in our reserves," O\'Keefe said during a breakfast with reporters.'),
    ("mrpc", "He was charged with attempting to provide material support and resources to terrorists, and dealing arms "
             "without a licence.",
     "Lakhani, 68, is charged with attempting to provide material support and resources to terrorists and acting as "
     "an arms broker without a license."),
    ("paws", "When Seema and Man Mohini Vijay find themselves dancing with the same necklace and when Seema has been "
             "arrested , Rajesh comes and confesses the guilty .",
     "When Seema and Man Mohini finds Vijay dancing with the same necklace and when Seema has been arrested , Rajesh "
     "comes and confesses the guilty ."),
    ("paws", "Another member of the group was Sir George Throckmorton , whose sister married Thomas Giffard .",
     "Another member of the group was Sir George Throckmorton , whose sister Thomas Giffard was married ."),
    ("banking77", "Top up on my Google Pay isn't working.", "where do I top up my google pay?"),
    ("banking77", "Can I automatically top-up when traveling?", "How can I Use thereto-top option?"),
    ("banking77", "I would like to make sure it is delivered on a certain date.", "How quickly can you get me my card?"),
    ("banking77", "What's the closest place to withdraw money?", "How do I withdraw money?"),
    ("banking77", "Is it possible for me to change my PIN number?", "Can I change my PIN on my phone?"),
    ("massive", "healthy foods", "can you suggest me a healthy foods for dinner"),
    ("massive", "what is good way to cook eggs", "how do you make sunny side up eggs"),
    ("massive", "switch to eastern time zone", "if i was in the eastern time zone what time would it be"),
    ("massive", "train times", "can i find the cheapest train ticket for this destination"),
    ("massive", "how to barbecue a steak well", "give me the recipe of steak"),
    ("massive", "what i can do with laptop", "what is laptop"),
    ("bfcl", "Help find a housekeeper who provides ironing services.",
     "ฉันต้องการรหัสบริการสำหรับบริการรีดผ้า, คุณช่วยหามาให้ฉันได้ไหม?"),
    ("bfcl", "Can you find me a Family Counselor in Los Gatos?",
     "I'm in Los Gatos, CA, and I'm looking for a family counselor. Find one for me, preferably one who accepts insurance?"),
    ("bfcl", "Find a music event in Portland that's happening sometime?",
     "I'm interested in attending a music event in Portland, OR. Can you locate any concerts happening there this weekend?"),
]


FIELD_CORPORA = ("qqp", "mrpc", "paws")   # corpora whose label-1 pairs go through benchmarks.decide


@pytest.mark.parametrize("corpus,a,b", AUDITED_NOT_PARAPHRASES)
def test_paraphrase_guard_rejects_audited_pairs(corpus, a, b):
    keep_order = corpus in ("paws", "paws_x")
    assert common.paraphrase_guard(a, b, keep_order=keep_order) is not None
    if corpus in FIELD_CORPORA:
        assert benchmarks.decide(corpus, 1, a, b)[0] is None



def test_paraphrase_guard_accepts_surface_rewordings():
    for a, b in [("How do I quit smoking?", "How can I quit smoking?"),
                 ("Do I lose page rank if adding many internal links to a page?",
                  "Do I lose page ranke if adding many internal links to a page?"),
                 ("Are you against the two party political system?", "Are you against the 2 party political system?"),
                 ("What is gravity's effect on time?", "What is the effect of gravity on time?"),
                 ("Why have I been charged twice for the same transaction?", "Why was I charged twice for the same transaction?")]:
        assert common.paraphrase_guard(a, b) is None, (a, b)


def test_qqp_label_noise_is_not_adversarial():
    # QQP is_duplicate=0 with high overlap but no answer-determining change (audit cb-qa_open-0204/0206/0208)
    for a, b in [("Which universities for MS in CS should I apply to?", "Which universities should I apply for MS in CS?"),
                 ("What is the best life insurance policy for my requirement?", "What is the best life insurance policy for me?"),
                 ("Have you ever seen anyone naked unintentionally?", "Have you ever seen anyone anywhere naked accidentally?"),
                 ("Who would win in a war between Russia and US?", "Who would win in a war between US and Russia?"),
                 ("alongside the US military in Iraq", "alongside the U.S. military in Iraq")]:
        assert common.miss_difference(a, b) is None, (a, b)
        assert benchmarks.decide("qqp", 0, a, b)[0] is None
    assert common.miss_difference("Can India win 30 gold medals?", "Can India win 10 gold medals?") == "number_change"
    assert common.miss_difference("Das Set bestand aus einem grünen Trikot mit blauem Kragen.",
                                  "Das Trikot bestand aus einem grünen Oberteil mit blauem Kragen.", german=True) is None
    assert common.miss_difference("2009 zog er nach Philadelphia und lebt heute in New York City.",
                                  "2009 zog er nach New York City und lebt heute in Philadelphia.", german=True) == "role_swap"


def test_ambignq_disambiguation_rules():
    # several variants joined by "|" (cb-qa_factual-0107), list questions (0108), list-like answers
    assert benchmarks._disambiguation_problem("When was the 16th amendment ratified?|When was the 16th amendment "
                                              "ratified in the US?", ("1913",)) == "disambiguation_joins_variants"
    assert benchmarks._disambiguation_problem("What are the towns surrounding Las Vegas?",
                                              ("Paradise", "Enterprise")) == "disambiguation_asks_for_a_list"
    assert benchmarks._disambiguation_problem("Who has the most rbis in a single game?",
                                              ("Jim Bottomley", "Mark Whiten")) == "disambiguation_answers_not_aliases"
    assert benchmarks._disambiguation_problem("Where were the 2006 Winter Olympics held?", ("Turin", "Turin, Italy")) is None


# PAWS, MRPC and PAWS-X feed no domain (declarative sentences); their mappings run with explicit shares.
UNFED_SHARES = {"PARA_SAFE": 0.25, "RELATED_UNSAFE": 0.15, "ADVERSARIAL": 0.25}


def unfed(fixtures, corpus, domain="conversational"):
    return mapping_build(ctx(domain, fixtures), corpus, UNFED_SHARES)[0]


def test_paws_mrpc_and_paws_x_mapping(fixtures):
    conv = unfed(fixtures, "paws") + unfed(fixtures, "mrpc")
    assert {c.source for c in conv} == {"paws", "mrpc"}
    adv = [c for c in conv if c.label == "ADVERSARIAL"]
    assert adv and all(c.provenance.original_label == 0 and c.verification_payload["word_overlap"] >= benchmarks.HIGH for c in adv)
    ml = unfed(fixtures, "paws_x", "multilingual")
    assert ml and {c.label for c in ml} <= {"PARA_SAFE", "ADVERSARIAL", "EQUIV"} and {c.source for c in ml} == {"paws_x"}


def test_ambignq_mapping(fixtures):
    cands, _ = corpus_build(ctx("qa_factual", fixtures), "existing_benchmark")
    rows = {(c.query_a, c.query_b): c for c in cands}
    c = rows[("Who won the 1998 village chess cup, men's title?", "Who won the 1998 village chess cup, women's title?")]
    assert c.label == "RELATED_UNSAFE" and c.verification_method == "alias_exact_match"
    assert c.verification_payload == {"aliases_a": ["Tom Reyes"], "aliases_b": ["Ada Lin", "A. Lin"]}
    # a pair claimed HIT with these answers must fail the verifier
    assert not verify(c.with_(label="PARA_SAFE")).passed


def test_intent_mapping_from_canonical_frames(fixtures):
    cands, _ = corpus_build(ctx("conversational", fixtures), "intent_bottom_up")
    assert cands
    for c in cands:
        fa, fb = json.loads(c.expected_answer_a), json.loads(c.expected_answer_b)
        if c.label in ("PARA_SAFE", "EQUIV"):
            assert fa == fb
        elif c.label == "UNRELATED":
            assert fa["intent"] != fb["intent"]
        elif c.label == "ADVERSARIAL":
            assert fa["intent"] == fb["intent"] and fa["slots"].keys() == fb["slots"].keys()
            assert sum(fa["slots"][k] != fb["slots"][k] for k in fa["slots"]) == 1


def test_no_committed_slot_change_is_one_a_reader_took_for_none():
    # Every one-slot change in the committed extract (what the build's intent rows come from) names two
    # things, by the frame the label was decided from: no pair of slot_values.SAME_VALUE's families is left in it.
    from domains.corpora import extract as ex
    from pipeline.core.paths import EXTRACT

    changes = 0
    for c in ex.parse(EXTRACT.read_bytes(), str(EXTRACT)).candidates:
        if c.construction_method != "intent_bottom_up" or c.label not in ("ADVERSARIAL", "RELATED_UNSAFE"):
            continue
        change = slot_values.changed_slot(c)  # None: another intent, or a localised translation
        if change is None:
            continue
        changes += 1
        assert not slot_values.same_value(*change), (c.query_a, c.query_b)
    assert changes > 50


def test_slot_values_and_massive_cross_language(fixtures):
    assert not intents.clearly_different("seven am", "7 am")
    assert not intents.clearly_different("paris", "paris france")
    assert intents.clearly_different("seven am", "eight am")
    assert slot_values.same_value("order_type", "take-out", "takeaway") and slot_values.same_value("player_setting", "resume", "continue")
    assert not slot_values.same_value("order_type", "takeaway", "delivery") and not slot_values.same_value("place_name", "dunia", "nairobi")
    assert not slot_values.same_value("date", "resume", "continue")  # a family holds for its slot only
    ml, drops = corpus_build(ctx("multilingual", fixtures), "intent_bottom_up")
    assert drops["translation_without_localised_value"] > 0
    cross = [c for c in ml if c.verification_payload.get("lang_a", c.verification_payload.get("underlying_payload", {}).get("lang_a")) == "en"]
    for c in cross:   # a cross-language MISS row must name a changed value, never an identical frame
        assert c.label == "ADVERSARIAL" and c.expected_answer_a != c.expected_answer_b and "localised" in c.rationale


def _massive(rid, locale, text, intent, slots=()):
    return IntentRecord("massive", "train", rid, f"{locale}.jsonl", "CC-BY-4.0", text=text, intent=intent,
                        slots=tuple(slots), locale=locale, parallel_id=rid.split("-")[0], scenario=intent.split("_")[0])


class FakeDatasets:
    """A datasets dir holding given records (weak-referenceable, as common.records needs)."""

    def __init__(self, **corpora):
        self.corpora = corpora

    def load(self, corpus):
        return iter(self.corpora.get(corpus, []))


def test_massive_cross_language_only_localised_names():
    recs = [_massive("1-en", "en-US", "turn the volume up", "audio_volume_up"),
            _massive("1-de", "de-DE", "mach lauter", "audio_volume_up"),
            _massive("2-en", "en-US", "what time is it in new york", "datetime_query", [("place_name", "new york")]),
            _massive("2-de", "de-DE", "wie spät ist es in berlin", "datetime_query", [("place_name", "berlin")]),
            _massive("3-en", "en-US", "turn on the kitchen lights", "iot_hue_lighton", [("house_place", "kitchen")]),
            _massive("3-de", "de-DE", "mach das licht in der küche an", "iot_hue_lighton", [("house_place", "küche")]),
            _massive("4-en", "en-US", "any news from america", "news_query", [("place_name", "america")]),
            _massive("4-de", "de-DE", "nachrichten aus amerika", "news_query", [("place_name", "amerika")]),
            _massive("4-sw", "sw-KE", "habari kutoka marekani", "news_query", [("place_name", "marekani")])]
    cands, drops = corpus_build(ctx("multilingual", FakeDatasets(massive=recs)), "intent_bottom_up")
    cross = {(c.query_a, c.query_b): c for c in cands if c.label == "ADVERSARIAL"}
    assert set(cross) == {("what time is it in new york", "wie spät ist es in berlin")}
    assert "'new york' to 'berlin'" in cross[("what time is it in new york", "wie spät ist es in berlin")].rationale
    assert drops["translation_without_localised_value"] == 4   # volume, kitchen, america in de and in sw


def test_banking77_agent_replies_and_cut_off_records_are_not_used():
    assert not common.request_form("Transfers may show up as pending for up to one day before they complete.")
    assert common.request_form("Top up on my Google Pay isn't working.") and common.request_form("How do I top up?")
    assert common.unfinished("I want to watch something with Bruce Willis in it. Can you")
    assert not common.unfinished("I didn't get all the cash I asked for")
    recs = [IntentRecord("banking77", "train", str(i), "train.csv", "CC-BY-4.0", text=t, intent=intent)
            for i, (t, intent) in enumerate([
                ("How do I top up my card?", "top_up"), ("How can I top up my card?", "top_up"),
                ("Transfers may show up as pending for up to one day.", "top_up"),
                ("Top up on my Google Pay isn't working.", "top_up"), ("I want to top up with my", "top_up")])]
    d = Counter()
    pools = intents._pools(ctx("conversational", None), recs, d, False)
    assert d["utterance_not_a_request"] == 1 and d["utterance_unfinished"] == 1
    assert [(c.query_a, c.query_b) for c in pools["PARA_SAFE"]] in ([("How do I top up my card?", "How can I top up my card?")],
                                                                   [("How can I top up my card?", "How do I top up my card?")])


def test_bfcl_schema_mapping_and_calls(fixtures):
    schema = bfcl.to_json_schema({"type": "dict", "properties": {"x": {"type": "float"}, "t": {"type": "tuple",
                                  "items": {"type": "any"}}}, "required": ["x"]})
    assert schema == {"type": "object", "properties": {"x": {"type": "number"}, "t": {"type": "array", "items": {}}},
                      "required": ["x"]}
    with pytest.raises(bfcl.UnsupportedType):
        bfcl.to_json_schema({"type": "HashMap"})
    # optional ("" accepted) is left out, unless the schema requires it; coupled alternatives are refused
    assert bfcl.ground_call([{"f": {"a": [1], "u": ["km", ""]}}])[:2] == ("f", {"a": 1})
    assert bfcl.ground_call([{"f": {"a": [1], "u": ["km", ""]}}], frozenset({"u"}))[:2] == ("f", {"a": 1, "u": "km"})
    assert bfcl.ground_call([{"f": {"w": [12, 2], "h": [2, 12]}}]) is None
    cands, drops = corpus_build(ctx("tool", fixtures), "existing_benchmark")
    assert cands and drops["category_not_single_call"] > 0
    for c in cands:
        assert c.verification_method in ("json_schema_call", "policy_no_cache") and c.tools_a and c.tools_b
        assert verify(c).passed
        assert not verify(c.with_(label="PARA_SAFE" if c.label != "PARA_SAFE" else "UNRELATED")).passed


def test_bfcl_formatting_variants_are_not_different_arguments():
    for x, y in [("08-16-2022", "2022-08-16"), ("PlayStation", "Playstation"), ("Paris, FR", "Paris, France"),
                 ("Yellowstone", "Yellowstone National Park")]:
        assert bfcl.value_tokens(x) & bfcl.value_tokens(y), (x, y)
    assert not bfcl.value_tokens("Paris, France") & bfcl.value_tokens("New York, NY")
    assert not bfcl.value_tokens(5) & bfcl.value_tokens(10)


def _bfcl(rid, text, city):
    fn = {"name": "find_attractions", "description": "Attractions in a city.",
          "parameters": {"type": "dict", "properties": {"location": {"type": "string"}}, "required": ["location"]}}
    return ToolRecord("bfcl", "live_simple", rid, "BFCL_v4_live_simple.json", "Apache-2.0", text=text,
                      question=(({"role": "user", "content": text},),), functions=(fn,),
                      ground_truth=[{"find_attractions": {"location": [city]}}])


def test_bfcl_same_function_pairs_need_a_real_argument_change():
    recs = [_bfcl("1", "Browse attractions in Paris that are free to enter.", "Paris, FR"),
            _bfcl("2", "Search for attractions in Paris that are free to enter.", "Paris, France"),
            _bfcl("3", "Check the forecast for Lisbon on 08-16-2022.", "Lisbon"),
            _bfcl("4", "Check the forecast for Lisbon on 08-16-2022.", "Lisbon, Portugal")]
    cands, drops = corpus_build(ctx("tool", FakeDatasets(bfcl=recs)), "existing_benchmark")
    pairs = {frozenset(c.provenance.source_record.replace("live_simple/", "").split("|")) for c in cands}
    assert frozenset({"1", "2"}) not in pairs and frozenset({"3", "4"}) not in pairs   # one place, two spellings
    assert drops["changed_argument_formatting_variant"] == 1 and drops["identical_question_different_ground_truth"] == 1
    for c in cands:
        assert normalize_text(c.query_a) != normalize_text(c.query_b)


def test_xquad_cross_language(fixtures):
    cands, _ = mapping_build(ctx("multilingual", fixtures), "xquad")
    adv = [c for c in cands if c.label == "ADVERSARIAL"]
    assert adv
    for c in adv:
        p = c.verification_payload
        assert p["lang_a"] == "en" and p["lang_b"] != "en" and c.source == "xquad"
        assert not verify(c.with_(label="PARA_SAFE")).passed
    for c in cands:   # each question comes with its passage ("the university" needs it)
        for side, q in ((c.context_a, c.query_a), (c.context_b, c.query_b)):
            assert side and side[0]["role"] == "user" and len(side[0]["content"]) > len(q)
            assert any(a.casefold() in side[0]["content"].casefold() for a in
                       (c.verification_payload.get("aliases_a", []) if side is c.context_a else c.verification_payload.get("aliases_b", [])))


def test_caps_follow_need(fixtures):
    small, _ = corpus_build(ctx("qa_open", fixtures, {"RELATED_UNSAFE": 2}), "existing_benchmark")
    assert Counter(c.label for c in small)["RELATED_UNSAFE"] == 1  # 0.45 * 2, rounded up (the fixtures hold 2)
    full, _ = corpus_build(ctx("qa_open", fixtures, {"RELATED_UNSAFE": 40}), "existing_benchmark")
    assert Counter(c.label for c in full)["RELATED_UNSAFE"] == 2


def test_generation_is_deterministic(fixtures):
    from sources.datasets_dir import DatasetsDir

    for domain, method in BUILDS:
        a = [c.key for c in corpus_build(ctx(domain, fixtures), method)[0]]
        b = [c.key for c in corpus_build(ctx(domain, DatasetsDir(FIXTURES)), method)[0]]
        assert a == b


def test_commercial_only_drops_qqp_and_mrpc(fixtures):
    qqp, _ = corpus_build(ctx("qa_open", fixtures), "existing_benchmark")
    conv = unfed(fixtures, "paws") + unfed(fixtures, "mrpc")
    assert qqp and not any(licences.commercial_ok(c) for c in qqp)
    assert not any(licences.commercial_ok(c) for c in conv if c.source == "mrpc")
    assert all(licences.commercial_ok(c) for c in conv if c.source == "paws")
    assert not licences.commercial_ok(qqp[0].with_(source="somewhere_unknown"))
    assert not licences.commercial_ok(qqp[0].with_(source="paws+sharegpt"))


def test_commercial_only_keeps_lm_rows_of_an_open_model_on_open_seeds(fixtures):
    # An LM row's source is "lm:<model>": the model's licence and the seeds' licence both decide.
    qqp, _ = corpus_build(ctx("qa_open", fixtures), "existing_benchmark")
    curated = licences.LICENCES["curated"][0]
    smol = qqp[0].with_(source="lm:HuggingFaceTB/SmolLM2-135M-Instruct", licence=curated)
    assert licences.commercial_ok(smol)
    assert not licences.commercial_ok(smol.with_(source="lm:some/unknown-model"))
    assert not licences.commercial_ok(smol.with_(licence=licences.LICENCES["qqp"][0]))


def test_commercial_only_in_generation_asset():
    from dagster import build_asset_context

    from assets.generation import candidate_rows
    from pipeline.orchestration.resources import BuildSettings
    from pipeline.stages.values import MinedPairs

    from domains.corpora import extract as ex
    from sources.datasets_dir import DatasetsDir

    data, _ = ex.build(DatasetsDir(FIXTURES), MinedPairs(), ["qa_open"], {})   # the extract the fixtures give
    extract = ex.parse(data, "fixtures")

    def run(flag):
        extra = {"llm_mode": "none"} if "llm_mode" in BuildSettings.model_fields else {}
        settings = BuildSettings(profile="v1.1", commercial_only=flag, **extra)
        out = candidate_rows(build_asset_context(partition_key="qa_open"), settings, corpus_extract=extract)
        return out  # one domain: the record itself (pipeline/orchestration/partitions.py)

    plain, only = run(False), run(True)
    assert any(c.source == "qqp" for c in plain.candidates)
    assert not any(c.source == "qqp" for c in only.candidates)
    assert only.drops["non_commercial_licence:qqp"] > 0


@pytest.mark.skipif(not REAL.is_dir(), reason="real corpora not present at /work/shared/datasets")
def test_real_corpora_yield_verified_rows():
    from pipeline.core.config import load_profile
    from sources.datasets_dir import DatasetsDir

    ds, prof = DatasetsDir(REAL), load_profile("v1.1")
    for domain, method in BUILDS:
        cands, drops = corpus_build(ctx(domain, ds, dict(prof.matrix[domain])), method)
        assert len(cands) >= 20, (domain, method, drops)
        assert all(verify(c).passed for c in cands)


def _sharegpt_with_mined_pairs(root: Path) -> Path:
    """The ShareGPT fixtures plus conversations written for this test that mine into all three
    domains: a conversational and a creative single-turn pair, and a multi_turn follow-up pair."""
    import shutil

    shutil.copytree(FIXTURES / "sharegpt", root / "sharegpt")
    singles = [("How many minutes are there in 3 hours and 20 minutes?", "How many minutes are there in 4 hours and 20 minutes?"),
               ("Write a limerick about a cat who loves cheese in 5 lines.",
                "Write a limerick about a cat who loves cheese in 6 lines.")]
    rows = [{"id": f"cm{k}{side}_0", "conversations": [{"from": "human", "value": text}, {"from": "gpt", "value": "…"}]}
            for k, pair in enumerate(singles) for side, text in zip("ab", pair)]
    for k, (ask, answer) in enumerate([("Plan a three day trip to Lisbon.", "Day one: Alfama and the castle."),
                                       ("Explain how vaccines train the immune system.", "Vaccines show the body a harmless piece.")]):
        rows.append({"id": f"cf{k}_0", "conversations": [{"from": "human", "value": ask}, {"from": "gpt", "value": answer},
                                                         {"from": "human", "value": "continue"}]})
    (root / "sharegpt" / "commercial_test.json").write_text(json.dumps(rows), encoding="utf-8")
    return root


def test_commercial_only_drops_every_sharegpt_derived_row(tmp_path):
    # ShareGPT states no licence (non-commercial research use): every row mined from it carries that
    # licence word for word, and --commercial-only drops each one, in every domain it mines into.
    from dagster import build_asset_context

    from assets.generation import candidate_rows
    from domains.corpora import mining
    from pipeline.orchestration.resources import BuildSettings
    from pipeline.stages.values import MinedPairs
    from sources.datasets_dir import DatasetsDir

    root = _sharegpt_with_mined_pairs(tmp_path / "ds")
    ds, cache = DatasetsDir(root), tmp_path / "cache"
    names = mining.shards(ds)
    mined = mining.mine(ds, names, cache)
    assert isinstance(mined, MinedPairs) and mined.shards == tuple(names)
    # (qa_open: pairs of unrelated explanatory openings)
    assert {c.domain for c in mined.candidates} == {"conversational", "creative", "multi_turn", "qa_open"}
    sharegpt_licence = licences.LICENCES["sharegpt"]
    assert sharegpt_licence[1] is False

    from assets.sources import extract_from
    from domains.corpora import extract as ex
    from sources.datasets_dir import DatasetsDir

    data, _ = extract_from(DatasetsDir(root), mined)     # the extract as the build makes it from this folder
    extract = ex.parse(data, "planted")

    def run(domain, flag):
        settings = BuildSettings(profile="v1.1", cache_dir=str(cache), commercial_only=flag, llm_mode="none")
        return candidate_rows(build_asset_context(partition_key=domain), settings, corpus_extract=extract)

    for domain in ("conversational", "creative", "multi_turn", "qa_open"):
        plain, only = run(domain, False), run(domain, True)
        derived = [c for c in plain.candidates if "sharegpt" in licences.sources_of(c)]
        # (multi_turn: the planted follow-up pair is also a topic-swap trap on a real request, and the extract
        # keeps the trap: see domains/corpora/extract.build)
        assert any(c.construction_method in ("real_traffic_mined", "adversarial_perturbation") for c in derived), domain
        assert all(c.licence == sharegpt_licence[0] and not licences.commercial_ok(c) for c in derived)
        assert not [c for c in only.candidates if "sharegpt" in licences.sources_of(c)], domain
        assert sum(n for k, n in only.drops.items() if k.startswith("non_commercial_licence:")) == len(derived)
        assert {c.key for c in only.candidates} == {c.key for c in plain.candidates} - {c.key for c in derived}
