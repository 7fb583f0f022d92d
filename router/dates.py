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
    # The period the phrase names, when wider than the canonical range ("early 2025" may run to
    # June; "last week" may be the calendar week): a range inside it is right.
    earliest_from: date | None = None
    latest_to: date | None = None
    # "since 2024", "the last 12 months" name where the range starts, not a period to be inside of.
    pinned_from: bool = False

    @property
    def period(self) -> tuple[date, date | None]:
        """The period a range must lie within (None: it runs on, to today)."""
        start = self.earliest_from or self.date_from
        ends = [o for o in self.date_to_options if o is not None]
        end = self.latest_to or (max(ends) if ends else None)
        return start - timedelta(days=self.tolerance_days), (
            end + timedelta(days=self.tolerance_days) if end is not None else None
        )

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
    return DateExpectation(match.group(0), start, (today, None), tolerance_days=1, pinned_from=True)


def _this_year(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), date(today.year, 1, 1), (_year_end(today.year), today, None))


def _last_year(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), date(today.year - 1, 1, 1), (_year_end(today.year - 1),))


def _since_last_year(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(
        m.group(0), date(today.year - 1, 1, 1), (today, None, _year_end(today.year)), pinned_from=True
    )


def _this_month(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), today.replace(day=1), (_month_end(today), today, None))


def _last_month(m: re.Match[str], today: date) -> DateExpectation:
    start = _previous_month_start(today)
    return DateExpectation(m.group(0), start, (_month_end(start),))


def _since_year(m: re.Match[str], today: date) -> DateExpectation | None:
    year = int(m.group(1))
    if year > today.year:
        return None
    return DateExpectation(m.group(0), date(year, 1, 1), (today, None, _year_end(today.year)), pinned_from=True)


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



# --- named periods inside a year: quarters, halves, seasons, early/mid/late, weeks (issue 15) ---

_ORDINALS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"^(?:1|i|first|1st|перв|erst)", re.I), 1),
    (re.compile(r"^(?:2|ii|second|2nd|втор|zweit)", re.I), 2),
    (re.compile(r"^(?:3|iii|third|3rd|трет|dritt)", re.I), 3),
    (re.compile(r"^(?:4|iv|fourth|4th|last|четв[её]рт|последн|viert|letzt)", re.I), 4),
]
# ("last quarter" is the previous quarter, not the fourth: not an ordinal here)
_ORD = r"(1|2|3|4|i{1,3}|iv|first|second|third|fourth|1st|2nd|3rd|4th|перв\w*|втор\w*|трет\w*|четв[её]рт\w*" \
       r"|erst\w*|zweit\w*|dritt\w*|viert\w*)"
_YEAR = r"(?:\s+(?:of\s+|des\s+jahres\s+|года?\s+)?(\d{4})(?:\s*(?:г\.|года?|году))?)?"


def _ordinal(token: str) -> int | None:
    return next((n for pattern, n in _ORDINALS if pattern.match(token)), None)


def _latest_started(today: date, year: str | None, start_month: int) -> int:
    """The year of a period named without one: this year's, unless it has not begun yet."""
    if year:
        return int(year)
    return today.year if date(today.year, start_month, 1) <= today else today.year - 1


def _span(phrase: str, start: date, end: date, today: date, **kw: date) -> DateExpectation:
    # A period still running may end today or be left open, like "this year".
    options: tuple[date | None, ...] = (end,) if end < today else (end, today, None)
    return DateExpectation(phrase, start, options, **kw)  # type: ignore[arg-type]


def _months(phrase: str, year: int, first: int, last: int, today: date, **kw: date) -> DateExpectation | None:
    if not 1990 <= year <= today.year + 1:
        return None
    start = date(year, first, 1)
    if start > today:
        return None
    return _span(phrase, start, _month_end(date(year, last, 1)), today, **kw)


def _quarter(m: re.Match[str], today: date) -> DateExpectation | None:
    n = _ordinal(m.group(1))
    if n is None:
        return None
    return _months(m.group(0), _latest_started(today, m.group(2), 3 * n - 2), 3 * n - 2, 3 * n, today)


