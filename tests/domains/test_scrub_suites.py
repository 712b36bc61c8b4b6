"""The scrubber against a planted suite (secrets and personal data of 40+ kinds, each in a prompt as
a user would write it: nothing may survive) and an ordinary suite (prompts full of numbers, code,
versions and dates: nothing may be replaced), and in linear time on 1 MB tokens built to make
backtracking patterns quadratic."""
from __future__ import annotations

import random
import re
import string
import time

import pytest

from domains.corpora.scrub import scrub

# (kind, prompt, values that must not survive). Test values: documentation and example numbers
# (555-01xx and Ofcom drama phone numbers, the card networks' test
# cards, the IBAN registry's examples); keys and tokens are random strings in each provider's
# documented format.
PLANTED: list[tuple[str, str, tuple[str, ...]]] = [
    ("email", "Can you draft a polite reply to maria.gonzalez84@outlook.com saying I'll be late on Monday?",
     ("maria.gonzalez84@outlook.com",)),
    ("email_plus_subdomain", "Forward the overdue invoice to j.doe+billing@mail.acme-corp.co.uk and cc me.",
     ("j.doe+billing@mail.acme-corp.co.uk",)),
    ("email_markdown_escaped", r"Reply to marlene\_zamora@yahoo.com about the delayed order.",
     ("marlene", "zamora@yahoo.com")),
    ("phone_us_brackets", "Call me back at (415) 555-0132 after 5pm, I need help with my Excel macro.",
     ("555-0132", "4155550132")),
    ("phone_us_dashes", "My cell is 212-555-0187, text me when the report is ready.", ("212-555-0187",)),
    ("phone_bare_with_context", "whatsapp me on 4155550199 once you have the Python script", ("4155550199",)),
    ("phone_intl_uk", "Our London office number is +44 20 7946 0958, write a voicemail greeting for it.",
     ("7946 0958", "+44 20")),
    ("phone_intl_france", "Écris un message : appelez-moi au +33 1 42 68 53 00 avant midi.", ("42 68 53 00",)),
    ("phone_intl_india", "my mobile +91 98765 43210 is switched off, draft an SMS apology", ("98765 43210",)),
    ("phone_00_prefix", "For the Berlin branch dial 0049 30 901820 and ask for Klaus.", ("30 901820",)),
    ("phone_national_de", "Bitte formuliere eine Absage. Telefon: 030 901820", ("030 901820",)),
    ("phone_uk_mobile", "ring me on 07700 900123 if the landlord replies", ("07700 900123",)),
    ("iban_spaced", "Please wire the deposit to DE89 3704 0044 0532 0130 00, thanks. Write the email.",
     ("3704 0044 0532 0130", "DE89")),
    ("iban_compact", "my IBAN is GB82WEST12345698765432, is that the right format for a UK transfer?",
     ("GB82WEST12345698765432",)),
    ("iban_then_word", "Send it to AT61 1904 3002 3457 3201 from the business account.", ("1904 3002 3457 3201",)),
    ("card_spaces", "charge 4111 1111 1111 1111 for the annual plan and send a receipt", ("4111 1111 1111 1111",)),
    ("card_dashes", "The card 5555-5555-5555-4444 was declined, write a complaint to the bank.",
     ("5555-5555-5555-4444",)),
    ("card_amex_compact", "Amex 378282246310005 keeps failing on checkout, what could be wrong?", ("378282246310005",)),
    ("card_cvv", "The card ends in 1111 and the CVV is 737, why does the payment fail?", ("737",)),
    ("card_expiry", "Visa 4012 8888 8888 1881 exp 03/27, is it still valid?", ("03/27", "4012 8888 8888 1881")),
    ("us_ssn", "Fill in the W-4 for me: SSN 123-45-6789, single, no dependents.", ("123-45-6789",)),
    ("us_ssn_context", "my social security number is 219099999, can I use it to open an account?", ("219099999",)),
    ("uk_national_insurance", "HMRC asked for my NI number AB 12 34 56 C, write the cover letter.",
     ("AB 12 34 56 C",)),
    ("passport", "Book the flight, passport number 533380006, expiry next year.", ("533380006",)),
    ("drivers_licence", "Renew it for me: driver's license D1234567, California.", ("D1234567",)),
    ("bank_account", "Set up direct deposit: routing number 021000021 and account 000123456789.",
     ("021000021", "000123456789")),
    ("date_of_birth", "Write a birthday poem for me, my date of birth is 14/03/1987.", ("14/03/1987",)),
    # (globally routed addresses, made up: the documentation ranges of RFC 5737 and 3849 identify
    # nobody and are left alone, tests/domains/test_scrub_international.py)
    ("ipv4", "I can't ssh into 84.247.11.93 as root anymore, what should I check?", ("84.247.11.93",)),
    ("ipv6", "Why does ping 2a02:8108:1140:5a00:7d2c:9e1b:3f40:a6c5 time out from my laptop?",
     ("2a02:8108:1140:5a00:7d2c:9e1b:3f40:a6c5",)),
    ("mac_address", "Whitelist the printer 3C:22:FB:7A:1E:09 on the router, how?", ("3C:22:FB:7A:1E:09",)),
    ("street_us", "I live at 742 Evergreen Terrace, Springfield, IL 62704. Write a letter to my landlord.",
     ("742 Evergreen Terrace", "62704")),
    ("street_uk", "Deliver the parcel to 221B Baker Street, London NW1 6XE before Friday.",
     ("221B Baker Street", "NW1 6XE")),
    ("street_de", "Meine Adresse ist Hauptstraße 12, 10115 Berlin. Schreib eine Kündigung.",
     ("Hauptstraße 12", "10115 Berlin")),
    ("po_box", "Send the cheque to P.O. Box 4521 and confirm by mail.", ("4521",)),
    ("own_name", "Hi, my name is Priya Raman and I need a cover letter for a data analyst job.", ("Priya", "Raman")),
    ("greeting_dear", "Proofread this note:\nDear Maribel,\nthe venue moved to the town hall.", ("Maribel",)),
    ("greeting_hi", "Hi Teodor, can you check whether this schedule works for the team?", ("Teodor",)),
    ("greeting_titled", "Hello Dr. Anneke Visser:\nplease find my revised abstract below.", ("Anneke", "Visser")),
    ("signature", "Please proofread my email:\nThe meeting moved to Tuesday.\n\nThanks,\nDaniel Okafor",
     ("Daniel", "Okafor")),
    ("password_prose", "my password is Tr0ub4dor&3 and it stopped working, what do I do?", ("Tr0ub4dor&3",)),
    ("password_pwd_colon", "server login root, pwd: hunter2!! why is sudo asking again?", ("hunter2!!",)),
    ("passphrase_quoted", 'the wifi password is "correct horse battery staple", make a guest sign',
     ("correct horse battery staple",)),
    ("pin", "My PIN is 4821, is that too easy to guess?", ("4821",)),
    ("env_assignment", "Why does Docker ignore DB_PASSWORD=s3cr3t-Pa55 in my .env file?", ("s3cr3t-Pa55",)),
    ("json_api_key", 'My config is {"api_key": "Zp4kQ8vT2mW9xR5n", "region": "eu"}, why 401?', ("Zp4kQ8vT2mW9xR5n",)),
    ("aws_access_key", "boto3 says invalid key for AKIAQ3EGX7TRV2LMW4NP, how to rotate it?", ("AKIAQ3EGX7TRV2LMW4NP",)),
    ("aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq84Tm1e is in my ~/.aws/credentials",
     ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq84Tm1e",)),
    ("github_pat", "git push fails with token ghp_8fK2mQ9xLp4vT7rW1nZ6yB3cD5hJ0sA2eG4u", ("ghp_8fK2mQ9xLp4vT7rW1nZ6yB3cD5hJ0sA2eG4u",)),
    ("github_fine_grained", "use github_pat_11ABCDE2Q0aB9cD8eF7gH6_iJ5kL4mN3oP2qR1sT0uV9wX8yZ7aB6cD5eF4gH3iJ2kL1mN0oP9qR "
     "in the workflow", ("github_pat_11ABCDE2Q0aB9cD8eF7gH6",)),
    ("gitlab_token", "CI variable GITLAB_TOKEN glpat-x7Kq2Lm9Pz4Rt8Wv3Yb6 stopped working", ("glpat-x7Kq2Lm9Pz4Rt8Wv3Yb6",)),
    ("slack_bot_token", "my bot uses xoxb-2048123456-4096123456789-Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1 and gets not_authed",
     ("xoxb-2048123456-4096123456789-Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1",)),
    ("slack_webhook", "curl -X POST https://hooks.slack.com/services/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 fails",
     ("VTk18siZlJXkFC3Oyn3bVYaH", "T0455ED60")),
    ("stripe_secret", "Stripe rejects sk_live_51Hq8ZxK2LmPz4Rt8Wv3Yb6Nc1Hd5 in production", ("sk_live_51Hq8ZxK2LmPz4Rt8Wv3Yb6Nc1Hd5",)),
    ("openai_key", "Here is my key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z, why do I get 429?",
     ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",)),
    ("anthropic_key", "export ANTHROPIC_API_KEY=sk-ant-api03-Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0 in bashrc?",
     ("sk-ant-api03-Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0",)),
    ("google_api_key", "Maps shows 'for development purposes only' with AIzaSyCynS5EVCRGVZXA339lNeC9mvwjI00MtWc",
     ("AIzaSyCynS5EVCRGVZXA339lNeC9mvwjI00MtWc",)),
    ("huggingface_token", "huggingface-cli login with hf_Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0Q fails", ("hf_Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0Q",)),
    ("npm_token", "publish fails, .npmrc has //registry.npmjs.org/:_authToken=npm_Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0QaBc",
     ("npm_Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0QaBc",)),
    ("sendgrid_key", "SendGrid key SG.x7Kq2Lm9Pz4Rt8Wv3Yb6Nc.Hd5Jf7Gs0QaBcDeFgHiJkLmNoPqRsTuVwXyZ012345 returns 403",
     ("SG.x7Kq2Lm9Pz4Rt8Wv3Yb6Nc",)),
    ("twilio_key", "Twilio API key SK2a9f8e7d6c5b4a3928170f6e5d4c3b2a no longer authenticates",
     ("SK2a9f8e7d6c5b4a3928170f6e5d4c3b2a",)),
    ("telegram_bot_token", "TOKEN = '6922832127:AAEm2DMKEBRO2GNeRhLONJqe4__Roc-QfiA' for my Telegram bot",
     ("6922832127:AAEm2DMKEBRO2GNeRhLONJqe4__Roc-QfiA", "AAEm2DMKEBRO2GNeRhLONJqe4")),
    ("discord_bot_token", "DISCORD_TOKEN: MTA3NTIyMzgyNDg2MzMzMDM4NA.G3Z3eL.CRAjmilw0j5TT0gPonyE-8b1deZbNyHs0hPKtI",
     ("MTA3NTIyMzgyNDg2MzMzMDM4NA",)),
    ("jwt", "Decode this for me: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", ("SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "eyJzdWIiOiIxMjM0")),
    ("rsa_private_key", "Why does ssh reject this key?\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzX8k2Lq9\n"
     "Pz4Rt8Wv3Yb6Nc1Hd5Jf7Gs0QaBc\n-----END RSA PRIVATE KEY-----\nthanks", ("MIIEowIBAAKCAQEAzX8k2Lq9",)),
    ("openssh_private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
     "-----END OPENSSH PRIVATE KEY-----\nis this ed25519?", ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",)),
    ("bearer_header", "fetch returns 401 with headers {'Authorization': 'Bearer 8f3kQ2xLp9vT7rW1nZ6yB'}",
     ("8f3kQ2xLp9vT7rW1nZ6yB",)),
    ("basic_auth_header", "curl -H 'Authorization: Basic YWRtaW46c2VjcmV0' http://intranet/ gives 403",
     ("YWRtaW46c2VjcmV0",)),
    ("url_credentials", "Connect to postgres://dbadmin:Hunter2Secret@db.internal:5432/app and count the users",
     ("dbadmin", "Hunter2Secret")),
    ("url_token_param", "why does https://api.example.com/v1/report?access_token=AbC123xyz987QwE fail?",
     ("AbC123xyz987QwE",)),
    ("azure_connection_string", "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5+Jf7Gs0Q==;"
     "EndpointSuffix=core.windows.net throws 403", ("Zx8Kq2Lm9Pz4Rt8Wv3Yb6Nc1Hd5",)),
    ("eth_address", "Send the refund to 0x52908400098527886E0F7030069857D2E4169EE7 on mainnet",
     ("52908400098527886E0F7030069857D2E4169EE7",)),
    ("btc_address", "my wallet is 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa, is the transfer confirmed?",
     ("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa",)),
    ("random_token_in_path", "curl https://api.example.com/v2/export/k9Xq2Lm7Pz4Rt8Wv3Yb6Nc1Hd5 returns 404",
     ("k9Xq2Lm7Pz4Rt8Wv3Yb6Nc1Hd5",)),
    ("hex_secret", "my deploy key fingerprint secret is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b, is it leaked?",
     ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",)),
]

# Prompts a semantic cache must see as written: numbers, code, versions, dates, prices, identifiers.
ORDINARY: list[str] = [
    "Solve x + 2 = 8 and compute 3.14159265 * 2",
    "List 259 264 22987 269 121356 in order; years 2023-2024; 10,000 items",
    "What is 123456789 * 987654321?",
    "Is 2147483647 a prime? It is also INT_MAX in C.",
    "Convert the Unix timestamp 1700000000 to a date.",
    "Fibonacci: 1 1 2 3 5 8 13 21 34 55 89 144, what comes next?",
    "primes 71 73 79 83 89 97, which are twin primes?",
    "Upgrade from Python 3.11.2 to 3.12.1 without breaking numpy 1.26.4",
    "Chrome 120.0.6099.109 crashes on Windows 10.0.19045, why?",
    "pip install torch==2.1.0 fails with CUDA 12.1",
    "What happened on 2023-02-08 and on 12/25/2023 and 25.12.2023?",
    "World War II lasted from 1939 to 1945; the Battle of Hastings was in 1066.",
    "Apollo 11 launched on 1969-07-16 at 13:32 UTC.",
    "The laptop costs $1,299.99, with tax 8.25% that is $1,407.23.",
    "Revenue grew from €1.234,56 to €4.5 million in 2022",
    "ISBN 978-0-13-468599-1 is the Pragmatic Programmer; ISBN-10 0-13-468599-7",
    "The EAN 4006381333931 on the box, what product is it?",
    "Error on line 1234 of main.py: IndexError",
    "HTTP 404 on port 8080, server at 127.0.0.1:8000 and bind 0.0.0.0",
    "subnet mask 255.255.255.0 for a /24 network",
    "Section 1.2.3 and figure 3.1.4.2 of the spec",
    "lat 37.1233212321, lng -122.25743921",
    "The store is open from 9:00 to 17:30, Monday to Friday",
    "Matrix [[1, 2], [3, 4]] times [[5, 6], [7, 8]]",
    "uuid 550e8400-e29b-41d4-a716-446655440000 in my Postgres table, how to index it?",
    "git checkout -b feature/login-page && docker run -p 5432:5432 postgres:16",
    "Load sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2 and gpt-4-0613",
    "Use model meta-llama/Llama-2-7b-chat-hf with bf16",
    "Translate 'good morning' into Portuguese.",
    "Write a haiku about autumn leaves.",
    "Teach me the basic certifications for cloud engineers",
    "Explain basic arithmetic to a child",
    "My password keeps getting rejected, what are the rules for strong passwords?",
    "How do I store an API key securely in a React app?",
    "What does Bearer mean in an Authorization header?",
    "Explain JWT versus session cookies.",
    "Write a regex for US phone numbers like (xxx) xxx-xxxx",
    "The token limit of GPT-4 is 8192 tokens; set max_tokens: 256",
    "password_length = 12\nmin_password_length = 8",
    "def check_password(password):\n    return len(password) >= 8",
    "const token = localStorage.getItem('token');",
    "api_key = os.environ['OPENAI_API_KEY']",
    "headers = {'Authorization': f'Bearer {token}'}",
    'data = {"username": username, "password": password}',
    "token = tokenizer(text)",
    "password = input('Enter your password: ')",
    "I'm a software engineer from Berlin",
    "I am Groot",
    "My name is not important, answer the question.",
    "Call me Ishmael is the first line of which novel?",
    "Hi there, write a limerick about a cat.",
    "Hello World! in Go, please.",
    "Dear Sir or Madam,\nI am writing about my order.",
    "Hey ChatGPT, what is a monad?",
    "Hi, I'm new to Rust, where do I start?",
    "Hello Please explain recursion.",
    "Dial 911 in the US and 112 in Europe",
    "Chapter 11 bankruptcy vs Chapter 7",
    "RFC 2616 and ISO 8601 timestamps like 2024-03-15T10:30:00Z",
    "invoice #20240315-0042 is overdue",
    "Amazon order 113-4567890-1234567 never arrived",
    "Room 101 in 1984 by George Orwell",
    "3 Ways to Improve Your Sleep",
    "The 5 Best Places to visit in Japan",
    "Compute the SHA-256 of the string 'abc'",
    "Sort [5, 3, 9, 1] with quicksort in Rust",
    "The ratio 16:9 and aspect 4:3",
    "In the table, row 12 has 1,024 and row 13 has 2,048",
    "Temperatures ranged from -12.5 to 38.7 degrees",
    "E = mc^2 where c = 299792458 m/s",
    "The population of Tokyo is 13,960,000 (2021)",
    "Zip code 90210 is Beverly Hills",
    "Run `ls -la /usr/local/bin` and `chmod 755 script.sh`",
    "Flight LH 400 departs at 10:05 from gate B44",
    "regex ^\\d{3}-\\d{2}-\\d{4}$ validates what format?",
    "What is the capital of France?",
    "Compress this bit string: 100101101101101010011110101110011001101010101011111111",
    'RABBITMQ_DSN="amqp://$RABBITMQ_USER:$RABBITMQ_PASS@$RABBITMQ_HOST:5672/" is not expanded, why?',
]


@pytest.mark.parametrize("kind, prompt, values", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_item_does_not_survive(kind, prompt, values):
    out = scrub(prompt)
    assert out.scrubbed, kind
    for value in values:
        assert value not in out.text, f"{kind}: {value!r} survived in {out.text!r}"
    assert re.search(r"\[[A-Z_]+\]", out.text)


def test_planted_suite_covers_forty_kinds_and_none_survives():
    assert len({k for k, _, _ in PLANTED}) >= 40
    survived = [(k, v) for k, prompt, values in PLANTED for v in values if v in scrub(prompt).text]
    print(f"\nplanted: {len(PLANTED) - len({k for k, _ in survived})}/{len(PLANTED)} kinds caught")
    assert survived == []


@pytest.mark.parametrize("prompt", ORDINARY)
def test_ordinary_prompt_is_left_alone(prompt):
    assert scrub(prompt) == (prompt, False, ())


def test_false_positive_rate_on_ordinary_prompts():
    changed = [p for p in ORDINARY if scrub(p).scrubbed]
    print(f"\nordinary prompts changed: {len(changed)}/{len(ORDINARY)}")
    assert not changed


def test_placeholders_are_stable_and_idempotent():
    for _, prompt, _ in PLANTED:
        once = scrub(prompt)
        assert scrub(prompt) == once
        assert scrub(once.text).text == once.text, prompt


# 1 MB tokens without a space, each built against one pattern family: long runs that a pattern
# reads and then fails on, separators that start a new attempt at every character.
_UNITS = ["a", "1", "a.", "a@", "x@a.", "a-", "1-", "1.", "4111-", "+1", "(1)", "a://b:", "eyJ-", "sk-", "AKIA",
          "password=", "pwd:", "DE89", "12:", "0x", "_a", "token=token", "=", "/", "00:", "1:", "::", "1.1.1.1.",
          "?key=", "a.b@", "-----BEGIN RSA PRIVATE KEY-----",
          # the second round's rules: phones after a country code, e-mail in any script, names and dates of
          # birth after their words, addresses in other scripts and their postcode and city, credentials on
          # command lines, CIDR blocks and digests
          "+1.", "+91-", "ö@ü.", "a@ü.ü", "用@例.", "我叫", "my name is Aa ", "Меня зовут Аа ", "〒1", "東京都", "路1号",
          "서울시 강남구 ", "ул. Аа ", "ul. A", "[ADDRESS], Aa", ", 12345 Aa", ", Aa 400001", "-u a:", "-U a%",
          "--password ", "mysql -p", "sshpass -p ", "born ", "Geburtsdatum ", "geboren ", "생년월일", "1年",
          "3. Mai 1990 ", "10.0.0.0/", "sha256:", "sha512-"]


def _tokens():
    rnd = random.Random(12)
    size = 1_000_000
    for unit in _UNITS:
        yield unit, (unit * (size // len(unit) + 1))[:size]
    yield "random base64", "".join(rnd.choice(string.ascii_letters + string.digits + "+/") for _ in range(size))
    yield "random printable", "".join(rnd.choice(string.printable.strip()) for _ in range(size))


@pytest.mark.parametrize("name, token", list(_tokens()), ids=lambda v: repr(v)[:24])
def test_one_megabyte_token_is_scrubbed_in_linear_time(name, token):
    # CPU time, not wall time: other processes on the machine must not fail the test.
    started = time.process_time()
    scrub(token)
    took = time.process_time() - started
    assert took < 2.0, f"{name}: {took:.2f}s for 1 MB"


def test_time_grows_linearly_with_the_token():
    """Quadratic patterns show as a 16x slowdown for a 4x longer token; linear ones as ~4x."""
    for unit in ("x@a.", "1-", "a://b:", "password=", "4111-", "東京都", "born ", "a@ü.ü", "-u a:", "[ADDRESS], Aa"):
        times = []
        for size in (250_000, 1_000_000):
            token = (unit * (size // len(unit) + 1))[:size]
            started = time.process_time()
            scrub(token)
            times.append(time.process_time() - started)
        assert times[1] < 8 * times[0] + 0.2, (unit, times)
