"""Period anchors: the things a period is named by (a year -- also "two years ago" after a month --,
a month of a year, a day, a season, a quarter, a half, a part of a year, a decade, this/last/the one
before last + a unit, N units ago, the past N units, the first or last N units of a year or month).
Each parser looks at the tokens from one index and returns the anchor and where it ends, or None;
`anchor_at` tries them in turn."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta

from router.reader import _lexicon as lx
from router.reader._calendar import months_span, shift, unit_span
from router.reader._numbers import amount, count_at, inverted_amount, unit_at
from router.reader._tokens import Token, fold_at, standalone_number


@dataclass(frozen=True)
class Anchor:
    first: int  # token span [first, next)
    next: int
    start: date
    end: date
    kind: str  # "day", "month", "year", "relative", "rolling", ...
    year_given: bool = True  # False: the latest such period that has begun ("in March")
    refit: Callable[[int], Anchor] | None = None  # the same anchor in another year (ranges)
    earliest: date | None = None  # a period the phrase may also mean ("early 2025" may run to June)
    latest: date | None = None
    rolling: bool = False  # a window that ends today; its start is pinned
    to_options: tuple[date | None, ...] | None = None  # special dateTo conventions ("this week")
    tolerance: int = 0


def _year_number(tokens: list[Token], i: int) -> int | None:
    number = standalone_number(tokens, i) if i < len(tokens) else None
    return number if number is not None and 1900 <= number <= 2099 and len(tokens[i].text) == 4 else None


def _skip(tokens: list[Token], i: int, words: frozenset[str]) -> int:
    while i < len(tokens) and tokens[i].fold in words:
        i += 1
    return i


_OF = frozenset({"of", "the", "des", "dem", "von", "от"})  # "the first third of 2013", "dem ersten Drittel von 2013"


def year_spec(tokens: list[Token], i: int, today: date) -> tuple[int, int] | None:
    """ "2025", "2025 года", "of last year", "прошлого года", "letzten Jahres", "the year before last"."""
    j = _skip(tokens, i, _OF)
    year = _year_number(tokens, j)
    if year is None and j == i and _short_year_after_code(tokens, i):
        year = 2000 + int(tokens[i].text)  # "Q3/24", "H1 '25"
    if year is not None:
        k = j + 1
        if fold_at(tokens, k) in lx.YEAR_WORDS and tokens[j].after.strip() in ("", "-"):
            k += 1
        return year, k
    offset = lx.relative(fold_at(tokens, j))
    if offset is not None and lx.UNITS.get(fold_at(tokens, j + 1)) == "year":
        return today.year + offset, j + 2
    if lx.UNITS.get(fold_at(tokens, j)) == "year" and (fold_at(tokens, j + 1), fold_at(tokens, j + 2)) == lx.BEFORE_LAST:
        return today.year - 2, j + 3
    if lx.COMPOUND_RELATIVE.get(fold_at(tokens, j), ("", 0))[0] == "year":
        return today.year + lx.COMPOUND_RELATIVE[fold_at(tokens, j)][1], j + 1
    ago = _years_ago(tokens, j)
    if ago is not None:  # "December two years ago", "im Mai vor drei Jahren", "в марте год назад"
        return today.year - ago[0], ago[1]
    return None


def _short_year_after_code(tokens: list[Token], i: int) -> bool:
    """A two-digit year right after a quarter's or a half's code: "Q3/24", "Q1 '25", "H2/2025" aside."""
    return 0 < i < len(tokens) and re.fullmatch(r"\d\d", tokens[i].text) is not None \
        and tokens[i - 1].fold in (*lx.QUARTER_CODES, *lx.HALF_CODES) and tokens[i - 1].after.strip() in ("/", "'", "’")


def _years_ago(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """ "two years ago", "vor drei Jahren", "три года назад", "год назад": years back, the index after."""
    german = fold_at(tokens, i) == "vor"
    found = amount(tokens, i + 1 if german else i)
    if found is not None:
        if found.unit != "year":
            return None
        count, j = found.count, found.next
    else:
        unit = None if german else unit_at(tokens, i)  # "год назад": one year, no number
        if unit is None or unit[0] != "year":
            return None
        count, j = 1, unit[1]
    if german:
        return count, j
    j += 1 if fold_at(tokens, j) == "тому" else 0
    return (count, j + 1) if fold_at(tokens, j) in lx.AGO_AFTER else None


def _latest(today: date, span: Callable[[int], tuple[date, date]]) -> int:
    """The year of the latest such period that has begun (a period named without its year; a winter
    that began in December is named by the next year)."""
    return next(y for y in (today.year + 1, today.year, today.year - 1) if span(y)[0] <= today)


def _in_year(tokens: list[Token], first: int, i: int, today: date, kind: str,
             span: Callable[[int], tuple[date, date]], **extra: object) -> Anchor:
    """An anchor inside a year: that year when one follows, else the latest that has begun."""
    spec = year_spec(tokens, i, today)

    def at(year: int, given: bool, end_index: int) -> Anchor:
        start, end = span(year)
        return Anchor(first, end_index, start, end, kind, year_given=given,
                      refit=lambda y: at(y, True, end_index), **extra)  # type: ignore[arg-type]

    if spec is not None:
        return at(spec[0], True, spec[1])
    return at(_latest(today, span), False, i)


def _iso(tokens: list[Token], i: int, today: date) -> Anchor | None:
    text = tokens[i].text
    if len(text) != 10 or text[4] != "-":
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    return Anchor(i, i + 1, day, day, "day")


def _dotted(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "15.03.2019", "1.4.2025": a day written the German and Russian way."""
    if i + 2 >= len(tokens) or tokens[i].after != "." or tokens[i + 1].after != ".":
        return None
    parts = [tokens[j].text for j in (i, i + 1, i + 2)]
    if not all(p.isdigit() for p in parts) or len(parts[2]) != 4 or len(parts[0]) > 2 or len(parts[1]) > 2:
        return None
    try:
        day = date(int(parts[2]), int(parts[1]), int(parts[0]))
    except ValueError:
        return None
    return Anchor(i, i + 3, day, day, "day")


