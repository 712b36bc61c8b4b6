"""LM-written near-misses (domains/lm/edits.py): the one-span token diff, each domain's resolver
(the fact table, sympy, the canonical call decide the answer, never the model), and the task run
with a scripted stand-in for the model (the real models run in domains.lm.trial)."""
from __future__ import annotations

import re

import pytest

from domains import get_domain
from domains.base import GenContext, Span
from domains.lm import edits
from domains.lm.edits import one_span
from domains.verify import verify
from tests.llm_doubles import prompt_file_error


@pytest.mark.parametrize("seed, rewrite, expected", [
    ("What is the capital of Austria?", "What is the capital of Australia?", ("Austria", "Australia")),
    ("Who wrote Animal Farm?", "Who wrote The Old Man and the Sea?", ("Animal Farm", "The Old Man and the Sea")),
    ("Solve for x: 4*x + 23 = 31", "solve for x: 4*x + 25 = 31.", ("23", "25")),   # case and final mark aside
    ("Solve for x: 4*x + 23 = 31", "Solve for x: 4*x + 23 = 31", "unchanged"),
    ("Solve for x: 4*x + 23 = 31", "Solve for x: 4*x + 23 = 31 and x > 0", "insertion"),
    ("What is the capital city of Chile?", "What is the capital of Chile?", "deletion"),
    ("What is the capital of Chile?", "Which is the capital of Peru?", "several_changes"),
    ("Who wrote Dracula?", "Who wrote the long and famous novel about a count from Transylvania who moves to England?",
     "span_too_long"),
])
def test_one_span_finds_exactly_one_changed_span_or_names_why_not(seed, rewrite, expected):
    got = one_span(seed, rewrite)
    assert (got.old, got.new) == expected if isinstance(got, Span) else got == expected


def _seed(domain: str, record: str):
    found = [s for s in get_domain(domain).lm.edit_seeds() if s.record == record]
    assert found, f"no edit seed {record} in {domain}"
    return found[0]


def _resolve(domain: str, record: str, rewrite: str):
    seed = _seed(domain, record)
    span = one_span(seed.text, rewrite)
    assert isinstance(span, Span), span
    return get_domain(domain).lm.resolve_edit(seed, rewrite, span)


def test_qa_factual_answers_a_rewrite_from_the_fact_table():
    c = _resolve("qa_factual", "austria.capital#0", "What is the capital of Australia?")
    assert (c.label, c.expected_answer_a, c.expected_answer_b) == ("ADVERSARIAL", "Vienna", "Canberra")
    assert c.verification_payload == {"aliases_a": ["Vienna", "Wien"], "aliases_b": ["Canberra"]}
    assert verify(c, get_domain("qa_factual").policy).passed
    assert _resolve("qa_factual", "austria.capital#0", "What is the capital of Kenya?") == "entity_not_in_table"
    assert _resolve("qa_factual", "austria.capital#0", "What is the currency of Austria?") == "changed_another_detail"
    # Albania and Austria both lie in Europe: a rewrite that changes the entity but not the answer is no near-miss
    assert _resolve("qa_factual", "austria.continent#0", "On which continent is Albania?") == "answer_unchanged"


def test_math_answers_a_rewrite_with_sympy():
    seed = _seed("math", "linear_one_side#lm0")
    assert (seed.text, seed.what) == ("Solve for x: 4*x + 23 = 31", "the number 23 to another number")
    c = _resolve("math", "linear_one_side#lm0", "Solve for x: 4*x + 27 = 31")
    assert (c.label, c.expected_answer_a, c.expected_answer_b) == ("ADVERSARIAL", "x = 2", "x = 1")
    assert verify(c, get_domain("math").policy).passed
    # the coefficient is a parameter too; sympy gives 8/5, whatever the model would have said
    assert _resolve("math", "linear_one_side#lm0", "Solve for x: 5*x + 23 = 31").expected_answer_b == "x = 8/5"
    assert _resolve("math", "linear_one_side#lm0", "Solve for y: 4*x + 23 = 31") == "not_a_number_change"
    # a changed number that is no parameter's shown value (a template literal, say) has no known answer
    resolve = get_domain("math").lm.resolve_edit
    assert resolve(seed, "Solve for x: 4*x + 23 = 31", Span("99", "98", 0, 0)) == "not_a_parameter"


