"""The scrubber's patterns for personal data as it is written across languages and scripts: names
after "my name is" and its equivalents, dates of birth, postal addresses with their postcode and
city, e-mail addresses with non-ASCII parts, and credentials on command lines (`curl -u user:pw`).
domains.corpora.scrub_patterns places them in its table; the same rules for linear time hold (each
pattern starts with a character class or a literal, everything after the start is bounded or
cannot fail after a long scan).

`\\w` in Python matches letters and digits of every script but not combining marks (the vowel
signs of Devanagari, Thai, Arabic: "राम" is र, ा, म), so word characters here are `\\w` plus MARKS.
"""
from __future__ import annotations

import re
import unicodedata


def _marks() -> str:
    """The combining marks (Unicode category M) of the scripts in use, as character-class ranges."""
    out, start, prev = [], None, 0
    for cp in [*range(0x0300, 0x3100), *range(0xFE00, 0xFE30)]:
        if unicodedata.category(chr(cp))[0] == "M":
            start, prev = (cp if start is None else start), cp
        elif start is not None:
            out.append(f"\\u{start:04x}" + (f"-\\u{prev:04x}" if prev > start else ""))
            start = None
    return "".join(out)


MARKS = _marks()
LETTER = r"[^\W\d_]"  # a letter of any script
UPPER = "A-ZÀ-ÖØ-ÞĀ-ſА-ЯЁΑ-Ω"  # capitals of the Latin, Cyrillic and Greek scripts (Latin Extended-A: both cases)

# --- e-mail: local part and domain in any script (the candidate is checked by email_validator)
_EM = rf"\w{MARKS}.%+\-"
EMAIL = (rf"[{_EM}](?<![{_EM}\\][{_EM}])(?:[{_EM}\\]*[{_EM}])?@"
         rf"(?:[\w{MARKS}-]+\.)+(?:xn--[a-z0-9-]{{2,59}}|(?:{LETTER}|[{MARKS}]){{2,24}})(?![\w{MARKS}-])")

# --- own names: what introduces one, by language; the name itself is checked by scrub_detectors.name_length
NAME_INTROS = (
    "my (?:full |real |legal |first |last |given )?name is", "my name.s", "i am called", "i.m called", "full name:",
    "je m.appelle", "je me nomme", "mon (?:nom|prénom) (?:est|c.est)", "ich hei(?:ß|ss)e", "mein (?:vor)?name ist",
    "me llamo", "mi nombre es", "mi chiamo", "il mio nome è", "meu nome é", "me chamo", "chamo-me", "mijn naam is",
    "ik heet", "nazywam się", "mam na imię", "jmenuji se", "volám sa", "jag heter", "mitt namn är", "jeg hedder",
    "jeg heter", "mitt navn er", "mit navn er", "nimeni on", "mă numesc", "ma numesc", "numele meu (?:este|e)",
    "a nevem", "benim adım", "adım", "ismim", "tên tôi là", "tôi tên là", "tên của tôi là",
    "nama saya(?: adalah| ialah)?", "nama aku", "ang pangalan ko ay", "jina langu ni", "меня зовут", "мо[её] имя",
    "мене звати", "мене звуть", "моє ім.я", "казвам се", "името ми е", "зовем се", "zovem se", "με λένε",
    "με λενε", "ονομάζομαι", "ονομαζομαι", "λέγομαι", "το όνομά μου είναι", "το ονομα μου ειναι")
NAME_INTROS_UNCASED = (
    "我叫", "我的名字是", "我的名字叫", "私の名前は", "わたしの名前は", "僕の名前は", "俺の名前は", "제 이름은", "내 이름은",
    "저의 이름은", "나의 이름은", "اسمي", "إسمي", "קוראים לי", "שמי", "השם שלי הוא", "השם שלי", "मेरा नाम",
    "আমার নাম", "میرا نام", "اسم من", "نام من", "ฉันชื่อ", "ผมชื่อ", "ดิฉันชื่อ", "ชื่อของฉันคือ", "ชื่อของผมคือ",
    "என் பெயர்")
