"""The `tool` domain: requests to an assistant with function calling, labelled by canonical call.

Every request is an intent rendered from sources/curated/tool.yaml with slot values; its reference
answer is the canonical call (tool name plus W5H2-normalised arguments: ISO dates, numbers with
currency codes, canonical city names, ISO language and country codes) as canonical JSON. Two
requests are the same for a cache exactly when their canonical calls are equal
(verifier json_schema_call).

Caching policy (one rule, held as data: each tool's `mutating` flag and, for reads, its `state`):
- a call to a mutating tool (send, pay, book, create, set, lock) is policy "mutation";
- a read of mutable state is policy "time_sensitive": state that changes on its own (balances,
  device status, prices, weather, news) or that the user changes through a write of the same tool
  set (the calendar, files, devices; the user's own contacts);
- a read stays cacheable only when its result is fixed by construction: `state: fixed` (a pure
  computation or a reference lookup) or `state: closed_range` whose range ends before the file's
  fixed `as_of` day (list_transactions for a past month). This is decided per call, so a
  closed_range read whose range reaches `as_of` is time_sensitive.
A pair is "mutation" if either call mutates, else "time_sensitive" if either call reads mutable
state; a policy pair is never a HIT, whatever its 5-class label.

Generators: "curated" (hand-written pairs), "intent_bottom_up" (EQUIV, PARA_SAFE, RELATED_UNSAFE
and UNRELATED rows rendered from intent-and-slot templates) and "adversarial_perturbation" (one
typed operator applied to a rendered seed). All three share one plan, built once, so the family
limits (a query text in at most 3 candidates, a linked family of at most 6) hold across methods.
BFCL rows ("existing_benchmark") come from domains.corpora.bfcl when the corpus is present.

Layout, in the order data flows:
- catalog.py    loads and checks the curated file (tools, vocab, intents); schemas.py is its
                JSON Schema check of every tool's parameters;
- policy.py     mutation / time_sensitive / cacheable, per call and per pair;
- rendering.py  a Seed (intent instance + phrasing + surface forms) to request text and canonical call;
- operators.py  the typed perturbation operators (ADVERSARIAL rows);
- candidates.py one Candidate from two calls or seeds, under the policy when one applies;
- planning.py   the one plan: every label's candidates under one FamilyGuard.
"""
from __future__ import annotations

from domains.base import CorpusFeed, DomainSpec, LMHooks
from domains.corpora.feeds import corpus_rows
from domains.families import method_generators
from domains.lm import edits as lm_edit_task, generate as lm_paraphrase_task
from domains.tool.lm_hooks import lm_edit_seeds, lm_items, lm_resolve_edit
from domains.tool.catalog import (DOMAIN, SOURCE_REL, STATES, VERSION, Intent, Slot, ToolData, load, offered_schema,
                                  offered_tools, same_road_region)
from domains.tool.operators import OPERATORS, call_valid
from domains.tool.planning import plan
from domains.tool.policy import call_policy, policy, reads_mutable_state
from domains.tool.rendering import Seed, call_text, intent_of, render, slot_args, surfaces, tool_name

__all__ = ["DOMAIN", "OPERATORS", "SPEC", "STATES", "VERSION", "Intent", "Seed", "Slot", "ToolData", "call_policy",
           "call_text", "call_valid", "intent_of", "load", "offered_schema", "offered_tools", "plan", "policy",
           "reads_mutable_state", "render", "same_road_region", "slot_args", "surfaces", "tool_name"]

SPEC = DomainSpec(
    name=DOMAIN,
    description="Function-calling requests; the answer is the canonical tool call (JSON Schema validated).",
    generators={**method_generators(DOMAIN, lambda ctx: plan()[0], ("curated", "intent_bottom_up", "adversarial_perturbation")),
                "existing_benchmark": corpus_rows("existing_benchmark"),
                "lm_generated": lambda ctx: lm_paraphrase_task.generate(SPEC, ctx)[0] + lm_edit_task.generate(SPEC, ctx)[0]},
    verifier="json_schema_call",
    operators=OPERATORS,
    policy=policy,
    version=VERSION,
    # A model rewords a request (every slot value kept) or rewrites it with one slot changed, which the
    # canonical call then answers (domains/tool/lm_hooks.py).
    lm=LMHooks(items=lm_items, source_file=SOURCE_REL, edit_seeds=lm_edit_seeds, resolve_edit=lm_resolve_edit),
    corpus_feeds={"existing_benchmark": (CorpusFeed(("bfcl",), {"EQUIV": 0.1, "PARA_SAFE": 0.25, "RELATED_UNSAFE": 0.2,
                                                               "ADVERSARIAL": 0.25, "UNRELATED": 0.2}),)},
)
