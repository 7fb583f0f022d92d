"""The gateway's date check (SPEC §3, §5): a model's dateFrom/dateTo against the period the
question names, as the question reader reads it (`router.reader`: the one period grammar; the
fallback router and the code-filled filters use the same reading).

The model resolves "this year", "за последние 12 месяцев", "seit letztem Jahr" itself (the
system prompt gives it today's date); code reads the same period independently so the gateway
can reject a wrong range with a reason. (Swapped bounds and a future dateFrom are rejected by
the search service's normalization.)
"""

from __future__ import annotations

from datetime import date

from router.reader import DateExpectation, find_period

__all__ = ["DateExpectation", "check_against_question", "find_date_expectation"]


def find_date_expectation(question: str, today: date) -> DateExpectation | None:
    """The period ``question`` names (the first, or the span of several), resolved against ``today``."""
    return find_period(question, today)


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
    expected = find_date_expectation(question, today)
    if expected is not None and expected.future:  # a period after today is answered empty, not argued over
        return None
    if date_from is not None and date_from > today:
        return f"dateFrom {date_from.isoformat()} is in the future (today is {today.isoformat()}); change dateFrom"
    if expected is None:
        return None
    start, end = expected.period
    # The search service clamps a dateTo after today to today: a period still running ends today.
    effective_to = min(date_to, today) if date_to is not None else None
    open_ok = None in expected.date_to_options
    problems: list[str] = []
    pinned_off = (
        expected.pinned_from and date_from is not None and expected.date_from is not None
        and abs((date_from - expected.date_from).days) > expected.tolerance_days
    )
    open_start = expected.date_from is None
    if (date_from is None and not open_start) or pinned_off or (date_from is not None and (
            date_from < start or (end is not None and date_from > end))):
        problems.append(f"dateFrom={date_from.isoformat() if date_from else 'omitted'}")
    if effective_to is None:
        if not open_ok:
            problems.append("dateTo=omitted")
    elif effective_to < start or (end is not None and effective_to > end):
        problems.append(f"dateTo={date_to.isoformat() if date_to else 'omitted'}")
    if not problems:
        return None
    period_end = end.isoformat() if end is not None else today.isoformat()
    canonical_from = expected.date_from.isoformat() if expected.date_from is not None else "omitted"
    return (
        f"the question says {expected.phrase!r} and today is {today.isoformat()} ({today:%A}): the range must lie "
        f"within {start.isoformat() if expected.date_from or expected.earliest_from else '…'}..{period_end} (e.g. dateFrom {canonical_from}, dateTo "
        f"{expected.describe_to()}); change {' and '.join(problems)}"
    )
