"""The scrubber across scripts, languages and formats (second round): a planted suite of personal
data written as users outside the US write it (phones with dots or dashes after the country code,
names in non-Latin scripts, internationalised e-mail addresses, credentials on command lines,
addresses with their postcode and city, dates of birth in several languages), and a technical suite
(digests, SHAs, UUIDs, versions, private and documentation addresses, CIDR blocks) that must pass
unchanged. An item is caught whole when none of its values survive, in part when some do."""
from __future__ import annotations

import re

import pytest

from domains.corpora.scrub import scrub

# (kind, prompt, values that must not survive). Test values: fictional names and numbers;
# addresses of public buildings or made up.
PLANTED: list[tuple[str, str, tuple[str, ...]]] = [
    # --- phones with dots or dashes after the country code, in many regions
    ("phone_dots_fr", "Appelle-moi au +33.6.12.34.56.78 ce soir pour le devis.", ("6.12.34.56.78", "+33.6")),
    ("phone_dashes_de", "Meine Handynummer: +49-151-2345-6789, bitte per SMS.", ("151-2345-6789", "+49-151")),
    ("phone_dots_us", "My desk line is +1.415.555.0173, add it to the signature block.", ("415.555.0173", "+1.415")),
    ("phone_dashes_es", "Escríbeme al +34-612-345-678 cuando tengas el presupuesto.", ("612-345-678", "+34-612")),
    ("phone_dots_it", "Il mio numero è +39.347.123.4567, scrivimi su WhatsApp.", ("347.123.4567", "+39.347")),
    ("phone_dashes_au", "Ring the Sydney office on +61-2-9374-4000 about the lease.", ("9374-4000", "+61-2")),
    ("phone_dashes_cn", "我的手机号是+86-139-1234-5678，有问题随时联系。", ("139-1234-5678", "1234-5678")),
    ("phone_dashes_jp", "連絡先は+81-90-3456-7890です。よろしくお願いします。", ("3456-7890", "+81-90")),
    ("phone_dashes_ru", "Мой номер +7-916-555-12-34, позвоните после обеда.", ("916-555-12-34", "555-12-34")),
    ("phone_dots_br", "Meu celular: +55.11.98765.4321, me chama no zap.", ("98765.4321", "+55.11")),
    ("phone_dashes_ae", "Please call +971-50-123-4567 to confirm the booking in Dubai.", ("50-123-4567", "+971-50")),
    ("phone_dots_za", "Contact me on +27.82.555.0142 for the invoice.", ("82.555.0142", "+27.82")),
    ("phone_dashes_kr", "+82-10-2345-6789로 문자 주세요.", ("10-2345-6789", "2345-6789")),
    ("phone_dots_pl", "Numer do mnie: +48.601.234.567, zadzwoń jutro.", ("601.234.567", "+48.601")),
    ("phone_dashes_ie", "my number is +353-87-123-4567, text me the address", ("87-123-4567", "+353-87")),
    ("phone_dashes_in", "whatsapp +91-98200-12345 for the catering order", ("98200-12345", "+91-98200")),
    ("phone_dots_nl", "Bel me op +31.6.1234.5678 als het pakket er is.", ("6.1234.5678", "1234.5678")),
    ("phone_dashes_mx", "Mi teléfono es +52-55-1234-5678, llámame.", ("55-1234-5678", "1234-5678")),
    ("phone_no_context_dashes", "+44-161-496-0734 — draft a voicemail greeting", ("161-496-0734", "496-0734")),
    # --- names given after "my name is" and its equivalents, in Latin and other scripts
    ("name_zh_after_english", "Hello, my name is 陈静 and I need a cover letter for a nursing job.", ("陈静",)),
    ("name_zh", "你好，我叫刘建国，请帮我写一封求职信。", ("刘建国",)),
    ("name_zh_full", "我的名字是赵丽华，帮我翻译成英文。", ("赵丽华",)),
    ("name_ja", "はじめまして、私の名前は山田花子です。自己紹介を英語にしてください。", ("山田花子",)),
    ("name_ja_katakana", "私はマリア・ロペスと申します。メールの文面を直してください。", ("マリア", "ロペス")),
    ("name_ja_after_english", "My name is 鈴木一郎; please write my email signature.", ("鈴木一郎",)),
    ("name_ru", "Меня зовут Ольга Смирнова, помоги составить резюме.", ("Ольга", "Смирнова")),
    ("name_ru_after_english", "My name is Дмитрий Волков, translate my bio into English.", ("Дмитрий", "Волков")),
    ("name_uk", "Мене звати Тарас Шевчук, напиши лист роботодавцю.", ("Тарас", "Шевчук")),
    ("name_ko", "안녕하세요, 제 이름은 박지훈입니다. 자기소개서를 써 주세요.", ("박지훈",)),
    ("name_ar", "مرحبا، اسمي خالد العتيبي وأريد رسالة تغطية.", ("خالد", "العتيبي")),
    ("name_he", "שלום, קוראים לי נועה לוי ואני צריכה קורות חיים.", ("נועה", "לוי")),
    ("name_hi", "नमस्ते, मेरा नाम अनीता वर्मा है और मुझे एक पत्र चाहिए।", ("अनीता", "वर्मा")),
    ("name_el", "Γεια, με λένε Νίκος Παπαδόπουλος και θέλω βιογραφικό.", ("Νίκος", "Παπαδόπουλος")),
    ("name_th", "สวัสดีครับ ผมชื่อสมชาย ใจดี ช่วยเขียนจดหมายสมัครงานให้หน่อย", ("สมชาย", "ใจดี")),
    ("name_fr", "Bonjour, je m'appelle Élodie Fournier et je cherche un stage.", ("Élodie", "Fournier")),
    ("name_de", "Hallo, ich heiße Jürgen Weiß und brauche ein Anschreiben.", ("Jürgen", "Weiß")),
    ("name_es", "Hola, me llamo Iñaki Gutiérrez, ¿me ayudas con el currículum?", ("Iñaki", "Gutiérrez")),
    ("name_it", "Ciao, mi chiamo Giulia Esposito e devo scrivere una lettera.", ("Giulia", "Esposito")),
    ("name_pt", "Olá, meu nome é João Conceição, preciso de um currículo.", ("João", "Conceição")),
    ("name_pl", "Dzień dobry, nazywam się Łukasz Wróblewski i szukam pracy.", ("Łukasz", "Wróblewski")),
    ("name_tr", "Merhaba, benim adım Ayşe Yıldırım, özgeçmişimi düzeltir misin?", ("Ayşe", "Yıldırım")),
    ("name_vi", "Xin chào, tên tôi là Nguyễn Thị Lan, hãy viết thư xin việc giúp tôi.", ("Nguyễn", "Thị Lan")),
    ("name_nl_particle", "Hoi, mijn naam is Sanne de Vries en ik zoek een baan.", ("Sanne", "Vries")),
    ("name_id", "Halo, nama saya Budi Santoso, tolong buatkan surat lamaran.", ("Budi", "Santoso")),
    ("name_accented_after_english", "my name is Zoë Ångström, draft a thank-you note to my landlord",
     ("Zoë", "Ångström")),
    # --- e-mail addresses with non-ASCII local parts or domains
    ("email_idn_de", "Schick die Rechnung an björn@bücher-köln.de bitte.", ("björn", "bücher-köln.de")),
    ("email_cyrillic", "Напишите мне на почту иван@пример.рф, пожалуйста.", ("иван@", "пример.рф")),
    ("email_cjk", "请把报价单发到销售@公司.中国。", ("销售@", "公司.中国")),
    ("email_unicode_local", "Contact josé.muñoz@correo.es about the flat.", ("josé.muñoz", "correo.es")),
    ("email_devanagari", "मुझे ईमेल करें: राम@उदाहरण.भारत", ("राम@", "उदाहरण.भारत")),
    ("email_greek", "Στείλε μου το αρχείο στο μαρία@εταιρεία.gr σήμερα.", ("μαρία@", "εταιρεία.gr")),
    ("email_punycode", "mail me at anna.k@xn--mnchen-3ya.de about the lease", ("anna.k@", "xn--mnchen-3ya.de")),
    ("email_japanese", "お問い合わせは連絡@会社.日本までお願いします。", ("連絡@", "会社.日本")),
    ("email_idn_domain_ascii_local", "Reply to info@straße-möbel.de with the signed form", ("info@", "straße-möbel.de")),
    # --- credentials on command lines
    ("curl_user_long", "Why does curl --user deploy:Wint3r-Sky https://ci.example.com/api return 401?",
     ("Wint3r-Sky", "deploy:")),
    ("curl_u_quoted", "curl -u 'svc-reader:p@ssW0rd!' -X GET https://jira.example.org/rest/api/2/issue",
     ("p@ssW0rd!", "svc-reader:")),
    ("curl_u_attached", "curl -uops:Kestrel-7731 https://grafana.example.com/api/health", ("Kestrel-7731", "ops:")),
    ("wget_password", "wget --user=backup --password=S4ndcastle99 ftp://files.example.net/dump.sql", ("S4ndcastle99",)),
    ("mysql_p", "mysql -u root -pTr1cky#Pass -h db.local shop", ("Tr1cky#Pass",)),
    ("sshpass", "sshpass -p 'Gl4cier!' ssh admin@host is insecure, right?", ("Gl4cier!",)),
    ("docker_login", "docker login -u robot -p Zq8wX2vN7bLr registry.example.com fails", ("Zq8wX2vN7bLr",)),
    ("redis_cli", "redis-cli -h cache.internal -a Sup3rR3dis! ping", ("Sup3rR3dis!",)),
    ("httpie_auth", "http -a alice:Blue-Moon-42 GET https://api.example.com/me", ("Blue-Moon-42", "alice:")),
    ("smbclient", "smbclient //fs/share -U admin%Autumn2024! gives NT_STATUS_LOGON_FAILURE", ("Autumn2024!",)),
    ("curl_u_quoted_spaces", 'curl -u "admin:pa ss word" https://wiki.example.org', ("pa ss word", "admin:pa")),
    # --- addresses, with their postcode and city
    ("address_ja_postmark", "荷物は〒150-0002 東京都渋谷区渋谷2-21-1 に送ってください。", ("150-0002", "渋谷2-21-1")),
    ("address_ja", "住所は大阪府大阪市北区梅田3-1-1です。", ("梅田3-1-1", "北区梅田")),
    ("address_zh", "请寄到北京市朝阳区建国路88号，谢谢。", ("建国路88号", "朝阳区建国路")),
    ("address_ko", "주소는 서울특별시 강남구 테헤란로 152입니다.", ("테헤란로 152", "강남구 테헤란로")),
    ("address_ru", "Доставка по адресу: ул. Тверская, д. 7, кв. 15, Москва 125009.", ("Тверская, д. 7", "кв. 15", "125009")),
    ("address_fr", "J'habite au 8 rue de la Paix, 75002 Paris, pouvez-vous m'envoyer le colis ?",
     ("rue de la Paix", "75002")),
    ("address_fr_bis", "Notre bureau : 12 bis avenue Victor Hugo, 69006 Lyon.", ("Victor Hugo", "69006")),
    ("address_in", "Deliver to 14 MG Road, Bengaluru 560001 by Friday.", ("14 MG Road", "560001")),
    ("address_in_salai", "Our office is at 22 Anna Salai, Chennai 600002; courier the cheque.",
     ("22 Anna Salai", "600002")),
    ("address_in_pin_dash", "Flat 3B, Shanti Apartments, Andheri West, Mumbai - 400053, send the documents here.",
     ("Flat 3B", "Shanti Apartments", "400053")),
    ("address_es", "Mi dirección es Calle de Alcalá 48, 28014 Madrid.", ("Alcalá 48", "28014")),
    ("address_it", "Spedisci a Via Garibaldi 12, 00185 Roma, grazie.", ("Garibaldi 12", "00185")),
    ("address_de", "Lieferadresse: Lindenallee 5, 50968 Köln.", ("Lindenallee 5", "50968")),
    ("address_nl", "Stuur het naar Prinsengracht 263, 1016 GV Amsterdam.", ("Prinsengracht 263", "1016 GV")),
    ("address_br", "Moro na Rua Augusta, 1500, 01304-001 São Paulo.", ("Augusta, 1500", "01304-001")),
    ("address_pl", "Adres: ul. Marszałkowska 10, 00-590 Warszawa.", ("Marszałkowska 10", "00-590")),
    ("address_uk", "Send it to 47 Kingsley Road, Leeds LS6 2QE before noon.", ("47 Kingsley Road", "LS6 2QE")),
    ("address_in_ordinal", "No. 45, 2nd Cross Road, Jayanagar, Bengaluru 560041 is my new flat.",
     ("2nd Cross Road", "Jayanagar", "560041")),
    ("address_in_city_dash", "Ship to 5 Park Street, Kolkata - 700016 please.", ("5 Park Street", "700016")),
    # --- dates of birth in several languages and formats
    ("dob_de_after", "Ich bin am 03.07.1982 geboren, berechne mein Sternzeichen.", ("03.07.1982",)),
    ("dob_de_month", "Geburtsdatum: 1. Mai 1968, bitte ins Formular eintragen.", ("1. Mai 1968", "Mai 1968")),
    ("dob_fr", "Date de naissance : 14/02/1990, remplis le formulaire pour moi.", ("14/02/1990",)),
    ("dob_fr_nee", "Je suis née le 9 mars 1985 à Lyon, écris ma biographie.", ("9 mars 1985", "mars 1985")),
    ("dob_es", "Fecha de nacimiento: 30-11-1978. ¿Qué edad tengo?", ("30-11-1978",)),
    ("dob_es_naci", "Nací el 22 de agosto de 1991 en Sevilla.", ("22 de agosto", "agosto de 1991")),
    ("dob_it", "Data di nascita 05/06/1969, compila il modulo.", ("05/06/1969",)),
    ("dob_pt", "Data de nascimento: 17.04.1995 — preciso renovar o passaporte.", ("17.04.1995",)),
    ("dob_ru", "Дата рождения: 12.09.1988, помоги заполнить анкету.", ("12.09.1988",)),
    ("dob_ja", "生年月日は1979年5月3日です。履歴書を書いてください。", ("1979年5月3日",)),
    ("dob_zh", "我的出生日期是1993年10月8日，请帮我算一下年龄。", ("1993年10月8日",)),
    ("dob_ko", "생년월일: 1986년 2월 14일, 여권 신청서를 작성해 주세요.", ("1986년 2월 14일", "2월 14일")),
    ("dob_born_dots", "Patient born 02.11.1956, write the referral letter.", ("02.11.1956",)),
    ("dob_nl", "Geboortedatum 21-03-1992, vul het formulier in.", ("21-03-1992",)),
    ("dob_tr", "Doğum tarihim 15.08.1990, burcum ne?", ("15.08.1990",)),
    ("dob_pl", "Data urodzenia: 04.12.1975 – wypełnij wniosek.", ("04.12.1975",)),
    ("dob_ar", "تاريخ الميلاد: 12/05/1990، أريد تعبئة الطلب.", ("12/05/1990",)),
    ("dob_hi", "मेरी जन्म तिथि 25/01/1994 है, कुंडली बनाओ।", ("25/01/1994",)),
    ("dob_en_month_first", "I was born March 3rd, 1977 — which generation am I?", ("March 3rd, 1977", "1977")),
    ("dob_dashed_month", "DOB: 12-Mar-1984, fill in the insurance form.", ("12-Mar-1984", "Mar-1984")),
    ("dob_b_abbrev", "Obituary draft: Jan Novák, b. 12.04.1966 in Brno.", ("12.04.1966",)),
]

