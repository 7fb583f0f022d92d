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
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import date
from typing import Any

from router.audit import AuditTrail
from router.engine import Engine, EngineRequest, Turn
from router.limits import JobBudget
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


MAX_TOKENS = 40  # the longest answer, explicit dates, is ~30 tokens


async def ask_model(
    engine: Engine, budget: JobBudget, audit: AuditTrail, question: str, unread: tuple[str, ...], today: date, *,
    before_attempt: Callable[[int], Awaitable[None]] | None = None,
) -> DateExpectation | None:
    """One closed-schema round for the unread period; the validated period, or None. Audited as an
    `llm_round` of loop mode `period`; its tokens count against the job's budget."""
    turns = [Turn("system", SYSTEM), Turn("user", period_question(question, unread, today))]
    round_no = budget.start_round()
    estimate = engine.estimate_input_tokens(turns)
    budget.check_room_for(estimate)
    response = await engine.complete(EngineRequest(
        turns=turns, max_output_tokens=min(MAX_TOKENS, budget.output_room(estimate)), deadline=budget.llm_deadline,
        before_attempt=before_attempt, response_format=RESPONSE_FORMAT,
    ))
    budget.add_llm_call(response.input_tokens, response.output_tokens)
    budget.check_tokens()
    period = read_answer(response.text, unread, today)
    await audit.record(
        "llm_round", round=round_no, loop_mode="period", model=response.model, finish_reason=response.finish_reason,
        input_tokens=response.input_tokens, output_tokens=response.output_tokens, latency_ms=response.latency_ms,
        cost_usd=budget.call_cost(response.input_tokens, response.output_tokens), outcome="period" if period is not None else "text",
        error=None if period is not None else f"no usable period for {unread!r}",
    )
    return period


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
