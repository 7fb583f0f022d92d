"""The request gate by its rules alone, for the tests of those rules."""

from __future__ import annotations

from datetime import date

from router.gate import GateVerdict, check_request

TODAY = date(2026, 6, 17)


async def rules_verdict(question: str, *, today: date = TODAY) -> GateVerdict:
    """The gate's verdict by its rules alone (no relevance measured, no tools)."""
    return await check_request(question, language="en", tools=frozenset(), relevance=None, today=today)