# Technical prompts: digests, SHAs, UUIDs, versions, private and documentation addresses, CIDR
# blocks. None is personal data; none may be changed.
TECHNICAL: list[str] = [
    "git show 9b2f4c1e7a3d8f6b5c0e1a2d3f4b5c6d7e8f9a0b --stat",
    "Why does `git revert 4e8a1c2` say the commit is a merge?",
    "sha256sum gives 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824 for 'hello', is that right?",
    "docker pull nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31 fails on arm64",
    "md5 of the file is d41d8cd98f00b204e9800998ecf8427e, is it empty?",
    "package-lock has integrity sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg== "
    "for lodash, why does npm ci fail?",
    "UUID v4 3f6c2b9e-8d41-4a7f-9c3e-5b2d1a0f7e64 versus the ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV: which sorts by time?",
    "kubectl get pod web-7d9f8b6c5-x2k4p -n prod shows CrashLoopBackOff",
    "My Docker bridge is 172.17.0.1 and the container gets 172.17.0.2, why can't it reach the host?",
    "Allow 10.0.0.0/8, 172.16.0.0/12 and 192.168.0.0/16 in the security group",
    "nginx listens on 192.168.1.20:443 but the router forwards to 192.168.1.21",
    "The docs use 192.0.2.10 and 198.51.100.7 as example hosts; which RFC reserves them?",
    "Route 203.0.113.0/24 via the VPN gateway 10.8.0.1",
    "Why does curl 169.254.169.254 work only inside EC2?",
    "Set the pod CIDR to 10.244.0.0/16 and the service CIDR to 10.96.0.0/12 in kubeadm",
    "IPv6 ULA fd12:3456:789a::1 versus link-local fe80::1ff:fe23:4567:890a, explain the difference",
    "The documentation prefix is 2001:db8::/32; can I use 2001:db8:0:1::10 in my tutorial?",
    "Ubuntu 22.04.3 LTS with kernel 6.5.0-14-generic panics on boot",
    "Bump lodash from 4.17.20 to 4.17.21 and react from 18.2.0 to 18.3.1",
    "Python 3.12.0b4 versus 3.12.0rc1: what changed?",
    "Terraform v1.6.5 and provider hashicorp/aws 5.31.0 conflict on init",
    "Go 1.21.5: module github.com/gin-gonic/gin v1.9.1 requires go 1.20",
    "Calendar version 2024.01.15 versus semver 1.4.0-beta.3+exp.sha.5114f85",
    "The API server is at https://10.0.0.1:6443 and the kubeconfig points to 127.0.0.1",
    "redis://172.20.0.5:6379/0 times out inside docker compose",
    "Postgres in Docker: host.docker.internal or 172.18.0.1, which should the app use?",
    'The ETag "33a64df551425fcc55e4d42a148795d9f25f89d4" comes back twice, is caching broken?',
    "Gerrit shows Change-Id: I8473b95934b5732ac55d26311a706c9c2bde9940 on the commit",
    "Windows update fails with error 0x80070005, access denied",
    "gdb: segfault at address 0x7ffd5fbff8a0 in main",
    "The transaction hash 0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060 is still pending",
    "Block 000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f is the genesis block, right?",
    "Subnet 100.64.0.0/10 is carrier-grade NAT, may I use it on my LAN?",
    "traceroute shows 10.10.0.1, then 100.64.12.1, then my ISP",
    "Compare the SHA-1 a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 with the output of my hash function",
    "HTTP/2 stream 13 was reset with error 0x8 on port 8443",
    "Verify the release with the GPG key id 4AEE18F83AFDEB23",
    "Multicast 239.255.255.250:1900 is SSDP, how do I block it?",
    "My gateway is 192.168.0.1 and my DNS server 192.168.0.53",
    "Convert the netmask 255.255.240.0 to CIDR notation",
    "WireGuard AllowedIPs = 0.0.0.0/0, ::/0 versus 10.13.13.0/24",
    "How do I squash the commit range 1a2b3c4d..5e6f7a8b?",
    "Image digest sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 is the empty layer",
    "uuid.uuid5(NAMESPACE_DNS, 'python.org') gives 886313e1-3b8a-5372-9b90-0c9aee199e5d",
    "Correlation id 7c9e6679-7425-40de-944b-e07fc1f90ae7 appears in both logs",
    "Node v20.11.0 with npm 10.2.4 on macOS 14.2.1 (23C71)",
    "pip install 'numpy>=1.26,<2.0' pandas==2.1.4",
    "CUDA 12.2, cuDNN 8.9.7.29 and driver 535.129.03: compatible?",
    "Build fingerprint google/oriole/oriole:14/UQ1A.240105.004/11206848:user/release-keys",
    "git ls-tree says the blob of README.md is 5716ca5987cbf97d6bb54920bea6adde242d87e6",
    "Can I route 198.18.0.0/15 for benchmarking?",
    "The VM has 10.0.2.15 (NAT) and 192.168.56.101 (host-only) in VirtualBox",
    "git rebase --onto 3f1e2d4 9a8b7c6 feature",
    "Semantic version 2.0.0-rc.1+build.20240115.7f3a2b1",
    "go.sum has h1:ZkRrt6Oe4I2J1z9v2W1x8ZQzGvV5Bh0Bq8t7ZBXx3pk= for the module, why the checksum mismatch?",
    "tcpdump on eth0 shows packets from 10.1.2.3 to 10.1.2.255",
    "sha1sum of the ISO: 7a3ee1c4f0e3b9b47f1b4dd3f0d5d3fae1b6c8e2",
    "The MinIO console at http://172.31.4.18:9001 asks for credentials, what are the defaults?",
    "SRI hash sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC for the CDN script",
    "Docker Compose assigns 172.19.0.0/16; change it to 10.5.0.0/24",
    "ip route add 192.168.100.0/24 via 192.168.1.254 dev eth0",
    "git cherry-pick e83c5163316f89bfbde7d9ab23ca2e25604af290",
]