NAME_GATE = (
    "name", "called", "appelle", "nomme", "nom ", "prénom", "heiße", "heisse", "llamo", "nombre", "chiamo", "nome",
    "chamo", "naam", "heet", "nazywam", "imię", "jmenuji", "volám", "heter", "hedder", "namn", "navn", "nimeni",
    "numesc", "numele", "nevem", "adım", "ismim", "tên", "nama", "pangalan", "jina", "зовут", "имя", "звати",
    "звуть", "ім", "казвам", "името", "зовем", "zovem", "λένε", "λενε", "ονομ", "όνομ", "λέγομαι", "我叫", "名字",
    "名前", "이름", "اسم", "إسم", "קוראים", "שמי", "השם", "नाम", "নাম", "نام", "ชื่อ", "பெயர்")
TITLES = r"(?:Dr|Mr|Mrs|Ms|Miss|Prof|Herr|Frau|Mme|Mlle|Sr|Sra|Srta|Sig|Dott|Pan|Pani)\.?[ \t]{1,2}"
NAME_WORDS = rf"{LETTER}[\w{MARKS}'’·・\-]{{0,40}}(?:[ \t]{LETTER}[\w{MARKS}'’·・\-]{{0,40}}){{0,4}}"
# "私はマリア・ロペスと申します": the Japanese name comes before the verb
NAME_JA_BEFORE = (r"(?:私|わたし|わたくし|僕|ぼく|俺)は[ \t]?([\u4e00-\u9fff\u3005\u30a1-\u30ff]{1,15})"
                  r"(?:と申します|といいます|と言います|と申す)")

# --- dates of birth: the words, in many languages, then a date (or a date, then "geboren"/"生まれ")
DOB_WORDS = (
    "date of birth", "birth ?date", "dob", r"d\.o\.b\.?", "born(?: on| in)?", r"b\.", "birthday", "geburtsdatum",
    r"geb\.", "geboren(?: am| op)?", "geburtstag", "date de naissance", "née? le", "naissance", "fecha de nacimiento",
    "nacimiento", "nací(?: el)?", "nacid[oa](?: el)?", "data di nascita", "nascita", "nat[oa] il", "sono nat[oa]",
    "data de nascimento", "nascimento", "nascid[oa] em", "nasci em", "geboortedatum", "data urodzenia",
    "urodzon[ya]", "urodził(?:em|am) się", "datum narození", "narozen[aáý]?", "dátum narodenia", "födelsedatum",
    "född", "fødselsdato", "født", "syntymäaika", "syntynyt", "születési (?:dátum|idő)", "született",
    "data nașterii", "data nasterii", "născut", "nascut", "doğum tarihi(?:m)?", "doğum günü(?:m)?",
    "dogum tarihi(?:m)?", "дата рождения", "родил(?:ся|ась)", r"д\.р\.", "день рождения", "дата народження",
    "народив(?:ся)?", "народилася", "дата на раждане", "роден[а]?", "ημερομηνία γέννησης", "ημερομηνια γεννησης",
    "γεννήθηκα", "ngày sinh", "tanggal lahir", "tarikh lahir", "lahir(?: pada| tanggal)?")
DOB_WORDS_UNCASED = ("生年月日", "誕生日", "出生日期", "出生年月日", "出生于", "出生於", "生日", "생년월일", "생일",
                     "تاريخ الميلاد", "تاريخ ميلادي", "ولدت", "תאריך לידה", "נולדתי", "जन्म तिथि", "जन्मतिथि",
                     "जन्म तारीख", "जन्म दिनांक", "วันเกิด")
DOB_GATE = ("birth", "dob", "d.o.b", "born", "b.", "geburt", "geb.", "geboren", "naissance", "né", "nacimiento",
            "nací", "nacid", "nascita", "nato", "nata", "nascimento", "nascid", "nasci", "geboorte", "urodz", "narozen",
            "narodenia", "födelse", "född", "fødsel", "født", "syntymä", "syntynyt", "születés", "született",
            "nașterii", "nasterii", "născut", "nascut", "doğum", "dogum", "doğdum", "рожд", "родил", "д.р.", "народж",
            "народил", "раждане", "роден", "γέννησ", "γεννησ", "γεννήθηκα", "ngày sinh", "lahir", "生年月日", "誕生日",
            "生まれ", "出生", "生日", "생년월일", "생일", "태어", "الميلاد", "ميلادي", "ولدت", "לידה", "נולדתי", "जन्म",
            "วันเกิด")
