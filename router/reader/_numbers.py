"""Counts in a period: digits, numerals as words (ru/en/de, inflected; to ninety-nine, compounds
included: "twenty-five", "двадцать пять", "fünfundzwanzig") and the fractions people use for
periods ("полгода", "half a year", "ein halbes Jahr", "полтора года", "a fortnight"), and vague counts read as a
number, as people who use them label them (round 16): a couple ("пару", "ein paar") is two, a few ("несколько",
"einige") three.

Why not a library: text2num reads English and German numerals but no Russian; num2words goes the
other way (the tests use it to spell the matrix's counts, an independent computation)."""

from __future__ import annotations

from dataclasses import dataclass

from router.reader._lexicon import UNITS, Unit
from router.reader._tokens import Token, fold_at, standalone_number


def _forms(value: int, *words: str) -> dict[str, int]:
    return dict.fromkeys(words, value)


NUMBER_WORDS: dict[str, int] = {
    **_forms(1, "one", "a", "an", "один", "одна", "одно", "одну", "одного", "одной", "одним", "ein", "eine", "einen",
             "einem", "einer", "eins"),
    **_forms(2, "two", "два", "две", "двух", "двум", "zwei"),
    **_forms(3, "three", "три", "трех", "трем", "drei"),
    **_forms(4, "four", "четыре", "четырех", "vier"),
    **_forms(5, "five", "пять", "пяти", "fünf"),
    **_forms(6, "six", "шесть", "шести", "sechs"),
    **_forms(7, "seven", "семь", "семи", "sieben"),
    **_forms(8, "eight", "восемь", "восьми", "acht"),
    **_forms(9, "nine", "девять", "девяти", "neun"),
    **_forms(10, "ten", "десять", "десяти", "zehn"),
    **_forms(11, "eleven", "одиннадцать", "одиннадцати", "elf"),
    **_forms(12, "twelve", "двенадцать", "двенадцати", "zwölf"),
}
_DIGIT_WORDS = {word: value for word, value in NUMBER_WORDS.items() if 1 <= value <= 9 and len(word) > 2}
# 13-19 and the tens: (English, Russian nominative, Russian oblique, German)
_TEENS_AND_TENS: dict[int, tuple[str, ...]] = {
    13: ("thirteen", "тринадцать", "тринадцати", "dreizehn"), 14: ("fourteen", "четырнадцать", "четырнадцати", "vierzehn"),
    15: ("fifteen", "пятнадцать", "пятнадцати", "fünfzehn"), 16: ("sixteen", "шестнадцать", "шестнадцати", "sechzehn"),
    17: ("seventeen", "семнадцать", "семнадцати", "siebzehn"),
    18: ("eighteen", "восемнадцать", "восемнадцати", "achtzehn"),
    19: ("nineteen", "девятнадцать", "девятнадцати", "neunzehn"), 20: ("twenty", "двадцать", "двадцати", "zwanzig"),
    30: ("thirty", "тридцать", "тридцати", "dreißig", "dreissig"), 40: ("forty", "сорок", "сорока", "vierzig"),
    50: ("fifty", "пятьдесят", "пятидесяти", "fünfzig"), 60: ("sixty", "шестьдесят", "шестидесяти", "sechzig"),
    70: ("seventy", "семьдесят", "семидесяти", "siebzig"), 80: ("eighty", "восемьдесят", "восьмидесяти", "achtzig"),
    90: ("ninety", "девяносто", "девяноста", "neunzig"), 100: ("hundred", "сто", "ста", "hundert"),
}
for _value, _words in _TEENS_AND_TENS.items():
    NUMBER_WORDS.update(_forms(_value, *_words))
# German writes 21-99 as one word, the ones first: "einundzwanzig", "fünfundvierzig".
_GERMAN_ONES = {"ein": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9}
for _tens in range(20, 100, 10):
    for _german_tens in _TEENS_AND_TENS[_tens][3:]:
        NUMBER_WORDS.update({f"{one}und{_german_tens}": _tens + value for one, value in _GERMAN_ONES.items()})
# "a" and "ein" are counts only right before a unit ("a year ago", "vor einem Monat").
_WEAK = frozenset({"a", "an", "ein", "eine", "einen", "einem", "einer"})


@dataclass(frozen=True)
class Amount:
    count: int
    unit: Unit
    first: int  # token index where the amount starts
    next: int  # token index after it


_HALF_OF = {"year": (6, "month"), "month": (15, "day"), "day": (12, "hour")}


