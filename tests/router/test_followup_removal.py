"""Filters removed (`router.followup_removal`): a remover and the filter's noun ("drop the date
range", "убери фильтр по периоду", "ohne Zeitbeschränkung") or the noun and indifference
("language is irrelevant", "Sprache ist uns egal"). Phrasings outside the follow-up eval set."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from router.followup_reader import read_filter_change
from router.followup_removal import cut_removals

TODAY = date(2026, 6, 30)
ARGS: dict[str, Any] = {"text": "Ruby", "language": "de", "dateFrom": "2025-01-01", "dateTo": "2025-12-31",
                        "sort": "newest", "page": 2, "pageSize": 20}
NO_PERIOD = {"dateFrom": None, "dateTo": None, "page": 1}


def _change(text: str) -> dict[str, Any] | None:
    change = read_filter_change("SearchArticles", ARGS, text, TODAY)
    return None if change is None else {k: v for k, v in change.arguments.items() if ARGS[k] != v}


@pytest.mark.parametrize("text", [
    "drop the date range", "ok, no time restriction", "from any year please", "of all time",
    "regardless of the date", "сними фильтр по периоду", "а за все годы?", "неважно когда",
    "ohne Zeitbeschränkung bitte", "kein Datumsfilter", "aus allen Jahren", "jederzeit",
])
def test_the_period_removed(text: str) -> None:
    assert _change(text) == NO_PERIOD


@pytest.mark.parametrize("text", [
    "the language is irrelevant", "I don't care about the language", "язык мне всё равно какой",
    "мне без разницы, на каком языке", "Sprache ist uns egal", "egal in welcher Sprache", "jede Sprache",
])
def test_the_language_removed(text: str) -> None:
    assert _change(text) == {"language": None, "page": 1}


def test_both_removed_and_a_removal_beside_a_change() -> None:
    assert _change("no date limit and the language doesn't matter") == {**NO_PERIOD, "language": None}
    assert _change("kein Datum, nur Englisch") == {**NO_PERIOD, "language": "en"}


@pytest.mark.parametrize("text", [
    "without the dates, only 2023",  # a removal and a period: the model's
    "no time to read all of them",  # no period noun after the remover: a sentence
    "без дат, но про Rails",  # a topic is left
    "ohne Datum, was steht drin?",
])
def test_what_is_not_a_removal_alone(text: str) -> None:
    assert _change(text) is None


def test_cut_removals_names_what_it_removed() -> None:
    assert cut_removals("drop the language filter, any date")[1] == frozenset({"language", "period"})
    assert cut_removals("only 2024")[1] == frozenset()