def _day_number(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """A day of month: "3", "3rd", "3." (German), "3-го"; the index after it."""
    if i >= len(tokens):
        return None
    match = lx.DAY_SUFFIX.match(tokens[i].fold)
    if match:
        return int(match.group(1)), i + 1
    if tokens[i].text.isdigit() and len(tokens[i].text) <= 2 and 1 <= int(tokens[i].text) <= 31:
        if tokens[i].after == "-" and fold_at(tokens, i + 1) in ("го", "е", "м"):
            return int(tokens[i].text), i + 2
        if tokens[i].after.strip() in ("", ".", ","):
            return int(tokens[i].text), i + 1
    return None


def _month_at(tokens: list[Token], i: int) -> int | None:
    return lx.month(fold_at(tokens, i))


def _day(tokens: list[Token], i: int, today: date) -> Anchor | None:
    found = _day_number(tokens, i)
    if found is not None:  # "3 March 2025", "the 3rd of March", "3. März", "3 марта"
        day, j = found
        j = _skip(tokens, j, frozenset({"of"}))
        month = _month_at(tokens, j)
        if month is None:
            return None
        return _dated(tokens, i, j + 1, day, month, today)
    month = _month_at(tokens, i)
    found = _day_number(tokens, i + 1) if month is not None else None
    if month is None or found is None:  # "March 3, 2025", "March 3rd"
        return None
    return _dated(tokens, i, found[1], found[0], month, today)


def _dated(tokens: list[Token], first: int, i: int, day: int, month: int, today: date) -> Anchor | None:
    def span(year: int) -> tuple[date, date]:
        single = date(year, month, min(day, 28 if month == 2 and year % 4 else day))
        return single, single
    try:
        date(2000, month, day)
    except ValueError:
        return None
    return _in_year(tokens, first, i, today, "day", span)


def _month(tokens: list[Token], i: int, today: date) -> Anchor | None:
    month = _month_at(tokens, i)
    if month is None:
        return None
    anchor = _in_year(tokens, i, i + 1, today, "month", lambda y: months_span(y, month, 1))
    if not anchor.year_given and tokens[i].fold in lx.AMBIGUOUS_MONTHS:
        return replace(anchor, kind="bare-month")  # "may", "Jan": a month only after an operator
    return anchor


def _weekday(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "Monday", "пятницу", "Freitag": the latest such day up to today -- a day only after an operator
    ("since Monday", "с понедельника", "seit Montag") or a relative ("last Friday", `_relative`)."""
    weekday = lx.WEEKDAYS.get(fold_at(tokens, i))
    if weekday is None:
        return None
    day = today - timedelta(days=(today.weekday() - weekday) % 7)
    return Anchor(i, i + 1, day, day, "bare-weekday", year_given=False)


# A week by its ISO number, as German offices count them ("KW 12", "12. Kalenderwoche"), and the same
# in English ("week 12", "calendar week 12") and Russian ("12-я неделя", "неделя 12"); a year may follow.
_WEEK_CODES = frozenset({"kw", "cw", "wk"})
_WEEK_WORDS = frozenset({"kalenderwoche", "week", "неделя", "неделе", "неделю"})
_ORDINAL_ENDINGS = frozenset({"я", "й", "ю", "ой", "th", "st", "nd", "rd"})


def _week_number(tokens: list[Token], i: int, today: date) -> tuple[int, int] | None:
    """(the week's number, the index after the phrase) at ``i``, or None."""
    fold = fold_at(tokens, i)
    glued = re.fullmatch(r"(kw|cw|wk)(\d{1,2})", fold)  # "KW12"
    if glued:
        return int(glued.group(2)), i + 1
    if fold in _WEEK_CODES or fold in _WEEK_WORDS or (fold == "calendar" and fold_at(tokens, i + 1) == "week"):
        j = i + 2 if fold == "calendar" else i + 1
        number = tokens[j].number if j < len(tokens) and tokens[j].after.strip() in ("", "/", ",", ".") else None
        if number is None or (fold == "week" and year_spec(tokens, j + 1, today) is None):
            return None  # a bare "week 2" is as often a course's or a sprint's: only with its year
        return number, j + 1
    if not tokens[i].text.isdigit():
        return None
    number = tokens[i].number
    if number is not None and tokens[i].after.strip() == "." and fold_at(tokens, i + 1) in ("kw", "kalenderwoche"):
        return number, i + 2  # "12. KW"
    j = i + 1 + (fold_at(tokens, i + 1) in _ORDINAL_ENDINGS and tokens[i].after == "-")  # "12-я"
    if number is not None and fold_at(tokens, j) in ("неделя", "неделе", "неделю") and j > i + 1:
        return number, j + 1
    return None


def _calendar_week(tokens: list[Token], i: int, today: date) -> Anchor | None:
    found = _week_number(tokens, i, today)
    if found is None or not 1 <= found[0] <= 53:
        return None
    week, j = found

    def span(year: int) -> tuple[date, date]:
        try:
            monday = date.fromisocalendar(year, week, 1)
        except ValueError:  # week 53 of a year that has 52: its last week
            monday = date.fromisocalendar(year, 52, 1)
        return monday, monday + timedelta(days=6)

    if tokens[j - 1].after == "/" and j < len(tokens) and re.fullmatch(r"(?:19|20)\d\d", tokens[j].text):
        start, end = span(int(tokens[j].text))  # "KW 12/2026"
        return Anchor(i, j + 1, start, end, "week")
    return _in_year(tokens, i, j, today, "week", span)


def _season(tokens: list[Token], i: int, today: date) -> Anchor | None:
    first = lx.SEASONS.get(fold_at(tokens, i))
    if first is None:
        return None
    def span(year: int) -> tuple[date, date]:
        # Winter Y is named by the year of its January (as meteorologists name it): December Y-1 to
        # February Y; the winter that begins in December Y may be meant too.
        return months_span(year - 1, 12, 3) if first == 12 else months_span(year, first, 3)
    pair = _winter_years(tokens, i + 1) if first == 12 else None
    if pair is not None:  # "Winter 2013/14", "зима 2013–2014": December of the first year to February of the second
        start, end = span(pair[0])
        return Anchor(i, pair[1], start, end, "season")
    anchor = _in_year(tokens, i, i + 1, today, "season", span)
    if first == 12:
        anchor = replace(anchor, latest=months_span(anchor.end.year, 12, 3)[1])
    return anchor if anchor.year_given else replace(anchor, kind="bare-season")


def _winter_years(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """ "2013/14", "2013-2014", "of 2013–14" after a winter: (the second year, the index after it)."""
    j = _skip(tokens, i, _OF)
    if j + 1 >= len(tokens) or tokens[j].after.strip() not in ("/", "-", "–", "—"):
        return None
    first, second = tokens[j].text, tokens[j + 1].text
    if not (first.isdigit() and len(first) == 4 and second.isdigit() and 1900 <= int(first) <= 2099):
        return None
    following = str(int(first) + 1)
    return (int(following), j + 2) if second in (following, following[2:]) else None


def _ordinal_unit(tokens: list[Token], i: int, n: int | None = None) -> tuple[str, int, int] | None:
    """ "Q1", "H2", "first quarter", "1. Quartal", "второе полугодие", "the first half of", "the first
    third of 2026", "ersten Drittel", "вторая треть года" (``n``: the ordinal, when the caller read it)."""
    fold = fold_at(tokens, i)
    if fold in lx.QUARTER_CODES:
        return "quarter", lx.QUARTER_CODES[fold], i + 1
    if fold in lx.HALF_CODES:
        return "half", lx.HALF_CODES[fold], i + 1
    n = lx.ordinal(fold) if n is None else n
    if n is None:
        return None
    word = fold_at(tokens, i + 1)
    if word in lx.HALF_WORDS and n <= 2:
        j = i + 2
        if fold_at(tokens, j) in ("of", "des") and lx.UNITS.get(fold_at(tokens, j + 1)) == "year":
            j += 2  # "the first half of the year"
        return "half", n, j
    if word in lx.THIRD_WORDS and n <= 3:
        j = _skip(tokens, i + 2, _OF)
        return "third", n, j + 1 if lx.UNITS.get(fold_at(tokens, j)) == "year" else j  # "… of the year"
    unit = unit_at(tokens, i + 1)
    if unit is not None and unit[0] in ("quarter", "half") and (unit[0] == "quarter" or n <= 2):
        return unit[0], n, unit[1]
    return None


def _half_of_month(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "the second half of September 2025", "во второй половине сентября", "die erste Hälfte des
    März": days 1-15 or 16 to the month's end."""
    n = lx.ordinal(fold_at(tokens, i))
    if n is None or n > 2 or fold_at(tokens, i + 1) not in lx.HALF_WORDS:
        return None
    j = _skip(tokens, i + 2, _OF)
    month = _month_at(tokens, j)
    if month is None:
        return None

    def half(year: int) -> tuple[date, date]:
        start, end = months_span(year, month, 1)
        return (start, date(year, month, 15)) if n == 1 else (date(year, month, 16), end)
    return _in_year(tokens, i, j + 1, today, "month", half)


def _nth_part_of_year(tokens: list[Token], i: int, today: date) -> Anchor | None:
    found = _ordinal_unit(tokens, i)
    word_at = i + 1 if fold_at(tokens, i) == "the" else i
    word = fold_at(tokens, word_at)
    last = found is None and (lx.relative(word) == -1 or word.startswith("последн"))
    if last:  # "the last third of 2024", "das letzte Quartal von 2013": the year's final part
        found = _ordinal_unit(tokens, word_at, n=1)
    if found is None:
        return None
    unit, n, j = found
    size = {"quarter": 3, "half": 6, "third": 4}[unit]
    if last:
        if year_spec(tokens, j, today) is None:
            return None  # "the last quarter" without a year is the one before this one (`_relative`)
        n = 12 // size
    return _in_year(tokens, i, j, today, unit, lambda y: months_span(y, size * (n - 1) + 1, size))


# Units a period's first or last stretch is counted in ("the first two weeks of March").
_EDGE_UNITS = {"day": 1, "week": 7}


def _edge(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "the first two months of 2025", "the last week of 2024", "первые 10 дней марта", "die letzten
    drei Monate des Jahres 2024": N days, weeks or months at the start or the end of a year or a month
    (a rolling window when no year or month follows: "the last three months")."""
    j = i + 1 if fold_at(tokens, i) == "the" else i
    word = fold_at(tokens, j)
    nth = lx.ordinal(word)
    if nth == 1:
        from_end = False
    elif lx.relative(word) == -1 or word.startswith("последн"):
        from_end = True
    elif nth is not None:  # "the second week of March 2025", "die dritte Woche im Mai": the nth unit
        return _nth_unit(tokens, i, j, nth, today)
    else:
        return None
    found = amount(tokens, j + 1)
    if found is not None:
        count, unit, k = found.count, found.unit, found.next
    else:
        single = unit_at(tokens, j + 1)
        if single is None:
            return None
        (unit, k), count = single, 1
    if unit not in ("day", "week", "month"):
        return None
    container = _container(tokens, k, today)
    if container is None:
        return None
    start, end = container.start, container.end
    if unit == "month":
        if container.kind != "year" or count > 12:
            return None
        first_month = 13 - count if from_end else 1
        start, end = months_span(start.year, first_month, count)
    else:
        days = timedelta(days=count * _EDGE_UNITS[unit] - 1)
        if days >= end - start:
            return None
        start, end = (end - days, end) if from_end else (start, start + days)
    return Anchor(i, container.next, start, end, "edge")


def _nth_unit(tokens: list[Token], i: int, j: int, nth: int, today: date) -> Anchor | None:
    """The nth day, week or month counted from a year's or a month's start (weeks as days 1-7, 8-14 …,
    as the first week is read)."""
    single = unit_at(tokens, j + 1)
    if single is None or single[0] not in ("day", "week", "month"):
        return None
    unit, k = single
    container = _container(tokens, k, today)
    if container is None:
        return None
    if unit == "month":
        if container.kind != "year" or nth > 12:
            return None
        start, end = months_span(container.start.year, nth, 1)
    else:
        size = _EDGE_UNITS[unit]
        start = container.start + timedelta(days=(nth - 1) * size)
        end = start + timedelta(days=size - 1)
        if end > container.end:
            return None
    return Anchor(i, container.next, start, end, "edge")


def _container(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """The year or month a first or last stretch is counted in: "of 2025", "des Jahres 2024", "of last
    year", "марта 2025", "of March", "im März"."""
    j = _skip(tokens, i, _OF | {"in", "im", "в"})
    if fold_at(tokens, j) in lx.YEAR_WORDS and year_spec(tokens, j + 1, today) is not None:
        j += 1  # "des Jahres 2024"
    spec = year_spec(tokens, j, today)
    if spec is not None:
        year, end_index = spec
        return Anchor(i, end_index, date(year, 1, 1), date(year, 12, 31), "year")
    if lx.UNITS.get(fold_at(tokens, j)) == "year" and j > i:  # "of the year", "des Jahres": this year
        return Anchor(i, j + 1, date(today.year, 1, 1), date(today.year, 12, 31), "year")
    return _month(tokens, j, today)


def _part(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "early 2025", "mid-2025", "the end of 2024", "в начале 2025 года", "Ende 2024", "начала года"."""
    part = lx.PARTS.get(fold_at(tokens, i))
    if part is None:
        return None
    j = _skip(tokens, i + 1, _OF)
    spec = year_spec(tokens, j, today)
    if spec is None and lx.UNITS.get(fold_at(tokens, j)) == "year":
        spec = (today.year, j + 1)  # "с начала года", "since the beginning of the year"
    if spec is None:
        return None
    year, end_index = spec
    canonical, earliest, latest = {
        "early": ((1, 3), date(year, 1, 1), date(year, 6, 30)),
        "mid": ((5, 4), date(year, 4, 1), date(year, 9, 30)),
        "late": ((10, 3), date(year, 7, 1), date(year, 12, 31)),
    }[part]
    start, end = months_span(year, canonical[0], canonical[1])
    return Anchor(i, end_index, start, end, "part", earliest=earliest, latest=latest)


def _decade(tokens: list[Token], i: int, today: date) -> Anchor | None:
    first = lx.decade(fold_at(tokens, i))
    j = i + 1
    if first is None and tokens[i].text.isdigit() and tokens[i].after in ("-", "") \
            and fold_at(tokens, i + 1) in lx.DECADE_SUFFIXES:
        first, j = lx.decade_number(tokens[i].text), i + 2  # "2000-х", "90-е"
    if first is None:
        return None
    if fold_at(tokens, j) in ("годы", "годах", "годов", "годам", "jahre", "jahren", "years"):
        j += 1
    return Anchor(i, j, date(first, 1, 1), date(first + 9, 12, 31), "decade")


def _year(tokens: list[Token], i: int, today: date) -> Anchor | None:
    j = i + 1 if fold_at(tokens, i) in ("year", "jahr", "jahre", "jahres") else i
    year = _year_number(tokens, j)
    if year is None:
        return None
    k = j + 1
    if fold_at(tokens, k) in lx.YEAR_WORDS and tokens[j].after.strip() in ("", "-", "."):
        k += 1
    return Anchor(i, k, date(year, 1, 1), date(year, 12, 31), "year")


def _ago(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "three months ago", "три месяца назад", "год назад", "vor drei Wochen", "vor einem Jahr"."""
    german = fold_at(tokens, i) == "vor"
    found = amount(tokens, i + 1 if german else i) or (None if german else inverted_amount(tokens, i))
    if found is None and not german:  # "год назад", "неделю назад": one unit
        unit = unit_at(tokens, i)
        j = unit[1] if unit else i
        if unit is None or fold_at(tokens, j) not in lx.AGO_AFTER:
            return None
        start, end = unit_span(unit[0], shift(today, unit[0], -1))
        return Anchor(i, j + 1, start, end, "ago")
    if found is None:
        return None
    j = found.next
    if not german:
        if fold_at(tokens, j) == "тому":
            j += 1
        if fold_at(tokens, j) not in lx.AGO_AFTER:
            return None
        j += 1
    start, end = unit_span(found.unit, shift(today, found.unit, -found.count))
    return Anchor(i, j, start, end, "ago")


def _rolling(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "the past 10 weeks", "last 3 months", "за последние полгода", "in den letzten drei Monaten",
    "the past year", "за последний месяц": a window that ends today."""
    j = i + 1 if fold_at(tokens, i) == "the" else i
    word = fold_at(tokens, j)
    if not lx.ROLLING.match(word):
        return _rolling_counted_first(tokens, i, today) or _previous_n(tokens, i, today)
    found = amount(tokens, j + 1)
    if found is not None:
        if found.unit in ("quarter", "half"):
            count, unit = found.count * (3 if found.unit == "quarter" else 6), "month"
        else:
            count, unit = found.count, found.unit
        return _window(i, found.next, shift(today, unit, -count), today)
    single = unit_at(tokens, j + 1)
    # "the past year", "past month", "за последний год" (not "last year": the calendar one); "im letzten
    # Halbjahr" is "the last half-year", rolling as in English and Russian (the German article is "im", "dem")
    german_half = single is not None and single[0] == "half" and word.startswith(("letzt", "vergangen"))
    if single is None or fold_at(tokens, j + 1) in lx.PLURAL_UNITS \
            or not (j > i or word == "past" or word.startswith("последн") or german_half):
        return None
    unit, k = single
    if unit == "week" and not word.startswith("последн"):
        return None  # "the past week" is read as "last week"
    months = {"quarter": 3, "half": 6}.get(unit)
    if months and year_spec(tokens, k, today) is not None:
        return None  # "the last quarter of 2025", "в последнем квартале 2024 года": that year's final part
    if unit == "quarter" and word != "past":
        # "the last quarter", "последний квартал": the calendar quarter before this one (the convention)
        return _unit_offset(i, k, "quarter", -1, today)
    return _window(i, k, shift(today, "month", -months) if months else shift(today, unit, -1), today)


def _rolling_counted_first(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "за три последних месяца", "the two last weeks": the count before "last"."""
    j = i + 1 if fold_at(tokens, i) == "the" else i
    counted = count_at(tokens, j) if j < len(tokens) else None
    if counted is None or counted[0] < 2 or not lx.ROLLING.match(fold_at(tokens, counted[1])):
        return None
    unit = unit_at(tokens, counted[1] + 1)
    if unit is None or unit[0] in ("quarter", "half"):
        return None
    return _window(i, unit[1], shift(today, unit[0], -counted[0]), today)


# "the previous two years", "за предыдущие три месяца", "in den vorigen zwei Wochen": with a count,
# "previous" is the past N units (without one, "the previous year" is the calendar year before).
_PREVIOUS = re.compile(r"^(?:previous|preceding|предыдущ\w*|прошедш\w*|vorig\w*|vorherig\w*)$")


def _previous_n(tokens: list[Token], i: int, today: date) -> Anchor | None:
    j = i + 1 if fold_at(tokens, i) == "the" else i
    if not _PREVIOUS.match(fold_at(tokens, j)):
        return None
    counted = count_at(tokens, j + 1) if j + 1 < len(tokens) else None
    found = amount(tokens, j + 1) if counted is not None and counted[0] >= 2 else None  # not "a half-year"
    if found is None or found.unit in ("quarter", "half"):
        return None
    return _window(i, found.next, shift(today, found.unit, -found.count), today)


def duration_window(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """ "drei Wochen", "einem halben Jahr" after "seit": the window of that length up to today."""
    found = amount(tokens, i)
    if found is None or found.unit in ("quarter", "half"):
        return None
    if fold_at(tokens, found.next) in lx.AGO_AFTER:
        return None
    return _window(i, found.next, shift(today, found.unit, -found.count), today)


def _window(first: int, next_index: int, start: date, today: date) -> Anchor:
    return Anchor(first, next_index, start, today, "rolling", rolling=True, to_options=(today, None), tolerance=1)


def _relative(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """this/last/previous/next/the one before last + a unit; a season or month of such a year."""
    j = i + 1 if fold_at(tokens, i) == "the" else i
    fold = fold_at(tokens, j)
    days_back = lx.days_back(tokens, j)
    if days_back is not None:
        day = today - timedelta(days=days_back[0])
        return Anchor(i, days_back[1], day, day, "relative", to_options=(day, today) if days_back[0] == 1 else None)
    if fold in lx.COMPOUND_RELATIVE:
        compound_unit, compound_offset = lx.COMPOUND_RELATIVE[fold]
        return _unit_offset(i, j + 1, compound_unit, compound_offset, today)
    offset = lx.relative(fold)
    unit = unit_at(tokens, j + 1) if offset is not None else unit_at(tokens, j)
    if unit is not None and fold_at(tokens, unit[1] - 1) in lx.PLURAL_UNITS:
        return None  # "in den letzten Jahren": recent years, not last year
    if offset is None and unit is not None and (fold_at(tokens, unit[1]), fold_at(tokens, unit[1] + 1)) == lx.BEFORE_LAST:
        return _unit_offset(i, unit[1] + 2, unit[0], -2, today)  # "the year before last"
    if offset is None:
        return None
    if unit is not None and unit[0] == "year" and fold_at(tokens, unit[1]) == "s" \
            and tokens[unit[1]].before in ("'", "’"):
        of_year = _season(tokens, unit[1] + 1, today) or _month(tokens, unit[1] + 1, today)
        if of_year is not None and of_year.refit is not None:  # "last year's November"
            return replace(of_year.refit(today.year + offset), first=i, kind="relative")
    if unit is not None and unit[0] in ("quarter", "half") and offset < 0 and year_spec(tokens, unit[1], today):
        return None  # "the last quarter of 2025": that year's final part (`_nth_part_of_year`)
    if unit is not None:
        return _unit_offset(i, unit[1], unit[0], offset, today)
    weekday = lx.WEEKDAYS.get(fold_at(tokens, j + 1))
    if weekday is not None:
        if offset == 0:  # "this Friday": this week's
            day = today + timedelta(days=weekday - today.weekday())
        else:  # "last Friday": the latest before today; "next Friday": the first after it
            back = (today.weekday() - weekday) % 7 or 7
            day = today - timedelta(days=back) if offset < 0 else today + timedelta(days=7 - back or 7)
        return Anchor(i, j + 2, day, day, "relative")
    named = _season(tokens, j + 1, today) or _month(tokens, j + 1, today)
    if named is None or named.year_given or named.refit is None:
        return None
    # "last summer", "прошлым летом", "letzten März": the latest one that has ended (this: this year's);
    # a period is refitted by the year it ends in (a winter's January)
    latest_started = named.end.year
    if offset < 0:
        latest_ended = latest_started if named.end < today else latest_started - 1
        year = latest_ended + offset + 1
    else:
        year = latest_started + offset
    found = named.refit(year)
    return replace(found, first=i, next=named.next, kind="relative")


def _unit_offset(first: int, next_index: int, unit: str, offset: int, today: date) -> Anchor:
    start, end = unit_span(unit, shift(today, unit, offset))
    if unit == "week" and offset == 0:
        return Anchor(first, next_index, start, end, "relative", to_options=(today, None))
    if unit == "week" and offset == -1:  # the previous calendar week, or the seven days up to today
        return Anchor(first, next_index, start, end, "relative", to_options=(end, today, None), latest=today)
    return Anchor(first, next_index, start, end, "relative")


_PARSERS = (_iso, _dotted, _calendar_week, _ago, _edge, _rolling, _relative, _half_of_month, _nth_part_of_year, _part, _day, _month,
            _weekday, _season, _decade, _year)


def anchor_at(tokens: list[Token], i: int, today: date) -> Anchor | None:
    for parse in _PARSERS:
        found = parse(tokens, i, today)
        if found is not None:
            return found
    return None


def bare_day(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """A day number alone, the start of "from 3 to 17 March", "с 1 по 14 февраля"."""
    return _day_number(tokens, i)
