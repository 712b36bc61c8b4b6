"""The scrubber's patterns, in the order they run (domains.corpora.scrub gives each its replacement).

Written for linear time under Python's backtracking `re`:
- a pattern whose first part is an unbounded run checks the character before its first one with a
  lookbehind excluding the run's own characters, so it is tried once per run, never once per
  character of it; everything after the start is bounded, or cannot fail after a long scan;
- every pattern starts with a literal or a character class, never with a lookbehind or an
  IGNORECASE word, so `re` skips to the places it can start (`_words` spells case-insensitive
  keywords that way); a lookbehind comes right after the first character;
- a gate (strings of which the lower-cased text must hold one) skips rules that cannot match.
Key formats follow the providers' documented prefixes (the ones detect-secrets and gitleaks match).
"""
from __future__ import annotations

import re
from collections import defaultdict

from domains.corpora import scrub_patterns_intl as intl


def _ci(fragment: str) -> str:
    """`fragment` with each letter outside escapes and character classes made [Xx]."""
    out, i, in_class = [], 0, False
    while i < len(fragment):
        ch = fragment[i]
        if ch == "\\":
            out.append(fragment[i:i + 2])
            i += 2
            continue
        in_class = (in_class or ch == "[") and ch != "]"
        out.append(f"[{ch.upper()}{ch.lower()}]" if ch.isalpha() and not in_class and ch.upper() != ch.lower() else ch)
        i += 1
    return "".join(out)


def _words(*phrases: str, boundary: str = "A-Za-z") -> str:
    """Case-insensitive alternatives `phrases` (regex fragments starting with a letter) as one
    group that starts with a character class, so `re` can skip to its possible first letters; not
    preceded by a character of `boundary`."""
    by_first: dict[str, list[str]] = defaultdict(list)
    for p in phrases:
        by_first[p[0].lower()].append(p[1:])
    firsts = "".join(c.upper() + c.lower() for c in sorted(by_first))
    alts = "|".join(f"(?<=[{c.upper()}{c.lower()}])(?:{'|'.join(_ci(r) for r in sorted(rests, key=len, reverse=True))})"
                    for c, rests in sorted(by_first.items()))
    behind = f"(?<![{boundary}][{firsts}])" if boundary else ""
    return f"(?:[{firsts}]{behind}(?:{alts}))"


_KEY = r"A-Za-z0-9_-"   # characters of URL-safe tokens
_SEP = "[_.-]?"

# Names of secrets in assignments and config: DB_PASSWORD=..., "api_key": "...", token: ...
_SECRET_NAMES = _words(
    "password", "passwd", "passphrase", "passcode", "pwd", f"secret{_SEP}access{_SEP}key", f"secret{_SEP}key",
    "secret", f"api{_SEP}key", f"access{_SEP}key(?:{_SEP}id)?", f"private{_SEP}key", f"access{_SEP}token",
    f"auth{_SEP}token", f"refresh{_SEP}token", f"session{_SEP}token", f"bearer{_SEP}token", "token",
    f"client{_SEP}secret", "credentials?", f"signing{_SEP}key", f"encryption{_SEP}key", f"master{_SEP}key",
    f"license{_SEP}key", f"app{_SEP}key", f"consumer{_SEP}secret", f"webhook{_SEP}secret")
_CAMEL_NAMES = (r"[PSACTR](?<=[a-z0-9][PSACTR])(?:(?<=P)(?:assword|asswd|assphrase|wd|rivateKey)"
                r"|(?<=S)(?:ecretKey|ecret)|(?<=A)(?:piKey|PIKey|ccessKey|ccessToken|uthToken)|(?<=R)efreshToken"
                r"|(?<=T)oken|(?<=C)(?:lientSecret|redentials?))")
# The same in prose: "my password is ...", "the API key for staging was ...".
_PROSE_NAMES = _words("password", "passwd", "passphrase", "passcode", "pwd", "pin(?: code| number)?", "api[ _-]?key",
                      "secret[ _-]?key", "access[ _-]?key", "access[ _-]?token", "auth[ _-]?token", "bearer[ _-]?token",
                      "private[ _-]?key", "client[ _-]?secret", "credentials", "wi-?fi key", "wpa key")
