"""Date ranges from the question's words, computed in code (SPEC §3, §5).

The model resolves "this year", "за последние 12 месяцев", "seit letztem Jahr" itself (the
system prompt gives it today's date); this module computes the same range independently so
the gateway can reject a wrong one with a reason, and the fallback router can use it directly.
(Swapped bounds and a future dateFrom are rejected by the search service's normalization.)
Relative amounts ("12 months ago") and month names are resolved by `dateparser`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import dateparser

from infra.results import Language


@dataclass(frozen=True)
class DateExpectation:
    """What a relative or calendar expression in the question means, given today."""

    phrase: str
    date_from: date
    date_to_options: tuple[date | None, ...]  # acceptable dateTo values; None = may be omitted
    tolerance_days: int = 0  # rolling windows: inclusive/exclusive conventions differ by a day

    @property
    def date_to(self) -> date | None:
        """The canonical upper bound (what the fallback router uses)."""
        return self.date_to_options[0]

    def describe_to(self) -> str:
        options = [o.isoformat() if o is not None else "omitted" for o in self.date_to_options]
        return " or ".join(options)


def _year_end(year: int) -> date:
    return date(year, 12, 31)


def _month_end(day: date) -> date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


def _previous_month_start(today: date) -> date:
    first = today.replace(day=1)
    return (first - timedelta(days=1)).replace(day=1)


_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12,
    "один": 1, "одна": 1, "одну": 1, "два": 2, "две": 2, "три": 3, "четыре": 4, "пять": 5, "шесть": 6,
    "семь": 7, "восемь": 8, "девять": 9, "десять": 10, "одиннадцать": 11, "двенадцать": 12,
    "ein": 1, "eine": 1, "einen": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6,
    "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12,
}
_NUM = r"(\d{1,3}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"

# unit stem -> English unit for dateparser's "N <unit>s ago"
_UNITS = [
    (re.compile(r"^(day|дн|ден|день|tag)"), "day"),
    (re.compile(r"^(week|недел|woche)"), "week"),
    (re.compile(r"^(month|месяц|monat)"), "month"),
    (re.compile(r"^(year|год|лет|jahr)"), "year"),
]

_RU_MONTHS = {
    "январ": "январь", "феврал": "февраль", "март": "март", "апрел": "апрель", "ма": "май", "июн": "июнь",
    "июл": "июль", "август": "август", "сентябр": "сентябрь", "октябр": "октябрь", "ноябр": "ноябрь",
    "декабр": "декабрь",
}


def _number(token: str) -> int:
    return int(token) if token.isdigit() else _NUMBER_WORDS[token.casefold()]


def _unit(token: str) -> str | None:
    for pattern, unit in _UNITS:
        if pattern.match(token.casefold()):
            return unit
    return None


def _ago(n: int, unit: str, today: date) -> date | None:
    parsed = dateparser.parse(
        f"{n} {unit}{'s' if n != 1 else ''} ago", languages=["en"],
        settings={"RELATIVE_BASE": datetime(today.year, today.month, today.day)},
    )
    return parsed.date() if parsed is not None else None


def _rolling(match: re.Match[str], today: date, n_group: int | None, unit_group: int) -> DateExpectation | None:
    n = _number(match.group(n_group)) if n_group is not None else 1
    unit = _unit(match.group(unit_group))
    if unit is None or n <= 0:
        return None
    start = _ago(n, unit, today)
    if start is None:
        return None
    return DateExpectation(match.group(0), start, (today, None), tolerance_days=1)


def _this_year(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), date(today.year, 1, 1), (_year_end(today.year), today, None))


def _last_year(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), date(today.year - 1, 1, 1), (_year_end(today.year - 1),))


def _since_last_year(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), date(today.year - 1, 1, 1), (today, None, _year_end(today.year)))


def _this_month(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), today.replace(day=1), (_month_end(today), today, None))


def _last_month(m: re.Match[str], today: date) -> DateExpectation:
    start = _previous_month_start(today)
    return DateExpectation(m.group(0), start, (_month_end(start),))


def _since_year(m: re.Match[str], today: date) -> DateExpectation | None:
    year = int(m.group(1))
    if year > today.year:
        return None
    return DateExpectation(m.group(0), date(year, 1, 1), (today, None, _year_end(today.year)))


def _in_year(m: re.Match[str], today: date) -> DateExpectation | None:
    year = int(m.group(1))
    if not 1990 <= year <= today.year + 1:
        return None
    return DateExpectation(m.group(0), date(year, 1, 1), (_year_end(year),))


def _month_of_year(language: Language) -> Callable[[re.Match[str], date], DateExpectation | None]:
    def build(m: re.Match[str], today: date) -> DateExpectation | None:
        word, year = m.group(1), m.group(2)
        if language == "ru":
            word = next((full for stem, full in _RU_MONTHS.items() if word.startswith(stem)), "")
            if not word:
                return None
        parsed = dateparser.parse(f"{word} {year}", languages=[language], settings={"PREFER_DAY_OF_MONTH": "first"})
        if parsed is None or str(parsed.year) != year:
            return None
        start = parsed.date().replace(day=1)
        return DateExpectation(m.group(0), start, (_month_end(start),))

    return build


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], DateExpectation | None]]


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


_EN_MONTHS = r"(january|february|march|april|may|june|july|august|september|october|november|december)"
_DE_MONTHS = r"(januar|jänner|februar|märz|april|mai|juni|juli|august|september|oktober|november|dezember)"
_RU_MONTH_WORDS = r"(январ\w*|феврал\w*|март\w*|апрел\w*|ма[йяе]\w*|июн\w*|июл\w*|август\w*|сентябр\w*|октябр\w*|ноябр\w*|декабр\w*)"

# Order matters: the more specific phrase ("since last year") before the one it contains ("last year").
_RULES: list[Rule] = [
    # rolling windows
    (_r(r"\b(?:last|past|previous)\s+" + _NUM + r"\s+(days?|weeks?|months?|years?)\b"),
     lambda m, t: _rolling(m, t, 1, 2)),
    (_r(r"за\s+последн\w*\s+" + _NUM + r"\s+(дн\w*|ден\w*|недел\w*|месяц\w*|год\w*|лет)"),
     lambda m, t: _rolling(m, t, 1, 2)),
    (_r(r"\b(?:in\s+den\s+)?letzten\s+" + _NUM + r"\s+(tag\w*|woche\w*|monat\w*|jahr\w*)"),
     lambda m, t: _rolling(m, t, 1, 2)),
    (_r(r"\b(?:over|in|during)\s+the\s+(?:past|last)\s+(day|week|month|year)\b"), lambda m, t: _rolling(m, t, None, 1)),
    (_r(r"за\s+последн\w*\s+(день|недел\w*|месяц|год)"), lambda m, t: _rolling(m, t, None, 1)),
    # since last year
    (_r(r"\bsince\s+last\s+year\b"), _since_last_year),
    (_r(r"(?:начиная\s+)?с\s+прошлого\s+года"), _since_last_year),
    (_r(r"\bseit\s+(?:dem\s+)?(?:letzte[mn]?|vergangene[mn]?|vorige[mn]?)\s+jahr"), _since_last_year),
    (_r(r"\bseit\s+(?:dem\s+)?vorjahr"), _since_last_year),
    # since <year>
    (_r(r"\bsince\s+(\d{4})\b"), _since_year),
    (_r(r"(?:начиная\s+)?с\s+(\d{4})(?:\s+г(?:ода|\.)?)?"), _since_year),
    (_r(r"\bseit\s+(\d{4})\b"), _since_year),
    # this / last year
    (_r(r"\b(?:this|the\s+current)\s+year\b"), _this_year),
    (_r(r"(?:в\s+этом|за\s+этот|этого|текущего|в\s+текущем|за\s+текущий)\s+год\w*|с\s+начала\s+года"), _this_year),
    (_r(r"\b(?:dieses|diesem|laufenden|aktuellen)\s+jahr\w*|\bseit\s+jahresbeginn|\bdiesjährig\w*"), _this_year),
    (_r(r"\b(?:last|previous)\s+year\b"), _last_year),
    (_r(r"(?:в\s+прошлом|за\s+прошлый|прошлого|в\s+прошедшем)\s+год\w*"), _last_year),
    (_r(r"\b(?:letzte[snm]?|vergangene[snm]?|vorige[snm]?)\s+jahr\w*|\bim\s+vorjahr"), _last_year),
    # this / last month
    (_r(r"\bthis\s+month\b"), _this_month),
    (_r(r"(?:в\s+этом|за\s+этот|этого|текущего)\s+месяц\w*"), _this_month),
    (_r(r"\b(?:diesen|diesem)\s+monat\b"), _this_month),
    (_r(r"\b(?:last|previous)\s+month\b"), _last_month),
    (_r(r"(?:в\s+прошлом|за\s+прошлый|прошлого)\s+месяц\w*"), _last_month),
    (_r(r"\b(?:letzte[nm]?|vergangene[nm]?|vorige[nm]?)\s+monat\w*|\bim\s+vormonat"), _last_month),
    # a month of a year
    (_r(r"\b(?:in|during|from)\s+" + _EN_MONTHS + r"\s+(\d{4})\b"), _month_of_year("en")),
    (_r(r"\b(?:im|in|von|aus)\s+" + _DE_MONTHS + r"\s+(\d{4})\b"), _month_of_year("de")),
    (_r(r"(?:в|за)\s+" + _RU_MONTH_WORDS + r"\s+(\d{4})"), _month_of_year("ru")),
    # a calendar year
    (_r(r"\b(?:in|during|from|of)\s+(\d{4})\b"), _in_year),
    (_r(r"(?:в|за)\s+(\d{4})\s*(?:г\.|год\w*)"), _in_year),
    (_r(r"\b(\d{4})\s+года\b"), _in_year),
    (_r(r"\b(?:im\s+jahr(?:e)?|(?:aus|von|in)\s+dem\s+jahr(?:e)?|aus|von|in)\s+(\d{4})\b"), _in_year),
]


def find_date_expectation(question: str, today: date) -> DateExpectation | None:
    """The first date expression in ``question`` (in rule order), resolved against ``today``."""
    for pattern, build in _RULES:
        match = pattern.search(question)
        if match is None:
            continue
        expectation = build(match, today)
        if expectation is not None:
            return expectation
    return None


def check_against_question(
    question: str, date_from: date | None, date_to: date | None, today: date
) -> str | None:
    """A reason when the bounds contradict a date expression in the question, else None."""
    expected = find_date_expectation(question, today)
    if expected is None:
        return None
    from_ok = date_from is not None and abs((date_from - expected.date_from).days) <= expected.tolerance_days
    # The search service clamps a dateTo after today to today: a period still running ends today.
    options = {*expected.date_to_options, *(min(o, today) for o in expected.date_to_options if o is not None)}
    to_ok = any(
        (option is None and date_to is None)
        or (option is not None and date_to is not None and abs((date_to - option).days) <= expected.tolerance_days)
        for option in options
    )
    if from_ok and to_ok:
        return None
    return (
        f"the question says {expected.phrase!r} and today is {today.isoformat()} ({today:%A}), so dateFrom "
        f"must be {expected.date_from.isoformat()} and dateTo {expected.describe_to()}; got "
        f"dateFrom={date_from.isoformat() if date_from else 'omitted'}, "
        f"dateTo={date_to.isoformat() if date_to else 'omitted'}"
    )
