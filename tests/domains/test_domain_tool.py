"""The tool domain: curated schemas, operators, the json_schema_call verifier, policy and quota."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from domains import tool
from domains.base import HIT_LABELS, LABELS, normalize_text, stable_rng
from domains.check import generate_verified
from domains.tool import catalog
from domains.verify import verify
from domains.verify.tool_call import canonical_call, json_schema_call, parse_call
from pipeline.core.config import load_profile
from domain_helpers import assert_input_error
from pipeline.core.paths import PROJECT_ROOT

CANDS, DROPS = tool.plan()
DATA = tool.load()


def _first(pred):
    return next(c for c in CANDS if pred(c))


def _plain(c):
    return c.verification_method == "json_schema_call"


# ----------------------------------------------------------------------------- curated source

def test_curated_file_has_25_tools_over_the_required_categories():
    primary = [t for t in DATA.tools if t not in {a["name"] for a in DATA.alternative.values()}]
    assert len(primary) >= 25
    for cat in ("calendar", "travel", "messaging", "banking", "files", "weather", "search", "smart_home"):
        assert DATA.categories[cat], cat
    assert all(isinstance(m, bool) for m in DATA.mutating.values())
    assert sorted(DATA.state) == sorted(n for n, m in DATA.mutating.items() if not m)


def test_every_intent_instance_gives_a_schema_valid_canonical_call():
    for intent in DATA.intents.values():
        for idx, inst in enumerate(intent.instances):
            seed = tool.Seed(intent.id, tuple(sorted(inst.items())), 0, ())
            assert tool.call_valid(seed), (intent.id, idx, tool.call_text(seed))
            text = tool.call_text(seed)
            assert text == canonical_call(*parse_call(text))


def _load_error(tmp_path, monkeypatch, old: str, new: str) -> str:
    """The one-line InputError tool.load() raises once `old` in the curated file reads `new`."""
    bad = tmp_path / "tool.yaml"
    bad.write_text(catalog.SOURCE_FILE.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return assert_input_error(monkeypatch, catalog, "SOURCE_FILE", bad, tool.load, r"^sources/curated/tool\.yaml: ")


def test_bad_curated_file_is_a_one_line_input_error(tmp_path, monkeypatch):
    msg = _load_error(tmp_path, monkeypatch, '"What time zone is {city} in?"', '"What time zone is it in?"')
    assert msg.startswith("sources/curated/tool.yaml: intents[get_timezone]: phrasing") and "\n" not in msg


# ----------------------------------------------------------------------------- operators

_SEEDS = [(i.id, k) for i in DATA.intents.values() for k in range(len(i.instances))]


def _seed(intent_id: str, idx: int, phrasing: int = 0, forms: tuple = ()) -> tool.Seed:
    intent = DATA.intents[intent_id]
    forms = forms or tuple((s.name, 0) for s in intent.slots)
    return tool.Seed(intent_id, tuple(sorted(intent.instances[idx].items())), phrasing, forms)


def _applicable(name: str) -> list[tuple[str, int]]:
    """The (intent, instance) seeds the operator edits for some rng: most operators touch one slot
    type (a language, a contact), so drawing from every intent would almost never exercise them."""
    op = tool.OPERATORS[name]
    return [s for s in _SEEDS if any(op.apply(_seed(*s), stable_rng("applies", name, k)) for k in range(4))]


@st.composite
def seeds(draw, pool):
    intent_id, idx = draw(st.sampled_from(pool))
    intent = DATA.intents[intent_id]
    phrasing = draw(st.integers(0, len(intent.phrasings) - 1))
    forms = tuple((s.name, draw(st.integers(0, 4))) for s in intent.slots)
    return _seed(intent_id, idx, phrasing, forms)


@pytest.mark.parametrize("name", sorted(tool.OPERATORS))
def test_each_operator_changes_the_canonical_call(name):
    pool = _applicable(name)
    assert pool, f"operator {name} applies to no curated seed"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=seeds(pool), salt=st.integers(0, 10_000))
    def prop(seed, salt):
        _changes_the_call(name, seed, salt)
    prop()


def _changes_the_call(name: str, seed: tool.Seed, salt: int) -> None:
    res = tool.OPERATORS[name].apply(seed, stable_rng("test", name, salt))
    assume(res is not None)
    variant, params = res
    assert tool.call_text(variant) != tool.call_text(seed)
    assert tool.call_valid(variant)
    assert params
    if name != "tool_list_swap":
        # one answer-determining token changed: the text changes too, the phrasing does not
        assert tool.render(variant) != tool.render(seed)
        assert variant.phrasing == seed.phrasing and variant.forms == seed.forms


_ROAD_INTENTS = sorted(i.id for i in DATA.intents.values() if i.same_road_region)


def test_driving_directions_keep_origin_and_destination_on_one_road_network():
    # cb-tool-0185 asked for a drive from LA to Sydney (location_change picked any city).
    assert _ROAD_INTENTS == ["get_driving_directions"]
    rows = [c for c in CANDS if "get_driving_directions" in c.expected_answer_a + c.expected_answer_b]
    assert any(c.provenance.operator == "location_change" for c in rows)
    for c in rows:
        for text in (c.expected_answer_a, c.expected_answer_b):
            name, args = parse_call(text)
            if name == "get_driving_directions":
                assert DATA.road_region[args["origin"]] == DATA.road_region[args["destination"]], (c.query_b, args)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(idx=st.integers(0, 5), salt=st.integers(0, 10_000))
def test_location_change_on_a_route_never_leaves_the_road_network(idx, salt):
    intent = DATA.intents["get_driving_directions"]
    inst = intent.instances[idx % len(intent.instances)]
    seed = tool.Seed(intent.id, tuple(sorted(inst.items())), 0, ())
    res = tool.OPERATORS["location_change"].apply(seed, stable_rng("test", "road", salt))
    assert res is not None
    variant, params = res
    assert params["to"] != params["from"] and tool.same_road_region(intent, variant.value)


def test_cross_continent_route_in_the_curated_file_is_a_one_line_input_error(tmp_path, monkeypatch):
    msg = _load_error(tmp_path, monkeypatch, "{origin: Los Angeles, destination: San Francisco}",
                      "{origin: Los Angeles, destination: Sydney}")
    assert msg.startswith("sources/curated/tool.yaml: intents[get_driving_directions].instances[1]: ")
    assert "not joined by road" in msg and "\n" not in msg


@pytest.mark.parametrize("name", sorted(tool.OPERATORS))
def test_each_operator_applies_somewhere_and_made_rows(name):
    used = Counter(c.provenance.operator for c in CANDS if c.label == "ADVERSARIAL")
    assert used[name] >= 3


def test_adversarial_rows_are_operator_rows_with_params():
    adv = [c for c in CANDS if c.label == "ADVERSARIAL"]
    assert adv
    for c in adv:
        assert c.construction_method == "adversarial_perturbation"
        assert c.provenance.operator in tool.OPERATORS and c.provenance.operator_params


# ----------------------------------------------------------------------------- verifier

def test_verifier_accepts_a_true_hit():
    c = _first(lambda c: c.label == "PARA_SAFE" and _plain(c))
    out = json_schema_call(c)
    assert out.passed and out.tier == "deterministic" and out.reason == "ok"


@pytest.mark.parametrize("label", ["RELATED_UNSAFE", "ADVERSARIAL", "UNRELATED"])
def test_verifier_accepts_each_miss_kind_and_rejects_it_with_equal_calls(label):
    c = _first(lambda c: c.label == label and _plain(c))
    assert json_schema_call(c).passed
    same = c.with_(expected_answer_b=c.expected_answer_a, tools_b=c.tools_a)
    out = json_schema_call(same)
    assert not out.passed and out.reason == "calls_equal_for_miss"


def test_verifier_rejects_a_hit_whose_calls_differ():
    c = _first(lambda c: c.label == "ADVERSARIAL" and _plain(c) and c.provenance.operator == "date_change")
    out = json_schema_call(c.with_(label="EQUIV"))
    assert not out.passed and out.reason == "calls_differ_for_hit"


def test_tool_list_swap_differs_only_by_the_offered_tool():
    c = _first(lambda c: c.provenance.operator == "tool_list_swap" and _plain(c))
    assert normalize_text(c.query_a) == normalize_text(c.query_b)
    assert c.tools_a != c.tools_b
    assert json_schema_call(c).passed
    # Offer B's tools to A: A's tool is not offered there, so A fails.
    out = json_schema_call(c.with_(tools_a=c.tools_b))
    assert not out.passed and out.reason == "tool_a_not_offered"


def test_verifier_rejects_schema_violations_and_non_canonical_text():
    c = _first(lambda c: c.label == "EQUIV" and _plain(c) and '"end_date"' in c.expected_answer_a)
    name, args = parse_call(c.expected_answer_a)
    bad_date = canonical_call(name, {**args, "end_date": "March 3, 2024"})
    out = json_schema_call(c.with_(expected_answer_a=bad_date, expected_answer_b=bad_date))
    assert not out.passed and out.reason == "call_a_violates_schema"
    extra = canonical_call(name, {**args, "colour": "red"})
    assert json_schema_call(c.with_(expected_answer_a=extra)).reason == "call_a_violates_schema"
    loose = json.dumps(json.loads(c.expected_answer_a), indent=1)
    assert json_schema_call(c.with_(expected_answer_a=loose)).reason == "call_a_not_canonical_json"
    assert json_schema_call(c.with_(expected_answer_b="send it")).reason == "call_b_not_a_call"


def test_remote_ref_is_never_fetched(monkeypatch):
    attempts = []

    def no_network(*args, **kwargs):
        attempts.append(args)
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    c = _first(lambda c: c.label == "EQUIV" and _plain(c))
    name = parse_call(c.expected_answer_a)[0]
    remote = ({"name": name, "description": "x", "parameters": {"$ref": "http://example.invalid/x"}},)
    out = verify(c.with_(tools_a=remote, tools_b=remote))
    assert not out.passed and out.reason == "schema_a_remote_ref_refused"
    nested = ({"name": name, "description": "x", "parameters": {
        "type": "object", "properties": {"date": {"$ref": "https://example.invalid/date.json"}}}},)
    out = verify(c.with_(tools_a=nested, tools_b=nested))
    assert not out.passed and out.reason == "schema_a_remote_ref_refused"
    assert attempts == []


def test_registry_refuses_retrieval_even_without_the_static_check(monkeypatch):
    from domains.verify import tool_call

    monkeypatch.setattr(tool_call, "_non_local_refs", lambda schema: [])
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: pytest.fail("network access attempted"))
    c = _first(lambda c: c.label == "EQUIV" and _plain(c))
    name = parse_call(c.expected_answer_a)[0]
    remote = ({"name": name, "description": "x", "parameters": {"$ref": "http://example.invalid/x"}},)
    out = json_schema_call(c.with_(tools_a=remote, tools_b=remote))
    assert not out.passed and out.reason == "schema_a_remote_ref_refused"


def test_local_ref_still_resolves():
    c = _first(lambda c: _plain(c) and c.label == "PARA_SAFE" and "convert_units" in c.expected_answer_a)
    assert '"$ref"' in json.dumps(c.tools_a) and json_schema_call(c).passed


# ----------------------------------------------------------------------------- policy

# The caching rule, written out independently of the YAML: every read the domain offers, by what
# its result depends on. A new read tool must be classified here (test below).
_READS_USER_STATE = {  # the user's own mutable state (changes on its own or by a write in the set)
    "calendar_list_events", "outlook_get_agenda", "calendar_find_free_slot", "lookup_contact",
    "crm_find_person", "search_files", "drive_find_files", "list_devices", "get_device_status",
    "get_account_balance"}
_READS_LIVE_WORLD = {"get_exchange_rate", "search_flights", "get_flight_status", "search_hotels",
                     "get_weather_forecast", "get_current_weather", "web_search", "search_news",
                     "get_stock_price"}
_FIXED_BY_CONSTRUCTION = {  # pure computations and reference lookups
    "convert_units", "unit_converter", "translate_text", "deepl_translate", "get_timezone",
    "get_public_holidays", "holiday_api_lookup", "get_driving_directions", "define_word", "get_synonyms"}
_CLOSED_RANGE = {"list_transactions": "end_date"}  # fixed only for a range that ended before as_of


def _reads_mutable(name, args):
    if name in _READS_USER_STATE or name in _READS_LIVE_WORLD:
        return True
    if name in _CLOSED_RANGE:
        return args[_CLOSED_RANGE[name]] >= DATA.as_of  # ISO days compare as strings
    assert name in _FIXED_BY_CONSTRUCTION, name
    return False


def test_every_read_tool_is_classified_by_the_rule():
    reads = sorted(n for n, m in DATA.mutating.items() if not m)
    expected = _READS_USER_STATE | _READS_LIVE_WORLD | _FIXED_BY_CONSTRUCTION | set(_CLOSED_RANGE)
    assert sorted(expected) == reads
    for n in reads:
        want = ("mutable" if n in _READS_USER_STATE | _READS_LIVE_WORLD else
                "closed_range" if n in _CLOSED_RANGE else "fixed")
        assert DATA.state[n] == want, n


def test_reads_of_mutable_state_are_never_cached_and_cacheable_reads_are_fixed():
    # cb-tool audit: calendar_list_events, calendar_find_free_slot and list_devices read the
    # user's mutable state (calendar_create_event, set_lights are offered with them) yet were HIT.
    seen = Counter()
    for c in CANDS:
        calls = [parse_call(t) for t in (c.expected_answer_a, c.expected_answer_b)]
        mut = any(DATA.mutating[n] for n, _ in calls)
        live = any(not DATA.mutating[n] and _reads_mutable(n, a) for n, a in calls)
        if live and not mut:
            assert c.verification_method == "policy_no_cache", (c.query_a, c.expected_answer_a)
            assert c.verification_payload["policy"] == "time_sensitive" and c.binary_label == "MISS"
            seen["time_sensitive", c.label] += 1
        if c.verification_method == "json_schema_call":
            for n, a in calls:
                assert not DATA.mutating[n] and not _reads_mutable(n, a), (c.query_a, n)
                seen["cacheable", n] += 1
    for tool_name in ("calendar_list_events", "calendar_find_free_slot", "list_devices", "search_files",
                      "lookup_contact"):
        assert not seen["cacheable", tool_name], tool_name
    assert seen["cacheable", "list_transactions"] >= 5 and seen["time_sensitive", "EQUIV"] >= 5


def test_an_open_or_future_range_is_time_sensitive():
    past = {"account": "checking", "start_date": "2024-01-01", "end_date": "2024-01-31"}
    assert tool.call_policy("list_transactions", past) is None
    assert tool.call_policy("list_transactions", {**past, "end_date": DATA.as_of}) == "time_sensitive"
    assert tool.call_policy("list_transactions", {**past, "end_date": "2025-06-30"}) == "time_sensitive"
    c = _first(lambda c: _plain(c) and c.label == "PARA_SAFE" and "list_transactions" in c.expected_answer_a)
    name, args = parse_call(c.expected_answer_a)
    open_call = canonical_call(name, {**args, "end_date": "2025-02-28"})
    assert tool.policy(c) is None
    assert tool.policy(c.with_(expected_answer_a=open_call, expected_answer_b=open_call)) == "time_sensitive"
    assert tool.call_policy("some_bfcl_function", {}) is None


@pytest.mark.parametrize("old,new,problem", [
    ("    state: fixed\n    description: Convert a quantity", "    description: Convert a quantity",
     "tools[convert_units]: state is None"),
    ("    range_end: end_date\n", "    range_end: account\n", "tools[list_transactions]: range_end 'account'"),
    ("as_of: 2025-01-01\n", "as_of: soon\n", "as_of: 'soon' is not an ISO date"),
])
def test_bad_state_in_the_curated_file_is_a_one_line_input_error(tmp_path, monkeypatch, old, new, problem):
    assert catalog.SOURCE_FILE.read_text(encoding="utf-8").count(old) == 1
    msg = _load_error(tmp_path, monkeypatch, old, new)
    assert msg.startswith(f"sources/curated/tool.yaml: {problem}") and "\n" not in msg


def test_mutating_and_time_sensitive_rows_are_binary_miss():
    seen = Counter()
    for c in CANDS:
        calls = [parse_call(t) for t in (c.expected_answer_a, c.expected_answer_b)]
        mut = any(DATA.mutating[n] for n, _ in calls)
        ts = any(tool.reads_mutable_state(n, a) for n, a in calls)
        if mut or ts:
            assert c.verification_method == "policy_no_cache" and c.binary_label == "MISS"
            want = "mutation" if mut else "time_sensitive"
            assert c.verification_payload["policy"] == want == tool.policy(c)
            assert c.verification_payload["underlying_method"] == "json_schema_call"
            seen[(want, c.label in HIT_LABELS)] += 1
        else:
            assert c.verification_method == "json_schema_call" and tool.policy(c) is None
    assert all(seen[(p, True)] >= 5 for p in ("mutation", "time_sensitive")), seen


def test_identical_mutation_request_is_verified_miss():
    c = _first(lambda c: c.label == "EQUIV" and c.query_a == c.query_b)
    assert c.verification_payload["policy"] == "mutation" and c.binary_label == "MISS"
    assert verify(c).passed


def test_policy_claim_must_match_the_domain():
    c = _first(lambda c: c.label == "EQUIV" and c.verification_method == "policy_no_cache"
               and c.verification_payload["policy"] == "mutation")
    wrong = c.with_(verification_payload={**c.verification_payload, "policy": "time_sensitive"})
    assert verify(wrong).reason == "policy_not_held_by_domain"
    plain = _first(lambda c: c.label == "EQUIV" and _plain(c))
    claim = plain.with_(verification_method="policy_no_cache", verification_payload={"policy": "mutation"})
    assert not verify(claim).passed


# ----------------------------------------------------------------------------- quota and families

def _family_sizes(cands):
    parent = {}

    def root(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    uses = Counter()
    for c in cands:
        a, b = normalize_text(c.query_a), normalize_text(c.query_b)
        for t in {a, b}:
            uses[t] += 1
        parent[root(a)] = root(b)
    fam = Counter(root(normalize_text(c.query_a)) for c in cands)
    return uses, fam


@pytest.mark.parametrize("profile", ["v1.1", "lifted40"])
def test_quota_met_with_margin_and_plain_hits(profile):
    need = dict(load_profile(profile).matrix["tool"])
    rep = generate_verified("tool", need, profile=profile)
    for lab in LABELS:
        assert len(rep.kept[lab]) >= max(need[lab], 40) * 1.1, (lab, len(rep.kept[lab]))
    for lab in HIT_LABELS:
        plain = [c for c in rep.kept[lab] if c.binary_label == "HIT"]
        assert len(plain) >= need[lab] * 1.1 and len(plain) > len(rep.kept[lab]) / 2
    kept = [c for lab in LABELS for c in rep.kept[lab]]
    uses, fam = _family_sizes(kept)
    assert max(uses.values()) <= 3 and max(fam.values()) <= 6
    for c in kept:
        assert c.query_a != c.query_b or c.verification_method == "policy_no_cache"
        assert c.source == "curated" and c.provenance.generator == f"tool.{c.construction_method}"
        assert c.subcategory and c.real_world_grounding and c.provenance.template_id


def test_generation_is_deterministic_across_hash_seeds():
    code = ("from domains.tool import plan; from domains.base import stable_hash; "
            "print(stable_hash([c.key for c in plan()[0]]))")
    outs = []
    for seed in ("1", "987"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.append(subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env,
                                   capture_output=True, text=True, check=True).stdout)
    assert outs[0] == outs[1] and len(outs[0].strip()) == 64