def amount(tokens: list[Token], i: int) -> Amount | None:
    """ "3 months", "three weeks", "полгода", "half a year", "anderthalb Jahre" at token ``i``."""
    if i >= len(tokens):
        return None
    word = tokens[i].fold
    if word == "полгода":
        return Amount(6, "month", i, i + 1)
    if word in ("полтора", "полторы") and _unit(tokens, i + 1) == "year":
        return Amount(18, "month", i, i + 2)
    if word in ("полтора", "полторы") and _unit(tokens, i + 1) == "month":
        return Amount(45, "day", i, i + 2)
    if word == "anderthalb" and _unit(tokens, i + 1) == "year":
        return Amount(18, "month", i, i + 2)
    fortnight = i + 1 if word in ("a", "one") else i  # "the past fortnight", "a fortnight ago"
    if fold_at(tokens, fortnight) == "fortnight":
        return Amount(14, "day", i, fortnight + 1)
    half = _half(tokens, i)
    if half is not None:
        return half
    vague = _vague_count(tokens, i)
    if vague is not None:
        return vague
    counted = count_at(tokens, i)
    if counted is None:
        return None
    count, k = counted
    unit = _unit(tokens, k)
    if unit is None or count <= 0 or tokens[k].before == "-":  # "six-day certificates": an adjective
        return None
    return Amount(count, unit, i, k + 1)


def _half(tokens: list[Token], i: int) -> Amount | None:
    words = [t.fold for t in tokens[i:i + 3]]
    # "half a year", "a half-year", "a half year", "ein halbes Jahr", "einem halben Jahr"
    if words[:2] in (["half", "a"], ["half", "an"]) and _unit(tokens, i + 2) == "year":
        return Amount(6, "month", i, i + 3)
    start = i + 1 if words and words[0] in _WEAK else i
    if start < len(tokens) and tokens[start].fold in ("half", "halbes", "halben", "halbe") \
            and _unit(tokens, start + 1) == "year":
        return Amount(6, "month", i, start + 2)
    return None


# A vague count read as a number: a couple ("a couple of weeks", "пару недель", "ein paar Wochen") is two, a few
# ("a few months", "несколько недель", "einige Tage") three.
_VAGUE_COUNTS = {"couple": 2, "пару": 2, "пара": 2, "paar": 2, "few": 3, "несколько": 3, "нескольких": 3,
                 "einige": 3, "einigen": 3}


def _vague_count(tokens: list[Token], i: int) -> Amount | None:
    j = i + 1 if i < len(tokens) and tokens[i].fold in ("a", "the", "ein") else i
    if j >= len(tokens) or tokens[j].fold not in _VAGUE_COUNTS:
        return None
    k = j + 2 if j + 1 < len(tokens) and tokens[j + 1].fold == "of" else j + 1
    unit = _unit(tokens, k)
    count = _VAGUE_COUNTS[tokens[j].fold]
    return Amount(count, unit, i, k + 1) if unit is not None and unit not in ("quarter", "half") else None


def inverted_amount(tokens: list[Token], i: int) -> Amount | None:
    """ "недели три", "месяца два", "лет пять": a Russian unit before its numeral, "about N units"."""
    if i + 1 >= len(tokens) or not tokens[i].fold.isalpha() or tokens[i].fold.isascii():
        return None
    unit = UNITS.get(tokens[i].fold)
    count = NUMBER_WORDS.get(tokens[i + 1].fold)
    if unit is None or count is None or count < 2 or not tokens[i + 1].fold.isalpha():
        return None
    return Amount(count, unit, i, i + 2)


def count_at(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """The count at ``i`` and the index after it: "3", "three", "twenty-five", "двадцать пять"."""
    number = standalone_number(tokens, i)
    if number is not None:
        return (number, i + 1) if number < 1000 else None
    word = tokens[i].fold
    if word in _WEAK and not _unit(tokens, i + 1):
        return None
    value = NUMBER_WORDS.get(word)
    if value is None:
        return None
    ones = _DIGIT_WORDS.get(fold_at(tokens, i + 1))
    if value in range(20, 100, 10) and ones is not None and tokens[i].after in (" ", "-"):
        return value + ones, i + 2  # "twenty-five", "двадцать пять", "двадцати пяти"
    return value, i + 1


def _unit(tokens: list[Token], i: int) -> Unit | None:
    if i >= len(tokens):
        return None
    fold = tokens[i].fold
    if fold == "half" and i + 1 < len(tokens) and tokens[i].after == "-" and tokens[i + 1].fold == "year":
        return "half"
    return UNITS.get(fold)


def unit_at(tokens: list[Token], i: int) -> tuple[Unit, int] | None:
    """The unit word at ``i`` and the index after it ("half-year" is two tokens)."""
    unit = _unit(tokens, i)
    if unit is None:
        return None
    return unit, i + (2 if tokens[i].fold == "half" else 1)


# The numerals of NUMBER_WORDS longer than two letters, longest first: a regular-expression
# alternation for the follow-up grammar's counts ("two pages further", "the year before").
NUMBER_WORD_ALTERNATION = "|".join(sorted((w for w in NUMBER_WORDS if len(w) > 2), key=len, reverse=True))


def number_value(word: str) -> int | None:
    """A count written in digits or as a numeral ("3", "three", "drei", "три"); None: neither."""
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word.casefold())