def _half(m: re.Match[str], today: date) -> DateExpectation | None:
    n = _ordinal(m.group(1))
    if n not in (1, 2, 4):  # "last half" = the second
        return None
    first = 1 if n == 1 else 7
    return _months(m.group(0), _latest_started(today, m.group(2), first), first, first + 5, today)


_SEASON_STARTS = [
    (re.compile(r"^(?:spring|весн|frühling|frühjahr)", re.I), 3),
    (re.compile(r"^(?:summer|лет|sommer)", re.I), 6),
    (re.compile(r"^(?:autumn|fall|осен|herbst)", re.I), 9),
]


def _season(m: re.Match[str], today: date) -> DateExpectation | None:
    first = next((month for pattern, month in _SEASON_STARTS if pattern.match(m.group(1))), None)
    if first is None:
        return None
    return _months(m.group(0), _latest_started(today, m.group(2), first), first, first + 2, today)


def _part_of_year(part: str) -> Callable[[re.Match[str], date], DateExpectation | None]:
    # Canonical ranges are the quarter the phrase most often means; the period it may mean is wider.
    def build(m: re.Match[str], today: date) -> DateExpectation | None:
        year = int(m.group(1))
        if part == "early":
            found = _months(m.group(0), year, 1, 3, today, latest_to=date(year, 6, 30))
        elif part == "mid":
            found = _months(m.group(0), year, 5, 8, today, earliest_from=date(year, 4, 1), latest_to=date(year, 9, 30))
        else:
            found = _months(m.group(0), year, 10, 12, today, earliest_from=date(year, 7, 1))
        return found

    return build


def _year_range(m: re.Match[str], today: date) -> DateExpectation | None:
    first, last = int(m.group(1)), int(m.group(2))
    if not 1990 <= first <= last <= today.year + 1 or date(first, 1, 1) > today:
        return None
    return _span(m.group(0), date(first, 1, 1), _year_end(last), today)


def _month_range(language: Language) -> Callable[[re.Match[str], date], DateExpectation | None]:
    def build(m: re.Match[str], today: date) -> DateExpectation | None:
        first = _month_number(m.group(1), language)
        last = _month_number(m.group(2), language)
        if first is None or last is None or last < first:
            return None
        return _months(m.group(0), _latest_started(today, m.group(3), first), first, last, today)

    return build


def _month_number(word: str, language: Language) -> int | None:
    if language == "ru":
        word = next((full for stem, full in _RU_MONTHS.items() if word.casefold().startswith(stem)), "")
        if not word:
            return None
    parsed = dateparser.parse(f"{word} 2000", languages=[language], settings={"PREFER_DAY_OF_MONTH": "first"})
    return parsed.month if parsed is not None else None


def _month_no_year(language: Language) -> Callable[[re.Match[str], date], DateExpectation | None]:
    def build(m: re.Match[str], today: date) -> DateExpectation | None:
        month = _month_number(m.group(1), language)
        if month is None:
            return None
        return _months(m.group(0), _latest_started(today, None, month), month, month, today)

    return build


def _this_week(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), today - timedelta(days=today.weekday()), (today, None))


def _last_week(m: re.Match[str], today: date) -> DateExpectation:
    # Rolling seven days canonically; the previous calendar week (Monday..Sunday) is inside too.
    monday = today - timedelta(days=today.weekday() + 7)
    return DateExpectation(m.group(0), today - timedelta(days=7), (today, None), tolerance_days=1,
                           earliest_from=monday)


def _yesterday(m: re.Match[str], today: date) -> DateExpectation:
    day = today - timedelta(days=1)
    return DateExpectation(m.group(0), day, (day, today))


def _year_before_last(m: re.Match[str], today: date) -> DateExpectation:
    return DateExpectation(m.group(0), date(today.year - 2, 1, 1), (_year_end(today.year - 2),))

Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], DateExpectation | None]]


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


