"""The word pairs each trap operator may swap, written by the team. Each pair (a, b) is a change of one
answer-determining word or phrase: the answer to a request holding `a` states or depends on it, and
the same request with `b` asks for another answer. Both directions are allowed unless noted.

Operators choose from these tables under their own context rules; `accept.py` only asks whether a
changed span is a pair listed here (or a gazetteer or number pair), so the two stay independent in
logic while sharing the vocabulary."""
from __future__ import annotations

# polarity: evaluative and directional opposites (nouns in the plural forms listed only)
POLARITY: tuple[tuple[str, str], ...] = (
    ("benefits", "drawbacks"), ("advantages", "disadvantages"), ("advantage", "disadvantage"),
    ("pros", "cons"), ("strengths", "weaknesses"), ("best", "worst"),
    ("increase", "decrease"), ("increases", "decreases"), ("increased", "decreased"),
    ("increasing", "decreasing"), ("without", "with"), ("before", "after"),
    ("positive", "negative"), ("maximum", "minimum"), ("maximize", "minimize"), ("maximise", "minimise"),
    ("largest", "smallest"), ("biggest", "smallest"), ("highest", "lowest"), ("fastest", "slowest"),
    ("cheapest", "most expensive"), ("most", "least"), ("ascending", "descending"),
    ("encrypt", "decrypt"), ("encode", "decode"), ("encoding", "decoding"), ("enable", "disable"),
)
# negation: the word, then its negated form (added or removed)
NEGATION: tuple[tuple[str, str], ...] = (
    ("is", "is not"), ("are", "are not"), ("was", "was not"), ("were", "were not"),
    ("can", "cannot"), ("could", "could not"), ("should", "should not"), ("will", "will not"),
    ("would", "would not"), ("does", "does not"), ("do", "do not"), ("did", "did not"),
    ("has", "has not"), ("have", "have not"),
    ("isn't", "is"), ("aren't", "are"), ("wasn't", "was"), ("weren't", "were"), ("can't", "can"),
    ("couldn't", "could"), ("shouldn't", "should"), ("won't", "will"), ("wouldn't", "would"),
    ("doesn't", "does"), ("don't", "do"), ("didn't", "did"),
)
# comparison: comparative opposites (the second of a one-way pair never maps back: "shorter" could
# be the opposite of "longer" or of "taller")
COMPARISON: tuple[tuple[str, str], ...] = (
    ("more", "less"), ("less", "more"), ("fewer", "more"), ("higher", "lower"), ("lower", "higher"),
    ("faster", "slower"), ("slower", "faster"), ("bigger", "smaller"), ("larger", "smaller"),
    ("smaller", "larger"), ("better", "worse"), ("worse", "better"), ("stronger", "weaker"),
    ("weaker", "stronger"), ("longer", "shorter"), ("taller", "shorter"), ("cheaper", "more expensive"),
    ("more expensive", "cheaper"), ("heavier", "lighter"), ("lighter", "heavier"), ("easier", "harder"),
    ("harder", "easier"), ("warmer", "colder"), ("colder", "warmer"), ("hotter", "colder"),
    ("safer", "riskier"), ("riskier", "safer"), ("earlier", "later"), ("later", "earlier"),
    ("above", "below"), ("below", "above"), ("greater", "smaller"), ("over", "under"), ("under", "over"),
)
COMPARATIVE_WORDS = frozenset(w for pair in COMPARISON for w in pair if " " not in w)

