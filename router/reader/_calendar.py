"""Calendar arithmetic for the period grammar: units that hold a day, and shifts by units."""

from __future__ import annotations

import calendar
from datetime import date, timedelta

from router.reader._lexicon import Unit

_MONTHS_PER = {"month": 1, "quarter": 3, "half": 6, "year": 12, "decade": 120}


def month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def add_months(day: date, months: int) -> date:
    """``day`` moved by whole months, the day of month kept where the target month has it."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def shift(day: date, unit: Unit, count: int) -> date:
    """``day`` moved back (count < 0) or forward by ``count`` units."""
    if unit == "day":
        return day + timedelta(days=count)
    if unit == "week":
        return day + timedelta(weeks=count)
    return add_months(day, _MONTHS_PER[unit] * count)


def unit_span(unit: Unit, day: date) -> tuple[date, date]:
    """The calendar day, week (Monday..Sunday), month, quarter, half or year that holds ``day``."""
    if unit == "day":
        return day, day
    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=6)
    if unit == "decade":
        first_year = day.year // 10 * 10
        return date(first_year, 1, 1), date(first_year + 9, 12, 31)
    size = _MONTHS_PER[unit]
    first = (day.month - 1) // size * size + 1
    return date(day.year, first, 1), month_end(day.year, first + size - 1)


def months_span(year: int, first: int, count: int) -> tuple[date, date]:
    """``count`` months from month ``first`` of ``year`` (may run into the next year)."""
    start = date(year, first, 1)
    last = add_months(start, count - 1)
    return start, month_end(last.year, last.month)
