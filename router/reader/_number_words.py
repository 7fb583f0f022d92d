"""Years and versions said in words, read as digits before the period grammar reads a question.

People who dictate, or type as they speak, say years and versions in words: "twenty twenty four", "two
thousand and eight", "две тысячи двадцать пятого года", "в девятнадцатом году", "zweitausendvierundzwanzig",
"three point four", "drei Punkt zwei". The grammar reads periods in digits, so these are rewritten first:
- a year: English in two pairs ("nineteen ninety eight", "twenty oh nine", "twenty ten") or "two thousand (and)
  N"; Russian "две тысячи / тысяча девятьсот" + a number whose last word is an ordinal in any case, or the
  short "двадцать первый год" / "в восемнадцатом году" (an ordinal of ten or more before "год"); German one
  compound ("zweitausendelf", "neunzehnhundertachtundneunzig") or two words ("zweitausend fünfzehn");
- a version: a digit word, "point / Punkt / точка", a digit word.
What is no year stays in words: a count ("twenty five posts", "zweitausend Artikel"), a day ("двадцать
четвёртого мая"), an ordinal below ten ("первый год работы").

Why not a library: text2num reads English and German cardinals but no Russian ordinals, and reads "twenty
twenty four" as "20 24" (measured: 2.5.1); num2words goes the other way.
"""

from __future__ import annotations

import re

from router.reader._numbers import NUMBER_WORDS

__all__ = ["spelled_numbers_as_digits"]

_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*", re.U)
_WEAK = frozenset({"a", "an", "ein", "eine", "einen", "einem", "einer", "одно", "одну"})
_RU_ORDINAL_END = r"(?:ый|ий|ой|ого|его|ом|ем|ому|ему|ым|им|ая|яя|ую|юю|ое|ее|ые|ие|ых|их|ыми|ими)"
# Russian ordinal stems, longer first ("девятнадцат" before "девят").
_RU_ORDINALS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(stem + _RU_ORDINAL_END), value) for stem, value in (
        ("одиннадцат", 11), ("двенадцат", 12), ("тринадцат", 13), ("четырнадцат", 14), ("пятнадцат", 15),
        ("шестнадцат", 16), ("семнадцат", 17), ("восемнадцат", 18), ("девятнадцат", 19), ("двадцат", 20),
        ("тридцат", 30), ("сороков", 40), ("пятидесят", 50), ("шестидесят", 60), ("семидесят", 70),
        ("восьмидесят", 80), ("девяност", 90), ("десят", 10), ("перв", 1), ("втор", 2), ("четверт", 4),
        ("пят", 5), ("шест", 6), ("седьм", 7), ("восьм", 8), ("девят", 9),
    )
) + ((re.compile(r"трет(?:ий|ьего|ьем|ьему|ьим|ья|ью|ье|ьи|ьих)"), 3),)
_YEAR_WORD = re.compile(r"год|года|году|годом|годе|jahr|jahres|jahrs|year")  # one year: "десятые годы" are a decade
_POINT = frozenset({"point", "punkt", "точка", "dot"})
_ZERO = {"zero": 0, "oh": 0, "null": 0, "ноль": 0, "нуль": 0}
_GERMAN_CENTURY = re.compile(r"(zweitausend|neunzehnhundert)(?:und)?(\w*)")


def _fold(word: str) -> str:
    return word.casefold().replace("ё", "е")


def _cardinal(word: str) -> int | None:
    folded = _fold(word)
    return None if folded in _WEAK else NUMBER_WORDS.get(folded)


def _ordinal(word: str) -> int | None:
    folded = _fold(word)
    return next((value for pattern, value in _RU_ORDINALS if pattern.fullmatch(folded)), None)


def _number(word: str) -> tuple[int, bool] | None:
    """(value, is an ordinal) of one word to ninety-nine ("twenty-two" hyphenated too)."""
    if "-" in word:
        parts = [_cardinal(p) for p in word.split("-")]
        if len(parts) == 2 and parts[0] is not None and parts[1] is not None and parts[0] % 10 == 0 \
                and 20 <= parts[0] <= 90 and 1 <= parts[1] <= 9:
            return parts[0] + parts[1], False
        return None
    value = _cardinal(word)
    if value is not None and value < 100:
        return value, False
    ordinal = _ordinal(word)
    return (ordinal, True) if ordinal is not None else None


