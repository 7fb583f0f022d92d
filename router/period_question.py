"""The small model asked for just a period the reader could not read (issue 22, item 4a).

Code-filled filters: when the question carries a period cue (a month, "ago", a quarter word …)
that the grammar cannot read, one short json_schema round asks the model for only that value,
in a closed schema: a relative period `{unit, offset, count}` (count units, the first `offset`
units from the current one, offset <= 0) or explicit `{dateFrom, dateTo}`, or `{none: true}`.
Code validates the answer and computes the dates; anything else is treated as unread, and the
result's adjustments say so. The model never does date arithmetic.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from typing import Any

from router.reader import DateExpectation, shift, unit_span

UNITS = ("day", "week", "month", "quarter", "year")
MAX_BACK = 50  # units back a relative period may start
MAX_COUNT = 24

PERIOD_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "object", "additionalProperties": False, "required": ["unit", "offset", "count"], "properties": {
            "unit": {"enum": list(UNITS)},
            "offset": {"type": "integer", "minimum": -MAX_BACK, "maximum": 0},
            "count": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT},
        }},
        {"type": "object", "additionalProperties": False, "required": ["dateFrom", "dateTo"], "properties": {
            "dateFrom": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
            "dateTo": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        }},
        {"type": "object", "additionalProperties": False, "required": ["none"], "properties": {"none": {"const": True}}},
    ]
}
RESPONSE_FORMAT: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "period", "schema": PERIOD_SCHEMA,
                                                                          "strict": False}}
SYSTEM = (
    "You read one period from a message. Answer with JSON only. A relative period: "
    '{"unit": "day|week|month|quarter|year", "offset": N, "count": C} = C units, the first one N units '
    'before the current unit (N = 0: the current one, -1: the previous one). Exact dates: '
    '{"dateFrom": "YYYY-MM-DD", "dateTo": "YYYY-MM-DD"}. No period: {"none": true}.'
)


def period_question(question: str, unread: tuple[str, ...], today: date) -> str:
    words = "', '".join(unread)
    return f"Today is {today.isoformat()}. Message: {question}\nThe period: '{words}'"


def read_answer(text: str | None, unread: tuple[str, ...], today: date) -> DateExpectation | None:
    """The model's answer as a period, validated in code (None: no usable period)."""
    try:
        value = json.loads(text or "")
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    phrase = " ".join(unread)
    if set(value) == {"unit", "offset", "count"}:
        return _relative(value, phrase, today)
    if set(value) == {"dateFrom", "dateTo"}:
        return _explicit(value, phrase, today)
    return None


def _relative(value: dict[str, Any], phrase: str, today: date) -> DateExpectation | None:
    unit, offset, count = value["unit"], value["offset"], value["count"]
    if unit not in UNITS or not all(isinstance(v, int) and not isinstance(v, bool) for v in (offset, count)):
        return None
    if not (-MAX_BACK <= offset <= 0 and 1 <= count <= MAX_COUNT):
        return None
    start = unit_span(unit, shift(today, unit, offset))[0]
    end = unit_span(unit, shift(start, unit, count - 1))[1]
    return _period(phrase, start, end, today)


def _explicit(value: dict[str, Any], phrase: str, today: date) -> DateExpectation | None:
    try:
        start, end = date.fromisoformat(str(value["dateFrom"])), date.fromisoformat(str(value["dateTo"]))
    except ValueError:
        return None
    if start > end or start > today:
        return None
    return _period(phrase, start, end, today)


def _period(phrase: str, start: date, end: date, today: date) -> DateExpectation:
    options: tuple[date | None, ...] = (end,) if end < today else (end, today, None)
    return replace(DateExpectation(phrase, start, options), future=start > today)