_MONTH_WORD = rf"{LETTER}{{3,12}}\.?"  # any language's month, full or short: after a birth word, a date
DOB_DATE = (rf"(?:\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}|\d{{1,2}}[./-]\d{{1,2}}[./-](?:\d{{4}}|\d{{2}})(?!\d)"
            rf"|\d{{1,2}}(?:st|nd|rd|th|er|º|°|\.)?(?:[ \t]{{1,3}}|[-/])(?:(?:of|de|del)[ \t]{{1,3}})?{_MONTH_WORD},?"
            rf"(?:[ \t]{{1,3}}|[-/])(?:(?:de|del|of)[ \t]{{1,3}})?\d{{4}}"
            rf"|{_MONTH_WORD}[ \t]{{1,3}}\d{{1,2}}(?:st|nd|rd|th)?,?[ \t]{{1,3}}\d{{4}}"
            rf"|\d{{4}}[ \t]?年[ \t]?\d{{1,2}}[ \t]?月[ \t]?\d{{1,2}}[ \t]?日"
            rf"|\d{{4}}[ \t]?년[ \t]?\d{{1,2}}[ \t]?월[ \t]?\d{{1,2}}[ \t]?일)"
            r"(?:[ \t]?(?:г\.|года|r\.|roku))?")
# the date first: "am 03.07.1982 geboren", "1979年5月3日生まれ", "15.08.1990'da doğdum"
DOB_DATE_FIRST = (r"(\d(?<!\d\d)\d{0,3}(?:[./-]\d{1,2}[./-]\d{2,4}|[ \t]?年[ \t]?\d{1,2}[ \t]?月[ \t]?\d{1,2}[ \t]?日"
                  r"|[ \t]?년[ \t]?\d{1,2}[ \t]?월[ \t]?\d{1,2}[ \t]?일"
                  rf"|\.?[ \t]{{1,3}}{_MONTH_WORD}[ \t]{{1,3}}\d{{4}})(?!\d))[^\d\n]{{0,8}}?"
                  r"(?:geboren|doğdum|dogdum|生まれ|出生|출생|태어났|родил(?:ся|ась))")

# --- postal addresses in other scripts and formats, and the postcode and city after a street
_POSTCODE_FIRST = r"(?:\d{5}-\d{3}|\d{5}|\d{4}[ \t]?[A-Z]{2}|\d{2}-\d{3}|\d{4}-\d{3}|\d{3}[ \t]\d{2}|\d{4})"
_POSTCODE_AFTER = r"(?:[1-9]\d{2}[ \t]\d{3}|\d{5,6})"  # India's PIN (400 001), Russia's index, ...
CITY = rf"[{UPPER}][\w{MARKS}'’-]{{1,30}}(?:[ \t-][{UPPER}][\w{MARKS}'’-]{{1,30}}){{0,2}}"
_ADDRESS_TAIL = (rf",?[ \t]{{1,3}}(?:{_POSTCODE_FIRST}[ \t]{{1,2}}{CITY}"
                 rf"|(?:{CITY},[ \t]{{1,2}}){{0,3}}{CITY},?[ \t]{{0,2}}[-–]?[ \t]{{0,2}}{_POSTCODE_AFTER}"
                 rf"|[-–]?[ \t]{{0,2}}{_POSTCODE_AFTER})(?!\d)")