def _two_digits(words: list[str], k: int) -> tuple[int, bool, int] | None:
    """A number to ninety-nine from ``words[k]`` on: (value, its last word an ordinal, the index after it)."""
    first = _number(words[k]) if k < len(words) else None
    if first is None:
        return None
    value, ordinal = first
    if value % 10 == 0 and 20 <= value <= 90 and not ordinal and k + 1 < len(words):
        unit = _number(words[k + 1])
        if unit is not None and 1 <= unit[0] <= 9:
            return value + unit[0], unit[1], k + 2
    return value, ordinal, k + 1


def _year(words: list[str], i: int) -> tuple[int, int] | None:
    """(the year, the index after its words) for a year said in words from ``words[i]``."""
    w0 = _fold(words[i])
    german = _GERMAN_CENTURY.fullmatch(w0)
    if german is not None:  # "zweitausendvierundzwanzig", "zweitausend fünfzehn"
        century = 2000 if german.group(1) == "zweitausend" else 1900
        if german.group(2):
            rest = _cardinal(german.group(2))
            return (century + rest, i + 1) if rest is not None and 1 <= rest <= 99 else None
        after = _two_digits(words, i + 1)
        return (century + after[0], after[2]) if after is not None and after[0] >= 1 else None
    if w0 in ("nineteen", "twenty", "zwanzig", "neunzehn") and i + 1 < len(words):
        century = 1900 if w0 in ("nineteen", "neunzehn") else 2000
        w1 = _fold(words[i + 1])
        if w1 in ("oh", "o") and i + 2 < len(words):  # "twenty oh nine"
            unit = _cardinal(words[i + 2])
            return (century + unit, i + 3) if unit is not None and 1 <= unit <= 9 else None
        pair = _two_digits(words, i + 1)
        return (century + pair[0], pair[2]) if pair is not None and pair[0] >= 10 and not pair[1] else None
    if w0 == "two" and i + 1 < len(words) and _fold(words[i + 1]) == "thousand":  # "two thousand (and) eight"
        k = i + 3 if i + 2 < len(words) and _fold(words[i + 2]) == "and" else i + 2
        pair = _two_digits(words, k)
        return (2000 + pair[0], pair[2]) if pair is not None and not pair[1] else None
    if w0 in ("две", "двух") and i + 1 < len(words) and _fold(words[i + 1]).startswith("тысяч"):
        return _russian_rest(words, i + 2, 2000)
    if w0.startswith("тысяч") and i + 1 < len(words) and _fold(words[i + 1]).startswith(("девятьсот", "девятисот")):
        return _russian_rest(words, i + 2, 1900)
    # short: "двадцать первый год", "в восемнадцатом году": an ordinal of ten or more before the year word
    short = _two_digits(words, i)
    if short is not None and short[1] and short[0] >= 10 and short[2] < len(words) \
            and _YEAR_WORD.fullmatch(_fold(words[short[2]])):
        return (2000 + short[0] if short[0] <= 40 else 1900 + short[0]), short[2]
    return None


def _russian_rest(words: list[str], k: int, century: int) -> tuple[int, int] | None:
    """"две тысячи" + a number ending in an ordinal ("двадцать пятого"), or before the year word."""
    rest = _two_digits(words, k)
    if rest is None:
        return None
    value, ordinal, after = rest
    if ordinal or (after < len(words) and _YEAR_WORD.fullmatch(_fold(words[after]))):
        return century + value, after
    return None


def _version(words: list[str], i: int) -> tuple[str, int] | None:
    """("3.4", the index after it) for "three point four", "drei Punkt zwei", "три точка три"."""
    parts: list[int] = []
    k = i
    while k < len(words):
        digit = _ZERO.get(_fold(words[k]), _cardinal(words[k]))
        if digit is None or digit > 9:
            break
        parts.append(digit)
        if k + 2 < len(words) and _fold(words[k + 1]) in _POINT:
            k += 2
            continue
        k += 1
        break
    return (".".join(map(str, parts)), k) if len(parts) >= 2 else None


def spelled_numbers_as_digits(text: str) -> str:
    """``text`` with the years and versions said in words written in digits (see above)."""
    matches = list(_WORD.finditer(text))
    words = [m.group() for m in matches]
    out: list[str] = []
    last = 0
    i = 0
    while i < len(words):
        year = _year(words, i)
        found = (str(year[0]), year[1]) if year is not None else _version(words, i)
        # only words next to each other: "twenty, twenty" or "twenty. Four" are two things
        if found is not None and all(text[matches[j].end():matches[j + 1].start()].isspace()
                                     for j in range(i, found[1] - 1)):
            out.append(text[last:matches[i].start()] + found[0])
            last = matches[found[1] - 1].end()
            i = found[1]
            continue
        i += 1
    out.append(text[last:])
    return "".join(out)