# The new rules' own look-alikes: questions about names, ids and flags that are not credentials,
# place names without an address, years of birth. None may be changed.
ORDINARY_INTL: list[str] = [
    "我的名字是什么意思？", "제 이름은 뭐예요?", "मेरा नाम क्या होना चाहिए?", "この関数の名前は何ですか", "私は学生です。英語を教えてください。",
    "東京都の人口は何人ですか？", "大阪府と京都府の違いを教えて", "我知道北京市有很多人口，道路很宽。", "서울시 강남구에 맛집 추천해줘",
    "Меня зовут на собеседование, что надеть?", "Как перевести 'ул. Ленина' на английский?", "Ich heiße Sie herzlich willkommen",
    "Je m'appelle comment en anglais ?", "Me llamo la atención sobre este error", "my name is not relevant here",
    "Adım adım Python öğrenmek istiyorum", "Einstein was born in 1879 in Ulm", "Born in the USA was released in 1984",
    "docker run -u 1000:1000 -v $(pwd):/app image", "curl -u $USER:$TOKEN https://api.github.com", "git push -u origin main",
    "mysql -u root -p mydb", "sshpass -p $SSHPASS ssh host", "redis-cli -a $REDIS_PASSWORD ping", "sort -u file.txt",
    "psql -U postgres -d app", "pip install -U pip", "Send to @username on Twitter", "user@localhost cannot log in",
    "From Mumbai to Pune is 150 km", "The train 12951 Mumbai Rajdhani leaves at 17:00", "Paris has 20 arrondissements",
    "Call the function with +1.5 and -2.5", "Temperature rose from +20.5 °C to +21.7 °C",
]