_VALUE_AFTER = r"""(?:(?P<q>["'`])(?P<qv>[^\r\n]{0,200}?)(?P=q)|(?P<bv>[^\s"'`]{1,200}))"""
_VERB = r"\s{0,3}(?:(?i:is)|:|#|=)?\s{0,3}"

_ADDRESS_SUFFIX = (r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
                   r"Close|Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Trail|Row|Alley|Gardens|Grove|"
                   rf"Mews|Plaza|{intl.INDIAN_STREETS}")
_NOT_STREET = r"(?:The|Supreme|High|District|Federal|Appeals?|Circuit|Crown|County|Family|Magistrates|Claims|Tax)\b"
_UNIT = r"(?:,?[ \t]{1,3}(?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|#)\.?[ \t]{0,2}#?[ \t]{0,2}[A-Za-z0-9-]{1,6})?"
_CITY_ZIP = (r"(?:,[ \t]{0,2}[A-Z][a-z][A-Za-z.'-]{0,24}(?:[ \t][A-Z][a-z][A-Za-z.'-]{0,24}){0,2})?"
             r"(?:,?[ \t]{1,2}(?:[A-Z]{2}[ \t]{1,2}\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?[ \t]?\d[A-Z]{2}"
             r"|(?:\d{4,6}|[1-9]\d{2}[ \t]\d{3})(?!\d)))?")
_PERSON = r"[A-Z][a-zà-ÿ'’-]{1,30}"
_SSN_NAMES = _words("ssn", r"social security(?: number| no\.?| #)?", r"social insurance(?: number| no\.?| #)?")
# Calle/Via ... 12, capitalised (so "via DisplayPort 1" is not an address)
_STREET_FIRST = r"[ACPRV](?<![\w][ACPRV])(?:(?<=C)(?:alle|orso)|(?<=A)venida|(?<=P)iazza|(?<=R)ua|(?<=V)(?:iale|ia))"
_PO_BOX = _words(r"p\.?\s?o\.?\s?box", "postfach", boundary=r"\w")

_ID_NAMES = _words("passport", "driver.?s? licen[cs]e", "driving licen[cs]e", "licen[cs]e number", "national id",
                   "id card", "identity card", "aadhaa?r", "pan card", "nhs number", "medical record", "patient id",
                   "member(?:ship)? id", "tax id", "tax number", "steuer-?id", "personalausweis", "codice fiscale",
                   "insurance id", "policy number", "national insurance(?: number)?", "ni number")
_ID_ACRONYMS = r"[NDCMT](?<![A-Za-z][NDCMT])(?:(?<=N)(?:INO|IE|IF|HS)|(?<=D)NI|(?<=C)(?:PF|URP)|(?<=M)RN|(?<=T)FN)"
# "my name is" and its equivalents in other languages (scrub_patterns_intl), then the name in any script
_WORD = r"\w"
_NAME_INTRO = (rf"(?:{_words(*intl.NAME_INTROS, boundary=_WORD)}|{_words(*intl.NAME_INTROS_UNCASED, boundary='')})"
               rf"[ \t]{{0,3}}[:：]?[ \t　]{{0,3}}(?:{intl.TITLES})?")
_DOB_WORDS = rf"(?:{_words(*intl.DOB_WORDS, boundary=_WORD)}(?!\w)|{_words(*intl.DOB_WORDS_UNCASED, boundary='')})"
_RU_STREET = _words(*intl.RU_STREET_WORDS, boundary=_WORD)
# A salutation opening a line: "Dear Olivia,", "Hi Tom!", "Hello Dr. Ana Silva:" (the name, 1-3
# capitalised words, must end the salutation). Not a person: the words of _NOT_ADDRESSEE.
_GREETING = r"(?i:dear|hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening))"
_NOT_ADDRESSEE = (r"(?:Sir|Sirs|Madam|Madame|Ma'am|Team|All|Everyone|Everybody|There|World|Friends?|Folks|Guys|"
                  r"Colleagues|Students|Parents|Members|Readers|Customers?|Clients?|Valued|Hiring|Recruiter|Admissions|"
                  r"Diary|Mom|Mum|Dad|Chat|ChatGPT|Chatgpt|GPT|Bard|Claude|Gemini|Copilot|Assistant|Bot|Siri|Alexa|"
                  r"Google|Cortana|Openai|OpenAI|Again|Back|Guest|User|Users|Reader|Manager|Sales|Support|Both|Dr|Mr|Mrs|Ms|Miss|Prof|Professor|Please|Thanks|Thank|Sorry|Okay|Ok)"
                  r"(?![a-zà-ÿ'’-])")