def test_tool_answers_a_rewrite_with_the_canonical_call():
    c = _resolve("tool", "get_timezone#1", "What time zone is Chicago in?")
    assert (c.label, c.expected_answer_a, c.expected_answer_b) == (
        "ADVERSARIAL", '{"arguments":{"city":"Denver"},"name":"get_timezone"}',
        '{"arguments":{"city":"Chicago"},"name":"get_timezone"}')
    assert verify(c, get_domain("tool").policy).passed
    assert _resolve("tool", "get_timezone#1", "What time zone is Gotham in?") == "not_a_slot_value"
    # a drive stays within one road network; a unit keeps its dimension; a literal word is no typo
    assert _resolve("tool", "get_driving_directions#0",
                    "Give me turn-by-turn directions by car from Boston to Sydney.") == "call_invalid"
    assert _resolve("tool", "convert_units#4", "Convert six gallons to meters.") == "not_a_slot_value"
    # asked to change the number, the model changed the unit to the target unit: nothing to convert
    assert _resolve("tool", "convert_units#2", "What is three gallons in gal?") == "same_value_twice"
    assert _resolve("tool", "define_word#0", 'Define the word "ephemerel".') == "reads_as_a_typo"
    assert _resolve("tool", "define_word#0", 'Define the word "eternal".').expected_answer_b == \
        '{"arguments":{"word":"eternal"},"name":"define_word"}'
    assert _resolve("tool", "get_public_holidays#0", "Show me the 2026 public holidays for the US.") \
        .expected_answer_b == '{"arguments":{"country":"US","year":2026},"name":"get_public_holidays"}'


class ScriptedModel:
    """A stand-in CachedProvider: answers each seed request with the rewrites scripted for it, in turn."""

    model_snapshot = "gguf-sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

    def __init__(self, rewrites: dict[str, list[str]]) -> None:
        self.rewrites, self.asked = {k: list(v) for k, v in rewrites.items()}, []

    def complete(self, messages, system=None, **params):
        seed = messages[-1]["content"].split(": ", 1)[1]
        self.asked.append((seed, params["seed"]))
        queue = self.rewrites.get(seed) or [seed]
        return type("Completion", (), {"text": queue.pop(0) if len(queue) > 1 else queue[0]})()


def test_the_task_counts_its_yield_asks_a_copy_again_and_stamps_the_rows(monkeypatch):
    spec = get_domain("tool")
    seeds = [_seed("tool", "get_timezone#1"), _seed("tool", "define_word#0"), _seed("tool", "get_timezone#0")]
    monkeypatch.setattr(edits, "seeds", lambda spec, section, ctx, limit=None: seeds)
    model = ScriptedModel({
        seeds[0].text: [seeds[0].text, "What time zone is Chicago in?"],   # a copy first, then an edit
        seeds[1].text: ['Define the word "ephemeral" in French.'],
        seeds[2].text: [""],
    })
    ctx = GenContext(domain="tool", profile="v1.1", need={}, llm=model)
    monkeypatch.setitem(edits.load_prompts(), "in_build", False)     # not recorded yet: the build asks nothing
    assert edits.generate(spec, ctx) == ([], edits.Yield())
    (c,), y = edits.generate(spec, ctx, in_build=False)
    assert y.as_dict() == {"seeds": 3, "sent": 4, "outputs": 3, "kept": 1, "drops": {"diff:insertion": 1, "empty": 1}}
    assert [s for _, s in model.asked[-4:]] == [11, 12, 11, 11]        # the copy was asked again, seed + 1
    assert (c.construction_method, c.source, c.label) == (
        "lm_generated", "lm:HuggingFaceTB/SmolLM2-135M-Instruct", "ADVERSARIAL")
    assert (c.provenance.generator, c.provenance.template_id, c.provenance.source_record) == (
        "tool.lm_generated", "tool.edit.v2", "get_timezone#1")
    assert c.provenance.model_snapshot == model.model_snapshot
    assert c.provenance.operator == "lm_edit" and c.provenance.operator_params["to"] == "Chicago"


def test_a_prompt_example_that_is_not_one_edit_is_a_clear_error(tmp_path, monkeypatch):
    text = ("in_build: false\nparams: {seed: 1}\ndomains:\n  math:\n    id: m\n    max_seeds: 1\n"
            "    system: s\n    user: 'Change {what}: {q}'\n"
            "    examples: [[one number, 'Solve 2*x = 4', 'Solve 3*x = 5']]\n")
    assert re.match(r"configs/prompts/lm_edit\.yaml:domains\.math\.examples\[0\]: the rewrite does not change exactly "
                    r"one span \(several_changes\)\. Fix the example$", prompt_file_error(edits, text, tmp_path, monkeypatch))


