"""The PII/secret scrubber: unit cases, and a planted ShareGPT corpus whose planted values must not
survive into any field of any mined candidate."""
import json

import pytest

from domains.base import canonical_json
from domains.corpora.scrub import scrub

PLANTED = {
    "email": "jane.roe+work@example-mail.co.uk",
    "phone_intl": "+44 20 7946 0958",
    "phone_us": "(555) 123-4567",
    "phone_bare": "555-867-5309",
    "openai": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
    "github": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws": "AKIAQ3EGX7PLANTED123",
    "bearer": "eyPlantedBearer42token.xyz",
    "hex": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "cred_user": "dbadmin",
    "cred_pass": "Hunter2Secret",
    "password": "pl4ntedPassw0rd",
}


@pytest.mark.parametrize("text, kind, placeholder", [
    (f"mail {PLANTED['email']} now", "email", "[EMAIL]"),
    (f"call {PLANTED['phone_intl']}.", "phone", "[PHONE]"),
    (f"call {PLANTED['phone_us']}", "phone", "[PHONE]"),
    (f"call {PLANTED['phone_bare']}, thanks", "phone", "[PHONE]"),
    (f"key={PLANTED['openai']}", "api_key", "[API_KEY]"),
    (f"token {PLANTED['github']}", "token", "[TOKEN]"),
    (f"aws {PLANTED['aws']}", "api_key", "[API_KEY]"),
    (f"Authorization: Bearer {PLANTED['bearer']}", "bearer_token", "Bearer [TOKEN]"),
    (f"sha {PLANTED['hex']}", "secret", "[SECRET]"),
    (f"postgres://{PLANTED['cred_user']}:{PLANTED['cred_pass']}@db.internal:5432/app", "url_credentials", "[URL_WITH_CREDENTIALS]"),
    (f"password = {PLANTED['password']}", "secret_assignment", "[SECRET]"),
])
def test_each_kind_is_replaced_by_its_placeholder(text, kind, placeholder):
    out = scrub(text)
    assert out.scrubbed and kind in out.kinds
    assert placeholder in out.text
    assert not any(v in out.text for v in PLANTED.values())


@pytest.mark.parametrize("text", [
    "Solve x + 2 = 8 and 3.14159265 * 2",
    "List 259 264 22987 269 121356 in order; years 2023-2024; 10,000 items",
    "lat 37.1233212321, lng -122.25743921",
    "Teach me the basic certifications for cloud engineers",
    "Translate 'good morning' into Portuguese.",
])
def test_ordinary_text_is_left_alone(text):
    assert scrub(text) == (text, False, ())


def test_scrub_is_deterministic_and_idempotent():
    text = f"{PLANTED['email']} {PLANTED['openai']} {PLANTED['phone_us']}"
    once = scrub(text)
    assert scrub(text) == once
    assert scrub(once.text).text == once.text


def _planted_corpus(root):
    """ShareGPT-format corpus: each pair differs in surface or in one answer-determining token and
    carries planted PII/secrets, so the mined candidates would leak them if scrubbing failed."""
    p = PLANTED
    prompts = [
        f"Email {p['email']} the sales report about Python and call {p['phone_intl']}.",
        f"email {p['email']} the sales report about python and call {p['phone_intl']}",
        f"My OpenAI key is {p['openai']}; write a Python script that sorts a list in ascending order.",
        f"My OpenAI key is {p['openai']}; write a Python script that sorts a list in descending order.",
        f"Using token {p['github']} and AWS key {p['aws']}, list the 5 largest files in the repo.",
        f"Using token {p['github']} and AWS key {p['aws']}, list the 7 largest files in the repo.",
        f"Connect to postgres://{p['cred_user']}:{p['cred_pass']}@db.internal:5432/app and count the users in Rust.",
        f"connect to postgres://{p['cred_user']}:{p['cred_pass']}@db.internal:5432/app and count the users in rust!",
        f"Call {p['phone_us']} or {p['phone_bare']} and send header 'Authorization: Bearer {p['bearer']}' to fetch order 12.",
        f"Call {p['phone_us']} or {p['phone_bare']} and send header 'Authorization: Bearer {p['bearer']}' to fetch order 13.",
        f"My password = {p['password']} and my commit is {p['hex']}. Explain git rebase to me.",
        f"my password = {p['password']} and my commit is {p['hex']}. explain git rebase to me",
    ]
    rows = [{"id": f"pl{i}_0", "conversations": [{"from": "human", "value": t}, {"from": "gpt", "value": "ok"}]}
            for i, t in enumerate(prompts)]
    (root / "sharegpt").mkdir(parents=True)
    (root / "sharegpt" / "planted.json").write_text(json.dumps(rows), encoding="utf-8")
    return root


def test_nothing_planted_survives_into_any_candidate(tmp_path):
    from domains.corpora.mining import mine, shards
    from sources.datasets_dir import DatasetsDir

    ds = DatasetsDir(_planted_corpus(tmp_path / "datasets"))
    assert shards(ds) == ["sharegpt/planted.json"]
    res = mine(ds, "sharegpt/planted.json", cache_dir=tmp_path / "cache")
    # The pairs must actually be mined, or the leak check below would pass vacuously.
    assert len(res.candidates) >= 5, (res.candidates, res.drops)
    assert {c.label for c in res.candidates} == {"EQUIV", "ADVERSARIAL"}
    assert all(c.provenance.scrubbed for c in res.candidates)
    for c in res.candidates:
        blob = canonical_json({k: getattr(c, k) for k in c.__dataclass_fields__ if k != "provenance"}
                              | {"provenance": c.provenance.to_dict()})
        blob_lower = blob.casefold()
        for name, value in PLANTED.items():
            assert value.casefold() not in blob_lower, f"{name} leaked into {c.provenance.source_record}"