_CLOSING = (r"(?i:(?:best|kind|warm)?\s?(?:regards|wishes|thanks|thank you|sincerely|cheers"
            r"|yours(?: sincerely| truly| faithfully)?))")
_OTHER_KEYS = (r"[a-zGp](?<![A-Za-z0-9][a-zGp])(?:(?<=d)(?:api[0-9a-f]{32}|o[opr]_v1_[0-9a-f]{64})"
               r"|(?<=s)(?:hp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}|q0(?:atp|csp)-[A-Za-z0-9_-]{22,}|ecret_[A-Za-z0-9]{43})"
               r"|(?<=r)8_[A-Za-z0-9]{37}|(?<=g)sk_[A-Za-z0-9]{48,}|(?<=p)plx-[A-Za-z0-9]{40,}"
               r"|(?<=w)hsec_[A-Za-z0-9]{24,}|(?<=G)OCSPX-[A-Za-z0-9_-]{20,}|(?<=n)tn_[A-Za-z0-9]{40,})")
_SECRET_GATE = ("pass", "pwd", "secret", "key", "token", "cred")

# (kind, pattern, flags, gate): the pattern runs only if the lower-cased text contains one of the
# gate's strings or the text matches one of its patterns (None: always).
Gate = tuple[str | re.Pattern, ...] | re.Pattern | None
_TABLE: list[tuple[str, str, int, Gate]] = [
    # --- blocks and URLs that contain everything later rules look for
    ("private_key", r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----.*?"
                    r"(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S, ("-----begin",)),
    ("private_key", r"PuTTY-User-Key-File-\d: .*?(?:Private-MAC: [0-9a-f]+|\Z)", re.S, ("putty-user-key",)),
    ("url_credentials", r"[A-Za-z](?<![A-Za-z0-9+.-][A-Za-z])[A-Za-z0-9+.-]{0,30}://[^\s/:@]+:[^\s/@]+@[^\s/?#]+", 0,
     ("://",)),
    ("url_secret_param", r"([?&;#](?i:access_token|id_token|refresh_token|auth_token|token|api_key|apikey|api-key|"
                         r"key|client_secret|secret|password|passwd|pwd|sig|signature|x-amz-signature|"
                         r"x-amz-credential|x-amz-security-token|code|session_?id|sid|pass)=)([^&\s#\"'<>]{6,})", 0,
     ("=",)),
    ("webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+", 0, ("hooks.slack",)),
    ("webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+", 0, ("webhooks",)),
    ("webhook", r"https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/\S+", 0, ("webhookb2",)),
    # in any script ("jörg@münchen.de"); a backslash inside the local part: Markdown-escaped "jane\\_roe@..."
    ("email", intl.EMAIL, 0, ("@",)),
    # --- fixed key and token formats
    ("api_key", rf"sk-(?<![A-Za-z0-9]sk-)(?:proj-|ant-(?:api|admin)\d\d-|svcacct-|admin-|live-|test-|or-v1-)?"
                rf"[{_KEY}]{{16,}}", 0, ("sk-",)),
    ("api_key", r"A(?<![A-Z0-9]A)(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)[A-Z0-9]{16}(?![A-Z0-9])", 0,
     ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka")),
    ("api_key", rf"AIza(?<![{_KEY}]AIza)[{_KEY}]{{35}}", 0, ("aiza",)),
    ("api_key", r"[spr]k_(?<![A-Za-z0-9][spr]k_)(?:live|test)_[A-Za-z0-9]{16,}", 0, ("k_live_", "k_test_")),
    ("api_key", r"SG\.(?<![A-Za-z0-9]SG\.)[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", 0, ("sg.",)),
    ("api_key", r"SK(?<![A-Za-z0-9]SK)[0-9a-f]{32}(?![0-9A-Za-z])", 0, ("sk",)),
    ("api_key", _OTHER_KEYS, 0,
     ("dapi", "_v1_", "shp", "r8_", "gsk_", "pplx-", "sq0", "whsec_", "gocspx-", "ntn_", "secret_")),
    ("token", r"g(?<![A-Za-z0-9]g)(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{40,}|"
              r"l(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_-]{20,})", 0,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "gl")),
    ("token", r"x(?<![A-Za-z0-9]x)(?:ox[abposre]-[A-Za-z0-9-]{10,}|app-\d-[A-Za-z0-9-]{10,})", 0, ("xox", "xapp-")),
    ("token", r"[hnpy](?<![A-Za-z0-9][hnpy])(?:(?<=h)f_[A-Za-z0-9]{30,}|(?<=n)pm_[A-Za-z0-9]{36}"
              r"|(?<=p)ypi-AgE[A-Za-z0-9_-]{50,}|(?<=y)a29\.[A-Za-z0-9_-]{20,})", 0, ("hf_", "npm_", "pypi-", "ya29.")),
    ("token", rf"\d(?<!\d\d)\d{{7,9}}:AA[{_KEY}]{{33}}(?![{_KEY}])", 0, (":aa",)),                   # Telegram bot
    ("token", rf"[MNO](?<![{_KEY}][MNO])[{_KEY}]{{23,25}}\.[{_KEY}]{{6}}\.[{_KEY}]{{27,38}}(?![{_KEY}])", 0,
     (".",)),                                                                                           # Discord bot
    ("jwt", rf"eyJ(?<![{_KEY}]eyJ)[{_KEY}]{{5,}}\.[{_KEY}]{{5,}}\.[{_KEY}]{{5,}}", 0, ("eyj",)),
    ("auth_header", rf"({_words('authorization', boundary='')}:\s{{0,3}}(?i:token|digest|apikey|key)\s{{1,3}})\S{{8,}}",
     0, ("authorization",)),
    ("bearer_token", r"([Bb](?<![A-Za-z][Bb])(?:earer|EARER|asic|ASIC))\s{1,3}([A-Za-z0-9._~+/=-]{8,})", 0,
     ("bearer", "basic")),
    ("connection_secret", rf"({_words('accountkey', 'sharedaccesskey', 'sharedaccesssignature')}=)([^;\s\"']{{3,}})",
     0, ("accountkey", "sharedaccess")),
    # --- credentials on command lines: curl -u user:password, mysql -pSECRET, sshpass -p SECRET
    *[("cli_credentials", p, 0, gate) for p, gate in intl.CLI_CREDENTIALS],
    # --- values named by their context
    ("secret_assignment", rf"(?P<name>{_SECRET_NAMES}(?:[_.-][A-Za-z0-9_.-]{{0,30}}?|\d)?)\\?[\"']?[ \t]{{0,3}}"
                          rf"(?:=>|:=|[:=])[ \t]{{0,3}}{_VALUE_AFTER}", 0, _SECRET_GATE),
    ("secret_assignment", rf"(?P<name>{_CAMEL_NAMES}\d?)[\"']?[ \t]{{0,3}}(?:=>|:=|[:=])[ \t]{{0,3}}{_VALUE_AFTER}", 0,
     _SECRET_GATE),
    ("password", rf"(?P<name>{_PROSE_NAMES})(?:\s(?i:for|to|of|on|at|in)(?:\s\S{{1,40}}){{1,5}}?)?"
                 rf"(?:[ \t]{{1,3}}(?i:is|was|are)[ \t]{{1,3}}:?|['’]s[ \t]{{1,3}})[ \t]{{0,3}}{_VALUE_AFTER}", 0,
     ("pass", "pwd", "pin", "key", "token", "secret", "cred")),
    ("password_bare", rf"{_words('password', 'passwd', 'pwd')}[ \t]{{1,3}}(?P<bv>\S{{4,200}})", 0, ("passw", "pwd")),
    ("card_cvv", rf"{_words('cvv2?', 'cvc2?', 'cid', 'security code', 'card verification (?:code|value)')}\s{{0,3}}"
                 r"(?:(?i:is|no\.?|number)|:|=|#)?\s{0,3}(\d{3,4})(?!\d)", 0,
     ("cvv", "cvc", "cid", "security code", "verification")),
    ("card_expiry", rf"{_words('exp(?:iry|iration)?(?: date)?', 'valid (?:thru|through|until)', 'expires')}\s{{0,3}}"
                    r"(?:(?i:is|on)|:|=)?\s{0,3}((?:0[1-9]|1[0-2])\s?[/-]\s?(?:\d{4}|\d{2}))(?![\d/.-])", 0,
     ("exp", "valid")),
    # --- generic secrets
    ("crypto_wallet", r"[13b](?<![A-Za-z0-9][13b])(?:(?<=b)c1[ac-hj-np-z02-9]{11,71}"
                      r"|(?<=[13])[1-9A-HJ-NP-Za-km-z]{25,34})(?![A-Za-z0-9])", 0, None),
    ("secret", r"0x(?<![\w]0x)[0-9a-fA-F]{32,}(?![\w])|[0-9a-fA-F](?<![\w][0-9a-fA-F])[0-9a-fA-F]{31,}\b", 0, None),
    ("high_entropy", r"[A-Za-z0-9+/=_-](?<![A-Za-z0-9+/=_-][A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{19,}", 0, None),
    # --- bank and identity numbers
    ("iban", r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,4})?"
             r"(?![A-Za-z0-9])", 0, None),
    ("ssn", r"\d(?<![\d-]\d)\d{2}([- ])\d{2}\1\d{4}(?![\d-])", 0, None),
    ("ssn_context", rf"(?:{_SSN_NAMES}|[SIET](?<![A-Za-z][SIET])(?:(?<=S)IN|(?<=I)TIN|(?<=T)IN|(?<=E)IN))"
                    r"\s{0,3}(?:(?i:is)|:|#|=)?\s{0,3}(\d{3}[- ]?\d{2}[- ]?\d{4}|\d{9})(?!\d)", 0,
     ("ssn", "social", re.compile(r"SIN|TIN|EIN"))),
    ("national_id", r"[A-CEGHJ-PR-TW-Z](?<![A-Za-z0-9][A-Z])(?<!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-NPR-TW-Z] ?"
                    r"\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])", 0, None),                    # UK National Insurance
    ("id_context", rf"(?:{_ID_NAMES}|{_ID_ACRONYMS})(?:\s(?i:number|no\.?|num|#|id|code))?{_VERB}"
                   r"([A-Z0-9][A-Z0-9 .-]{3,22}[A-Z0-9])(?![A-Za-z0-9])", 0,
     ("passport", "licen", "national", "id card", "identity card", "aadha", "pan card", "nhs number", "medical record",
      "patient id", "member", "tax", "steuer", "personalausweis", "codice", "insurance", "policy number", "ni number",
      re.compile(r"NINO|NIE|NIF|NHS|DNI|CPF|CURP|MRN|TFN"))),
    ("bank_account", rf"{_words('bank account', 'account', 'acct', 'routing', 'aba', 'sort code', 'bsb')}"
                     rf"(?:\s(?i:number|no\.?|#))?{_VERB}(\d[\d -]{{4,22}}\d)(?!\d)", 0,
     ("account", "acct", "routing", "aba", "sort code", "bsb")),
    # (a date that starts with its day or year may come a few words later: "geboren am", "né le", "是")
    ("date_of_birth", rf"{_DOB_WORDS}(?:[^\d\n]{{0,20}}?(?=\d)|[ \t]{{0,3}}(?:(?i:is|was|on)[ \t]{{1,3}})?[:=]?[ \t]{{0,3}})"
                      rf"({intl.DOB_DATE})", 0, intl.DOB_GATE),
    ("date_of_birth", intl.DOB_DATE_FIRST, 0, intl.DOB_GATE),
    # --- network identifiers
    ("ip_address", r"\d(?<![\w.]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\w|\.\d)", 0, (".",)),
    ("mac_address", r"[0-9A-Fa-f](?<![\w:-][0-9A-Fa-f])[0-9A-Fa-f]([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}"
                    r"(?![\w:-])", 0, (":", "-")),
    ("ipv6_address", r"[0-9A-Fa-f:](?<![\w:.][0-9A-Fa-f:])[0-9A-Fa-f]{0,3}(?:(?<=:)|:)(?:[0-9A-Fa-f]{0,4}:){2,6}"
                     r"(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])", 0, (":",)),
    # --- postal addresses
    ("street_address", rf"\d(?<![\w:]\d)\d{{0,4}}(?:st|nd|rd|th|[A-Za-z])?(?:[-/]\d{{1,5}})?,?[ \t]{{1,2}}(?!{_NOT_STREET})"
                       rf"(?:[A-Z][A-Za-z'.-]{{0,25}}[ \t]{{1,2}}){{1,4}}"
                       rf"(?:{_ADDRESS_SUFFIX})\b\.?(?:[ \t](?:N|S|E|W|NE|NW|SE|SW)\b)?{_UNIT}{_CITY_ZIP}", 0,
     re.compile(rf"(?:{_ADDRESS_SUFFIX})\b")),
    ("street_address", r"[A-ZÄÖÜ](?<![\w][A-ZÄÖÜ])[a-zäöüß]{3,30}"
                       rf"(?:straße|strasse|str\.|weg|gasse|platz|allee|damm|ufer|{intl.DUTCH_STREETS})"
                       r"[ \t]{1,2}\d{1,4}[a-z]?(?![\w])(?:,?[ \t]{1,2}\d{5}[ \t][A-ZÄÖÜ][a-zäöüß]{1,30})?", 0,
     ("straße", "strasse", "str.", "weg", "gasse", "platz", "allee", "damm", "ufer", *intl.DUTCH_STREETS.split("|"))),
    ("street_address", r"\d(?<![\w]\d)\d{0,3}(?:[ \t]?(?:bis|ter))?,?[ \t](?:rue|avenue|av\.|boulevard|bd|chemin|place|"
                       r"allée|impasse|quai|cours)[ \t](?:(?:de|du|des|la|le|l'|d')[ \t]?){0,3}[A-ZÉÈ][\w'-]{1,30}"
                       r"(?:[ \t][A-ZÉÈ][\w'-]{1,30}){0,3}", 0,
     ("rue", "avenue", "av.", "boulevard", "bd", "chemin", "place", "allée", "impasse", "quai", "cours")),
    ("street_address", rf"{_STREET_FIRST}[ \t](?:(?:de|del|la|los|las|di|da|do|dos)[ \t]){{0,3}}[A-Z][\w'-]{{1,30}}"
                       rf"(?:[ \t][A-Z][\w'-]{{1,30}}){{0,3}},?[ \t](?:n[º°o]\.?[ \t]?)?\d{{1,4}}(?![\w])", 0,
     ("calle", "avenida", "via", "viale", "piazza", "corso", "rua")),
    ("street_address", rf"{_PO_BOX}\s{{1,2}}\d{{1,6}}(?!\d)", 0, ("box", "postfach")),
    ("street_address", _RU_STREET + intl.RU_ADDRESS_REST, 0, intl.RU_GATE),
    # other scripts and formats, then the postcode and city left after a street (scrub_patterns_intl)
    *[("street_address", p, 0, gate) for p, gate in intl.ADDRESSES_INTL],
    # --- names a user gives as their own
    ("name", rf"{_NAME_INTRO}(?P<n>{intl.NAME_WORDS})", 0, intl.NAME_GATE),  # trimmed by scrub_detectors.name_length
    ("name", intl.NAME_JA_BEFORE, 0, ("申", "いいます", "言います")),
    # "I'm Andrew Huberman, and ...": two or three capitalised words, then the sentence goes on
    ("name", rf"I(?<![A-Za-z]I)(?: am|'m|’m)\s{{1,3}}({_PERSON}(?:\s{_PERSON}){{1,2}})"
             rf"(?=[,.;!]|\s(?:and|from|a|an|the)\b)", 0, ("i am", "i'm", "i’m")),
    # a salutation: "Dear Olivia,", "Hi Tom," (an I'm/I've opening a sentence is not a name)
    ("name", rf"(?m)^[ \t]{{0,3}}{_GREETING},?[ \t]{{1,3}}(?:(?:Dr|Mr|Mrs|Ms|Miss|Prof|Professor)\.?[ \t])?"
             rf"(?!{_NOT_ADDRESSEE}|I[’'])({_PERSON}(?:[ \t]{_PERSON}){{0,2}})(?=[ \t]{{0,3}}(?:[,!:;.\n]|$))", 0,
     ("dear", "hi", "hello", "hey", "greetings", "good ")),
    # a signature: "Thanks,\nDaniel Okafor"
    ("name", rf"(?m)^{_CLOSING}[ ,!.]{{0,3}}\n[ \t]{{0,3}}({_PERSON}(?:[ \t]{_PERSON}){{0,2}})[ \t]*$", 0,
     ("regards", "wishes", "thank", "sincerely", "cheers", "yours")),
]

PATTERNS: list[tuple[str, re.Pattern, Gate]] = [
    (kind, re.compile(p, flags), gate) for kind, p, flags, gate in _TABLE]