_EN_MONTHS = r"(january|february|march|april|may|june|july|august|september|october|november|december)"
_DE_MONTHS = r"(januar|jänner|februar|märz|april|mai|juni|juli|august|september|oktober|november|dezember)"
_RU_MONTH_WORDS = r"(январ\w*|феврал\w*|март\w*|апрел\w*|ма[йяе]\w*|июн\w*|июл\w*|август\w*|сентябр\w*|октябр\w*|ноябр\w*|декабр\w*)"

# Order matters: the more specific phrase ("since last year") before the one it contains ("last year").
_RULES: list[Rule] = [
    # ranges of years and months, before "since <year>" ("с 2020 по 2022" starts like "с 2020")
    (_r(r"\b(?:between|from)\s+(\d{4})\s+(?:and|to|until|till|through)\s+(\d{4})\b"), _year_range),
    (_r(r"\b(\d{4})\s*[-–]\s*(\d{4})\b"), _year_range),
    (_r(r"(?:с|между)\s+(\d{4})\s+(?:по|до|и)\s+(\d{4})"), _year_range),
    (_r(r"\b(?:zwischen|von)\s+(\d{4})\s+(?:und|bis)\s+(\d{4})\b"), _year_range),
    (_r(r"\b(?:from|between)\s+" + _EN_MONTHS + r"\s+(?:and|to|until|through)\s+" + _EN_MONTHS + r"(?:\s+(\d{4}))?"),
     _month_range("en")),
    (_r(r"с\s+" + _RU_MONTH_WORDS + r"\s+по\s+" + _RU_MONTH_WORDS + r"(?:\s+(\d{4}))?"), _month_range("ru")),
    (_r(r"\b(?:von|zwischen)\s+" + _DE_MONTHS + r"\s+(?:bis|und)\s+" + _DE_MONTHS + r"(?:\s+(\d{4}))?"),
     _month_range("de")),
    # quarters and halves ("Q1 2025", "первый квартал 2025", "im ersten Quartal")
    (_r(r"\bq([1-4])" + _YEAR), _quarter),
    (_r(r"\b" + _ORD + r"\s+quarter" + _YEAR), _quarter),
    (_r(r"\b" + _ORD + r"\s+квартал\w*" + _YEAR), _quarter),
    (_r(r"\b" + _ORD + r"\.?\s+quartal\w*" + _YEAR), _quarter),
    (_r(r"\bh([12])" + _YEAR), _half),
    (_r(r"\b" + _ORD + r"\s+half" + _YEAR), _half),
    (_r(r"\b" + _ORD + r"\s+(?:полугоди\w*|половин\w*)" + _YEAR), _half),
    (_r(r"\b" + _ORD + r"\.?\s+(?:jahreshälfte|halbjahr\w*|hälfte)" + _YEAR), _half),
    # seasons
    (_r(r"\b(spring|summer|autumn|fall)\s+(?:of\s+)?(\d{4})\b"), _season),
    (_r(r"\b(?:in|during|this|last)\s+(?:the\s+)?(spring|summer|autumn|fall)()\b"), _season),
    (_r(r"(весн\w*|летом|лето|осен\w*)\s+(\d{4})"), _season),
    (_r(r"(весной|летом|осенью)()"), _season),
    (_r(r"\b(?:im\s+)?(frühling|frühjahr|sommer|herbst)\s+(\d{4})\b"), _season),
    (_r(r"\bim\s+(frühling|frühjahr|sommer|herbst)()\b"), _season),
    # early / mid / late <year>
    (_r(r"\b(?:early|the\s+beginning\s+of|the\s+start\s+of|beginning\s+of|start\s+of)\s+(\d{4})\b"),
     _part_of_year("early")),
    (_r(r"\b(?:mid|mid-|the\s+middle\s+of|middle\s+of)\s*(\d{4})\b"), _part_of_year("mid")),
    (_r(r"\b(?:late|the\s+end\s+of|end\s+of)\s+(\d{4})\b"), _part_of_year("late")),
    (_r(r"(?:в\s+)?начал[еао]\s+(\d{4})"), _part_of_year("early")),
    (_r(r"(?:в\s+)?середин[еау]\s+(\d{4})"), _part_of_year("mid")),
    (_r(r"(?:в\s+)?конц[еау]\s+(\d{4})"), _part_of_year("late")),
    (_r(r"\banfang\s+(\d{4})\b"), _part_of_year("early")),
    (_r(r"\bmitte\s+(\d{4})\b"), _part_of_year("mid")),
    (_r(r"\bende\s+(\d{4})\b"), _part_of_year("late")),
    # weeks and days
    (_r(r"\bthis\s+week\b|на\s+этой\s+неделе|за\s+эту\s+неделю|\bdiese\s+woche\b|\b(?:in|von|aus)\s+dieser\s+woche\b"),
     _this_week),
    (_r(r"\b(?:last|past|previous)\s+week\b|на\s+прошлой\s+неделе|за\s+прошлую\s+неделю"
        r"|\b(?:letzte|vergangene|vorige)\s+woche\b|\bin\s+der\s+(?:letzten|vergangenen)\s+woche\b"), _last_week),
    (_r(r"\byesterday\b|\bвчера\b|\bgestern\b"), _yesterday),
    (_r(r"позапрошл\w*\s+год\w*|\bvorletzte[snm]?\s+jahr\w*|\bthe\s+year\s+before\s+last\b"), _year_before_last),
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
    (_r(r"(?<!\w)(?:в|за)\s+(\d{4})\b"), _in_year),
    # a month named without a year: the latest one that has begun
    (_r(r"\b(?:in|during)\s+" + _EN_MONTHS + r"\b(?!\s+\d)"), _month_no_year("en")),
    (_r(r"\b(?:im)\s+" + _DE_MONTHS + r"\b(?!\s+\d)"), _month_no_year("de")),
    (_r(r"(?<!\w)(?:в|за)\s+" + _RU_MONTH_WORDS + r"(?!\s+\d)"), _month_no_year("ru")),
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
    """A reason when the bounds contradict the question, else None.

    Only contradictions are rejected: bounds the wrong way round, a dateFrom in the future, or a
    range that is not inside the period a date expression of the question names. A narrower
    range inside it is right ("the first quarter of 2025" inside "2025"; March inside "spring").
    A phrase that names a start ("since 2024", "the last 12 months") pins dateFrom to it.
    """
    if date_from is not None and date_to is not None and date_from > date_to:
        return f"dateFrom {date_from.isoformat()} is after dateTo {date_to.isoformat()}; change them (swapped?)"
    if date_from is not None and date_from > today:
        return f"dateFrom {date_from.isoformat()} is in the future (today is {today.isoformat()}); change dateFrom"
    expected = find_date_expectation(question, today)
    if expected is None:
        return None
    start, end = expected.period
    # The search service clamps a dateTo after today to today: a period still running ends today.
    effective_to = min(date_to, today) if date_to is not None else None
    open_ok = None in expected.date_to_options
    problems: list[str] = []
    pinned_off = (
        expected.pinned_from and date_from is not None
        and abs((date_from - expected.date_from).days) > expected.tolerance_days
    )
    if date_from is None or pinned_off or date_from < start or (end is not None and date_from > end):
        problems.append(f"dateFrom={date_from.isoformat() if date_from else 'omitted'}")
    if effective_to is None:
        if not open_ok:
            problems.append("dateTo=omitted")
    elif effective_to < start or (end is not None and effective_to > end):
        problems.append(f"dateTo={date_to.isoformat() if date_to else 'omitted'}")
    if not problems:
        return None
    period_end = end.isoformat() if end is not None else today.isoformat()
    return (
        f"the question says {expected.phrase!r} and today is {today.isoformat()} ({today:%A}): the range must lie "
        f"within {start.isoformat()}..{period_end} (e.g. dateFrom {expected.date_from.isoformat()}, dateTo "
        f"{expected.describe_to()}); change {' and '.join(problems)}"
    )
