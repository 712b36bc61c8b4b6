"""Building one tool-domain Candidate from two canonical calls (or two seeds).

A candidate is verified by json_schema_call; when either call mutates or reads mutable state it
is put under `policy_no_cache` with `Candidate.under_policy`, and its rationale says why.
"""
from __future__ import annotations

from typing import Any, Mapping

from domains.base import Candidate, Provenance
from domains.tool.catalog import DOMAIN, SOURCE_REL, VERSION, offered_tools
from domains.tool.policy import policy
from domains.tool.rendering import Seed, call_text, intent_of, render, tool_name
from domains.verify.tool_call import parse_call

GROUNDING = {
    "EQUIV": "A user repeats a request to a tool-using assistant with only typing differences (case, "
             "punctuation, spacing, quotes, contractions).",
    "PARA_SAFE": "Users word the same {tool} request differently, writing dates, amounts and places in "
                 "different but equivalent forms.",
    "ADVERSARIAL": "A tool-using assistant receives two near-identical requests in which one argument "
                   "({what}) differs, so the function call must differ.",
    "RELATED_UNSAFE": "A user follows a {tool} request with another request about the same kind of object "
                      "that needs a different call.",
    "UNRELATED": "One assistant with function calling serves unrelated requests ({tool} and {tool_b}).",
}
_POLICY_NOTE = {
    "mutation": " The call changes the world (send, pay, book, delete, set), so it is never served from "
                "a cache: policy mutation.",
    "time_sensitive": " The call reads state that changes (live prices, weather, news, or the user's own "
                      "calendar, files, contacts, accounts or devices), so the answer depends on when it is "
                      "asked and it is never served from a cache: policy time_sensitive.",
}


def make(label: str, method: str, call_a: str, call_b: str, query_a: str, query_b: str, *,
         subcategory: str, rationale: str, template_id: str, grounding: str,
         operator: str | None = None, params: Mapping[str, Any] | None = None) -> Candidate:
    """A candidate for two canonical calls, each offered its tool's category, under the domain's
    policy when either call forces one."""
    tool_a, tool_b = parse_call(call_a)[0], parse_call(call_b)[0]
    # json_schema_call needs no payload: the calls and offered tools are the whole check. The
    # empty payload is also what under_policy keeps as the underlying payload.
    c = Candidate(
        domain=DOMAIN, subcategory=subcategory, label=label, query_a=query_a, query_b=query_b,
        expected_answer_a=call_a, expected_answer_b=call_b, rationale=rationale,
        verification_method="json_schema_call", verification_payload={},
        construction_method=method, source="curated", real_world_grounding=grounding,
        provenance=Provenance(generator=f"{DOMAIN}.{method}", generator_version=VERSION, template_id=template_id,
                              operator=operator, operator_params=dict(params) if params is not None else None,
                              source_file=SOURCE_REL),
        tools_a=offered_tools([tool_a]), tools_b=offered_tools([tool_b]),
    )
    reason = policy(c)
    if reason is None:
        return c
    return c.under_policy(reason, rationale=rationale + _POLICY_NOTE[reason])


def from_seeds(label: str, method: str, a: Seed, b: Seed, *, rationale: str, template_id: str,
               subcategory: str | None = None, operator: str | None = None, params: Mapping[str, Any] | None = None,
               query_b: str | None = None, what: str = "") -> Candidate:
    """`make` for two rendered seeds: their calls, their texts (or `query_b`), the label's
    grounding sentence and seed A's subcategory unless one is given."""
    ta, tb = tool_name(a), tool_name(b)
    grounding = GROUNDING[label].format(tool=ta, tool_b=tb, what=what or "an argument")
    return make(label, method, call_text(a), call_text(b), render(a), query_b if query_b is not None else render(b),
                subcategory=subcategory or intent_of(a).subcategory, rationale=rationale,
                template_id=template_id, grounding=grounding, operator=operator, params=params)