def test_math_rewordings_keep_the_math_and_the_task_and_pair_under_sympy(monkeypatch):
    from domains.lm import generate as lm
    from domains.lm.rules import Seed, paraphrase_problem

    keywords = {a: tuple(ks) for a, ks in lm.prompt_for("math")["keywords"].items()}
    item = next(it for it in get_domain("math").lm.items(keywords) if it.group == "linear_one_side#lm")
    eq, seed = item.keep[0], Seed(item, 0)                      # e.g. "4*t + 26 = 50"
    var = eq.split("*")[1][0]
    assert paraphrase_problem(seed, f"Which value of {var} makes {eq} hold?") is None
    assert paraphrase_problem(seed, f"Solve for {var}: {eq.replace('*', '')}") == "entity_missing"
    assert paraphrase_problem(seed, f"Solve for {var}: {eq} + 1") == "number_changed"
    assert paraphrase_problem(seed, f"Find for {var} the derivative: {eq}") in {"attribute_missing",
                                                                               "attribute_changed"}
    model = ScriptedModel({item.phrasings[0]: [f"Which value of {var} makes {eq} hold?"],
                           item.phrasings[1]: [f"Find the value of {var} for which {eq} holds."]})
    ctx = GenContext(domain="math", profile="v1.1", need={}, llm=model)
    spec = get_domain("math")
    monkeypatch.setitem(lm.prompt_for("math"), "in_build", False)   # not recorded yet: the build asks nothing
    assert lm.generate(spec, ctx) == ([], {}, 0)
    monkeypatch.setitem(lm.prompt_for("math"), "in_build", True)
    monkeypatch.setattr(lm, "seeds", lambda spec, prompt, ctx, limit=None: [Seed(item, 0), Seed(item, 1)])
    cands, drops, sent = lm.generate(spec, ctx, in_build=False)
    assert sent == 2 and not drops, drops
    (c,) = cands
    assert (c.label, c.verification_method, c.expected_answer_a) == ("PARA_SAFE", "sympy_equivalence", item.answer)
    assert verify(c, spec.policy).passed


def test_tool_rewordings_keep_every_slot_value_and_the_direction_and_pair_on_the_call(monkeypatch):
    from domains.lm import generate as lm
    from domains.lm.rules import Seed, paraphrase_problem

    spec = get_domain("tool")
    keywords = {a: tuple(ks) for a, ks in lm.prompt_for("tool")["keywords"].items()}
    items = {it.group: it for it in spec.lm.items(keywords)}
    drive = items["get_driving_directions#0"]
    assert drive.phrasings[0] == "Get driving directions from Boston to New York City."
    seed = Seed(drive, 0)
    assert paraphrase_problem(seed, "How can I drive from Boston to New York City?") is None
    assert paraphrase_problem(seed, "How can I drive to New York City from Boston?") == "order_changed"
    assert paraphrase_problem(seed, "How can I drive from Boston to New York?") == "entity_missing"
    assert paraphrase_problem(seed, "What is the time zone along the drive from Boston to New York City?") == \
        "attribute_changed"
    zone = items["get_timezone#0"]
    model = ScriptedModel({zone.phrasings[0]: ["Which time zone is Tokyo located in?"],
                           zone.phrasings[1]: ["Tell me the time zone of Tokyo."]})
    monkeypatch.setattr(lm, "seeds", lambda spec, prompt, ctx, limit=None: [Seed(zone, 0), Seed(zone, 1)])
    cands, drops, sent = lm.generate(spec, GenContext(domain="tool", profile="v1.1", need={}, llm=model),
                                     in_build=False)
    assert (sent, dict(drops)) == (2, {})
    (c,) = cands
    assert c.expected_answer_a == c.expected_answer_b == '{"arguments":{"city":"Tokyo"},"name":"get_timezone"}'
    assert c.tools_a == c.tools_b and c.tools_a and c.label == "PARA_SAFE"
    assert verify(c, spec.policy).passed


def test_code_answers_a_rewrite_with_the_curated_references_and_their_tests():
    c = _resolve("code", "reverse_string/base/python",
                 "Could you code reverse_string(text) in JavaScript? It gives back text reversed, last character first.")
    assert (c.label, c.verification_payload["language_a"], c.verification_payload["language_b"]) == (
        "ADVERSARIAL", "python", "javascript")
    assert c.expected_answer_b.startswith("function reverse_string(text)")
    assert verify(c, get_domain("code").policy).passed            # each side's tests run in the sandbox
    seed = _seed("code", "truncate_text/10/python")
    v = _resolve("code", "truncate_text/10/python", seed.text.replace("at most 10", "at most 11"))
    assert v.provenance.operator_params["kind"] == "off_by_one" and v.verification_payload["tests_a"] != \
        v.verification_payload["tests_b"]
    assert verify(v, get_domain("code").policy).passed
    assert _resolve("code", "truncate_text/10/python", seed.text.replace("at most 10", "at most 12")) == \
        "not_a_curated_request"                                   # no curated variant, so no known answer
    assert _resolve("code", "reverse_string/base/python", "Could you code reverse_string(text) in Rust? It gives "
                    "back text reversed, last character first.") == "not_a_curated_request"