_HAN, _KANA = "\u4e00-\u9fff\u3005", "\u30a1-\u30ff"
_AFTER_ADDRESS = re.compile(r"\[ADDRESS\]")  # a gate on the text as it is then (the street already replaced)
_CN_VERBS = "请請寄到送至往在住是于於址的给給把和及发發"  # what comes before an address: the address starts after
_D = "0-9０-９"
ADDRESSES_INTL = [
    # Japan: 〒100-0001 東京都千代田区千代田1-1; a prefecture, its towns, a block number
    (rf"〒[ \t]?\d{{3}}[-－ー]?\d{{4}}(?:[ \t　]{{0,2}}[{_HAN}{_KANA}{_D}\-－ー]{{1,40}})?", ("〒",)),
    (rf"[{_HAN}]{{1,3}}[都道府県][{_HAN}{_KANA}]{{1,20}}?(?:[{_D}]{{1,4}}(?:[-－ー][{_D}]{{1,4}}){{1,3}}"
     rf"|[{_D}]{{1,4}}丁目(?:[{_D}]{{1,4}}番地?(?:[{_D}]{{1,4}}号?)?)?)", ("都", "道", "府", "県")),
    # China: 北京市朝阳区建国路88号
    (rf"[{_HAN}](?<![{_CN_VERBS}])[{_HAN}]{{0,9}}(?:路|街|道|巷|大道|胡同)[ \t]?[{_D}]{{1,5}}[号號]"
     rf"(?:[{_D}]{{1,5}}(?:室|楼|樓|栋|棟|单元))*", ("号", "號")),
    # Korea: 서울특별시 강남구 테헤란로 152
    (r"[가-힣](?<![가-힣][가-힣])[가-힣]{0,9}(?:특별시|광역시|특별자치시|도|시)?[ \t]{0,2}[가-힣]{1,10}(?:구|군)[ \t]{1,2}"
     r"[가-힣0-9]{1,14}(?:로|길|동|읍|면|리)[ \t]{0,2}\d{1,5}(?:-\d{1,5})?(?:번지|번길)?", ("구 ", "군 ")),
    # Poland: ul. Marszałkowska 10/4; os. Tysiąclecia 12
    (r"[uo](?<![\w][uo])(?:(?<=u)l|(?<=o)s)\.[ \t]?[A-ZŁŚŻŹĆŃÓ][\w-]{1,30}(?:[ \t][A-ZŁŚŻŹĆŃÓ][\w-]{1,30}){0,2}"
     r"[ \t]\d{1,4}[a-zA-Z]?(?:/\d{1,4})?(?!\d)", ("ul.", "os.")),
    # the postcode before a Japanese address: 100-0001 [ADDRESS]
    (r"\d(?<!\d\d)\d{2}[-－]\d{4}[ \t　]{0,2}\[ADDRESS\]", _AFTER_ADDRESS),
    # the postcode and city left after a street was replaced: "[ADDRESS], 75008 Paris", "..., Mumbai 400001"
    (rf"\[ADDRESS\](?:{_ADDRESS_TAIL}){{1,2}}", _AFTER_ADDRESS),
    # without a street before them: a comma-separated address ending in postcode and city or city and PIN
    (rf",[ \t]{{1,2}}(?:(?:\d{{5}}(?:-\d{{3}})?|\d{{4}}[ \t]?[A-Z]{{2}}|\d{{2}}-\d{{3}})[ \t]{{1,2}}{CITY}"
     rf"|{CITY},?[ \t]{{0,2}}[-–]?[ \t]{{0,2}}[1-9]\d{{2}}[ \t]?\d{{3}})(?!\d)", (",",)),
]
# Russia, Ukraine: ул. Тверская, д. 7, кв. 15 (scrub_patterns puts the street words first, any case)
RU_STREET_WORDS = (r"ул\.", "улица", "пр-т", r"просп\.", "проспект", r"пер\.", "переулок", "б-р", "бульвар", r"наб\.",
                   "набережная", "шоссе", r"пл\.", "площадь", r"вул\.", "вулиця")
RU_ADDRESS_REST = (r"[ \t]?[А-ЯЁІЇЄ][\w-]{1,30}(?:[ \t][\w-]{1,30}){0,2},?[ \t]{1,2}(?:(?:д\.|дом|буд\.)[ \t]?)?\d{1,4}"
                   r"[а-я]?(?!\d)(?:,?[ \t]{1,2}(?:корп\.|к\.|стр\.)[ \t]?\d{1,3})?(?:,?[ \t]{1,2}(?:кв\.|квартира|оф\.|офис)"
                   r"[ \t]?\d{1,4})?")