# units: (a, b) in the same grammatical number; the operator keeps the source's form
UNITS: tuple[tuple[str, str], ...] = (
    ("km", "miles"), ("kilometers", "miles"), ("kilometres", "miles"), ("kilometer", "mile"),
    ("kilometre", "mile"), ("miles", "kilometers"), ("mile", "kilometer"), ("mi", "km"),
    ("kg", "lbs"), ("kilograms", "pounds"), ("kilogram", "pound"), ("lbs", "kg"), ("lb", "kg"),
    ("pounds", "kilograms"), ("pound", "kilogram"),
    ("celsius", "fahrenheit"), ("fahrenheit", "celsius"), ("°C", "°F"), ("°F", "°C"),
    ("USD", "EUR"), ("EUR", "USD"), ("dollars", "euros"), ("euros", "dollars"), ("dollar", "euro"),
    ("euro", "dollar"), ("$", "€"), ("€", "$"), ("GBP", "USD"),
    ("GB", "MB"), ("MB", "GB"), ("TB", "GB"), ("KB", "MB"), ("gigabytes", "megabytes"),
    ("megabytes", "gigabytes"), ("terabytes", "gigabytes"),
    ("meters", "feet"), ("metres", "feet"), ("feet", "meters"), ("meter", "foot"), ("metre", "foot"),
    ("foot", "meter"), ("m", "ft"), ("ft", "m"), ("cm", "inches"), ("centimeters", "inches"),
    ("inches", "centimeters"), ("inch", "centimeter"), ("centimeter", "inch"), ("mm", "inches"),
    ("liters", "gallons"), ("litres", "gallons"), ("gallons", "liters"), ("liter", "gallon"),
    ("gallon", "liter"), ("ml", "ounces"), ("ounces", "grams"), ("grams", "ounces"), ("g", "oz"),
    ("oz", "g"), ("mph", "km/h"), ("km/h", "mph"), ("kph", "mph"), ("kWh", "MJ"), ("calories", "kilojoules"),
)
# units that are also ordinary words: only swapped right after a number ("5 feet", not "my feet")
UNITS_NEED_NUMBER = frozenset({"feet", "foot", "pound", "pounds", "m", "g", "mi", "oz", "ft", "inch", "inches",
                               "meter", "metre", "meters", "metres", "euro", "dollar", "gallon", "liter", "mile",
                               "kilogram", "kilometer", "kilometre", "centimeter", "calories", "ml", "mm", "cm"})

# scope: quantifiers and time windows (each a widening or narrowing of what is asked about)
QUANTIFIERS: tuple[tuple[str, str], ...] = (
    ("all", "some"), ("some", "all"), ("always", "sometimes"), ("sometimes", "always"), ("never", "sometimes"),
    ("everyone", "someone"), ("everybody", "somebody"), ("everything", "something"),
)
TIME_WINDOWS: tuple[tuple[str, str], ...] = (
    ("this week", "this month"), ("this month", "this week"), ("this month", "this year"),
    ("this year", "this month"), ("today", "this week"), ("this week", "today"), ("tonight", "this week"),
    ("this weekend", "this month"), ("next week", "next month"), ("next month", "next week"),
    ("last week", "last month"), ("last month", "last week"), ("last year", "the last five years"),
    ("the last five years", "last year"), ("this morning", "today"), ("tomorrow", "this week"),
)
# date and time: relative days and named days swapped for one another
RELATIVE_DAYS: tuple[tuple[str, str], ...] = (
    ("today", "tomorrow"), ("tomorrow", "today"), ("yesterday", "today"), ("tonight", "tomorrow night"),
    ("next week", "last week"), ("last week", "next week"), ("next month", "last month"),
    ("last month", "next month"), ("next year", "last year"), ("last year", "next year"),
    ("this morning", "this evening"), ("this evening", "this morning"), ("this afternoon", "this morning"),
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
DURATION_UNITS = frozenset("second seconds minute minutes min mins hour hours hr hrs day days week weeks month months "
                           "year years decade decades century centuries".split())
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                "fifteen", "twenty", "thirty", "forty", "fifty", "hundred")


def pair_set(pairs) -> frozenset[tuple[str, str]]:
    """Both directions of a symmetric table, lower-cased."""
    out = set()
    for a, b in pairs:
        out.add((a.lower(), b.lower()))
        out.add((b.lower(), a.lower()))
    return frozenset(out)
