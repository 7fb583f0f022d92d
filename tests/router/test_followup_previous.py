"""Changes read against the previous filters (`router.followup_previous`): a period moved by a
count of calendar units ("the year before", "ein Jahr früher", "годом раньше") and the previous
filter restated as what is no longer wanted ("nicht nur 2025"). Phrasings outside the eval set."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from router.followup_reader import read_filter_change

TODAY = date(2026, 6, 30)
YEAR: dict[str, Any] = {"text": "Ruby", "language": "en", "dateFrom": "2024-01-01", "dateTo": "2024-12-31",
                        "sort": "newest", "page": 1, "pageSize": 20}
MONTH = {**YEAR, "dateFrom": "2026-02-01", "dateTo": "2026-02-28"}
RANGE = {**YEAR, "dateFrom": "2025-03-10", "dateTo": "2025-04-20"}
NONE = {**YEAR, "dateFrom": None, "dateTo": None}


def _change(text: str, args: dict[str, Any] = YEAR) -> dict[str, Any] | None:
    change = read_filter_change("SearchArticles", args, text, TODAY)
    return None if change is None else {k: v for k, v in change.arguments.items() if args[k] != v}


@pytest.mark.parametrize(("text", "args", "expected"), [
    ("and a year earlier?", YEAR, ("2023-01-01", "2023-12-31")),
    ("ok, two years before", YEAR, ("2022-01-01", "2022-12-31")),
    ("the year after, please", YEAR, ("2025-01-01", "2025-12-31")),
    ("на год позже", YEAR, ("2025-01-01", "2025-12-31")),
    ("а годом ранее?", YEAR, ("2023-01-01", "2023-12-31")),
    ("das Jahr danach", YEAR, ("2025-01-01", "2025-12-31")),
    ("und zwei Jahre früher?", YEAR, ("2022-01-01", "2022-12-31")),
    ("the month before", MONTH, ("2026-01-01", "2026-01-31")),  # a whole month stays one
    ("и месяц спустя после этого", MONTH, None),  # "спустя" is not read: the model's
    ("einen Monat später", MONTH, ("2026-03-01", "2026-03-31")),
    ("a week later", RANGE, ("2025-03-17", "2025-04-27")),  # any range: both bounds move
    ("the year after", {**YEAR, "dateFrom": "2025-01-01", "dateTo": "2025-12-31"}, ("2026-01-01", "2026-06-30")),
])
def test_a_period_moved_against_the_previous_one(text: str, args: dict[str, Any],
                                                  expected: tuple[str, str] | None) -> None:
    change = _change(text, args)
    if expected is None:
        assert change is None
    else:
        assert change == {"dateFrom": expected[0], "dateTo": expected[1]}


@pytest.mark.parametrize(("text", "args"), [
    ("the year before", NONE),  # before what: no previous period
    ("two years later", {**YEAR, "dateFrom": "2026-01-01", "dateTo": "2026-06-30"}),  # after today
    ("a year before the outage", YEAR),  # a topic is left
    ("what changed the year before?", YEAR),
    ("a year earlier, since 2020", YEAR),  # two periods
])
def test_what_is_not_a_period_move(text: str, args: dict[str, Any]) -> None:
    assert _change(text, args) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("since 2021, not only 2024", {"dateFrom": "2021-01-01", "dateTo": "2026-06-30"}),
    ("не только 2024, а с 2022 года", {"dateFrom": "2022-01-01", "dateTo": "2026-06-30"}),
    ("nicht nur Englisch, alle Sprachen", {"language": None}),
])
def test_the_previous_filter_restated_is_dropped(text: str, expected: dict[str, Any]) -> None:
    assert _change(text) == expected


@pytest.mark.parametrize("text", [
    "since 2021, not only 2023",  # not the previous period: two periods
    "nicht nur Deutsch, alle Sprachen",  # not the previous language
    "not just Ruby",  # a topic
])
def test_a_restatement_that_is_not_the_previous_filter_stays(text: str) -> None:
    assert _change(text) is None