RU_GATE = ("ул", "пр", "пер", "бульвар", "б-р", "наб", "шоссе", "пл", "вул")
# Dutch and Indian street words (the street patterns in scrub_patterns add them)
DUTCH_STREETS = "straat|gracht|laan|plein|kade|singel|dijk|dreef|steeg"
INDIAN_STREETS = ("Marg|Salai|Nagar|Chowk|Enclave|Colony|Layout|Bagh|Vihar"
                  "|(?:Apartments|Apts|Residency|Towers)(?=,)")  # a building, then the rest of the address

# --- credentials on command lines. Each pattern's group "v" is the secret.
_Q = r"(?P<q>[\"']?)"
CLI_CREDENTIALS = [
    # curl -u "user:pass word" (quoted: the password may hold spaces)
    (r"-(?<![\w-]-)(?:-user|-proxy-user|-auth|u|a|U)(?:=|[ \t]{1,3})(?P<q>[\"'])"
     r"(?P<v>[^\s:%\"'@/]{1,64}[:%][^\"'\n]{1,128})(?P=q)", ("-u", "-a", "-U", "--user", "--proxy-user", "--auth")),
    # curl -u user:password, --user, --proxy-user, httpie -a, smbclient -U user%password
    (rf"-(?<![\w-]-)(?:-user|-proxy-user|-auth|u|a|U)(?:=|[ \t]{{1,3}}|(?<=[uU])(?=\w)){_Q}"
     rf"(?P<v>[^\s:%\"'@/]{{1,64}}[:%][^\s\"']{{1,128}})(?P=q)", ("-u", "-a", "-U", "--user", "--proxy-user", "--auth")),
    # --password value, --db-pass value (the "=" form is an assignment, scrub_patterns)
    (rf"-(?<![\w-]-)-?(?:[a-z]{{1,20}}-)?(?:password|passwd|pass|pwd)[ \t]{{1,3}}{_Q}"
     rf"(?P<v>[^\s\"'-][^\s\"']{{2,127}})(?P=q)", ("pass", "pwd")),
    # mysql -pSECRET (attached), sshpass -p SECRET, docker login -p SECRET, redis-cli -a SECRET, sqlcmd -P SECRET
    (rf"m(?<![\w]m)(?:ysql|ysqldump|ysqladmin|ariadb)\b[^\n]{{0,160}}?[ \t]-p{_Q}"
     rf"(?P<v>[^\s\"'-][^\s\"']{{1,127}})(?P=q)", ("mysql", "mariadb")),
    (rf"sshpass[ \t]{{1,3}}-p[ \t]{{0,3}}{_Q}(?P<v>[^\s\"']{{1,128}})(?P=q)", ("sshpass",)),
    (rf"[dpnbsho](?<![\w][dpnbsho])(?:(?<=d)ocker|(?<=p)odman|(?<=n)erdctl|(?<=b)uildah|(?<=s)kopeo|(?<=h)elm registry"
     rf"|(?<=o)ras)[ \t]{{1,3}}login\b[^\n]{{0,160}}?[ \t]-p[ \t]{{1,3}}{_Q}(?P<v>[^\s\"']{{1,128}})(?P=q)", ("login",)),
    (rf"redis-cli\b[^\n]{{0,160}}?[ \t](?:-a|--pass)[ \t]{{1,3}}{_Q}(?P<v>[^\s\"']{{1,128}})(?P=q)", ("redis-cli",)),
    (rf"[sbm](?<![\w][sbm])(?:(?<=s)qlcmd|(?<=s)qlplus|(?<=b)cp|(?<=m)ssql-cli)\b[^\n]{{0,160}}?[ \t]-P[ \t]{{0,3}}{_Q}"
     rf"(?P<v>[^\s\"']{{1,128}})(?P=q)", ("sqlcmd", "sqlplus", "bcp", "mssql-cli")),
    # xfreerdp /u:admin /p:SECRET
    (rf"/(?<![\w/]/)p:{_Q}(?P<v>[^\s\"']{{1,128}})(?P=q)", ("/p:",)),
]
