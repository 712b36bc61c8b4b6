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
    (f"signing secret {PLANTED['hex']}", "secret", "[SECRET]"),  # a hex string named as a secret
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
    "sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b is the commit that broke the build",  # a digest is nobody's
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
        f"My password = {p['password']} and my webhook secret is {p['hex']}. Explain git rebase to me.",
        f"my password = {p['password']} and my webhook secret is {p['hex']}. explain git rebase to me",
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
    res = mine(ds, ["sharegpt/planted.json"], cache_dir=tmp_path / "cache")
    # The pairs must actually be mined, or the leak check below would pass vacuously.
    near = [c for c in res.candidates if c.provenance.template_id not in ("unrelated", "related_topic")]
    assert len(near) >= 5, (res.candidates, res.drops)
    assert {c.label for c in near} == {"EQUIV", "ADVERSARIAL"}
    assert all(c.provenance.scrubbed for c in near)
    for c in res.candidates:     # every candidate, pairs of unrelated openings included
        blob = canonical_json({k: getattr(c, k) for k in c.__dataclass_fields__ if k != "provenance"}
                              | {"provenance": c.provenance.to_dict()})
        blob_lower = blob.casefold()
        for name, value in PLANTED.items():
            assert value.casefold() not in blob_lower, f"{name} leaked into {c.provenance.source_record}"


# Written for the multi-turn test: secrets and personal data as users paste them into earlier turns
# and as answers repeat them (documentation-style values: test card numbers, the IBAN registry's
# example, 555 and Ofcom drama phone numbers, random strings in each provider's key format).
EARLIER = {
    "openai_key": "sk-proj-Qw7Er9Ty2Ui4Op6As8Df1Gh3Jk5Lz",
    "aws_key": "AKIAZ7Q2W4E6R8T0Y1U3",
    "github_token": "ghp_Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2Yg1Uf0Id9Os8",
    "jwt_header": "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9",
    "jwt_payload": "eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIn0",
    "jwt_signature": "Xk2Lq9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0QaBcDeFgHiJk",
    "private_key_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "private_key_line2": "q8Zr4Lm2Np6Xt0Vb3Kc7Wd1Fg5Hj9Sa2Ye4Uo8Ti6Rp0",
    "email": "olivia.marsh77@fastmail.example.org",
    "phone_us": "(312) 555-0148",
    "phone_uk": "+44 113 496 0712",
    "card": "5105 1051 0510 5100",
    "card_compact": "4000056655665556",
    "iban": "GB33BUKB20201555555555",
    "iban_spaced": "FR76 3000 6000 0112 3456 7890 189",
    "street": "88 Larkspur Crescent",
    "zip_city": "Portland, OR 97205",
    "url_user": "svc_backup",
    "url_password": "Gr8-Pl4nted-Pw",
    "password": "Blue!Harbor#2291",
}


def _earlier_turn_corpus(root):
    """Conversations whose secrets sit only in EARLIER turns and in the ASSISTANT's answers; their
    final messages are follow-ups ('make it shorter', 'continue') sent after different conversations,
    so the mined rows carry those turns as context_a / context_b."""
    p = EARLIER
    jwt = f"{p['jwt_header']}.{p['jwt_payload']}.{p['jwt_signature']}"
    key_block = (f"-----BEGIN PRIVATE KEY-----\n{p['private_key_body']}\n{p['private_key_line2']}\n"
                 "-----END PRIVATE KEY-----")
    convs = [
        [f"My API key is {p['openai_key']} and my AWS key is {p['aws_key']}. Write a script that lists my S3 buckets.",
         f"Here is the script; it reads {p['openai_key']} from the environment, uses {p['aws_key']} for boto3 "
         f"and pushes with {p['github_token']}.",
         "make it shorter"],
        [f"Write a reminder email to {p['email']}; my phone is {p['phone_us']} and my office line {p['phone_uk']}.",
         f"Dear Olivia ({p['email']}), please call me at {p['phone_us']} or {p['phone_uk']}.",
         "make it shorter"],
        [f"Why does this JWT fail: {jwt}? It was signed with this key:\n{key_block}",
         f"The token {jwt} uses RS256; the key\n{key_block}\nis a PKCS#8 RSA key, so check the algorithm.",
         "continue"],
        [f"Pay the invoice with card {p['card']} or {p['card_compact']}, or wire it to {p['iban']} / {p['iban_spaced']}.",
         f"I can't make payments, but to wire money to {p['iban']} from card {p['card']} you would ask your bank.",
         "continue"],
        [f"I moved to {p['street']}, {p['zip_city']}. Back up to https://{p['url_user']}:{p['url_password']}"
         f"@backup.example.net/vault with password = {p['password']}",
         f"Sure: rsync to https://{p['url_user']}:{p['url_password']}@backup.example.net/vault from {p['street']}.",
         "make it shorter"],
        [f"Draft a note for the landlord at {p['street']}, {p['zip_city']}: reach me at {p['email']}.",
         f"Dear landlord of {p['street']}, {p['zip_city']}, please write to {p['email']} or call {p['phone_uk']}.",
         "make it shorter"],
    ]
    rows = []
    for k, (ask, answer, final) in enumerate(convs):
        rows.append({"id": f"et{k}_0", "conversations": [
            {"from": "human", "value": "Hello! I have a few questions today."}, {"from": "gpt", "value": "Of course."},
            {"from": "human", "value": ask}, {"from": "gpt", "value": answer}, {"from": "human", "value": final},
            {"from": "gpt", "value": "Done."}]})
    (root / "sharegpt").mkdir(parents=True)
    (root / "sharegpt" / "earlier_turns.json").write_text(json.dumps(rows), encoding="utf-8")
    return root


def _leaks(res) -> dict[str, list[str]]:
    """Planted name -> the rows (source_record) whose any field, context and provenance included, holds it."""
    out: dict[str, list[str]] = {}
    for c in res.candidates:
        blob = canonical_json({k: getattr(c, k) for k in c.__dataclass_fields__ if k != "provenance"}
                              | {"provenance": c.provenance.to_dict()}).casefold()
        for name, value in EARLIER.items():
            if value.casefold() in blob:
                out.setdefault(name, []).append(c.provenance.source_record)
    return out


def test_nothing_planted_in_earlier_turns_or_answers_survives_in_any_row(tmp_path, monkeypatch):
    from domains.corpora.mining import mine, turns
    from domains.corpora.scrub import Scrubbed
    from sources.datasets_dir import DatasetsDir

    ds = DatasetsDir(_earlier_turn_corpus(tmp_path / "datasets"))
    res = mine(ds, ["sharegpt/earlier_turns.json"], cache_dir=tmp_path / "cache")
    multi = [c for c in res.candidates if c.domain == "multi_turn"]
    # Every conversation reaches a row, its planted turns in the context ('make it shorter' pairs
    # conversations 0 and 1, 4 and 5; 'continue' pairs 2 and 3) ...
    assert sorted(c.provenance.source_record for c in multi) == [
        "et0_0#4|et1_0#4", "et2_0#4|et3_0#4", "et4_0#4|et5_0#4"], res.drops
    assert all(c.context_a and c.context_b and c.provenance.scrubbed for c in multi)
    assert _leaks(res) == {}
    # ... so without the scrubber every planted value would be in a row: the check above can fail.
    monkeypatch.setattr(turns, "scrub", lambda text: Scrubbed(text, False, ()))
    unscrubbed = mine(ds, ["sharegpt/earlier_turns.json"], cache_dir=tmp_path / "cache")
    assert set(_leaks(unscrubbed)) == set(EARLIER)