def _outcome(prompt: str, values: tuple[str, ...]) -> str:
    text = scrub(prompt).text
    survived = [v for v in values if v in text]
    return "whole" if not survived else "missed" if len(survived) == len(values) else "in part"


@pytest.mark.parametrize("kind, prompt, values", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_item_is_caught_whole(kind, prompt, values):
    out = scrub(prompt)
    survived = [v for v in values if v in out.text]
    assert not survived, f"{kind}: {survived} survived in {out.text!r}"
    assert out.scrubbed and re.search(r"\[[A-Z_]+\]", out.text)


def test_planted_rates():
    assert len(PLANTED) >= 60 and len({k for k, _, _ in PLANTED}) == len(PLANTED)
    outcomes = [_outcome(prompt, values) for _, prompt, values in PLANTED]
    counts = {k: outcomes.count(k) for k in ("whole", "in part", "missed")}
    print(f"\nplanted (international): {counts} of {len(PLANTED)}")
    assert counts["whole"] >= 0.95 * len(PLANTED) and counts["in part"] == 0, counts


@pytest.mark.parametrize("prompt", TECHNICAL)
def test_technical_prompt_is_left_alone(prompt):
    assert scrub(prompt) == (prompt, False, ())


@pytest.mark.parametrize("prompt", ORDINARY_INTL)
def test_look_alike_is_left_alone(prompt):
    assert scrub(prompt) == (prompt, False, ())


def test_technical_rate():
    assert len(TECHNICAL) >= 50
    changed = [p for p in TECHNICAL if scrub(p).scrubbed]
    print(f"\ntechnical prompts changed: {len(changed)}/{len(TECHNICAL)}")
    assert len(changed) <= 0.02 * len(TECHNICAL), changed


def test_placeholders_are_stable_and_idempotent():
    for _, prompt, _ in PLANTED:
        once = scrub(prompt)
        assert scrub(prompt) == once
        assert scrub(once.text).text == once.text, prompt
