"""The follow-up grammar's words (`router.followup_reader`): verbs of widening and paging,
hedges, a collection noun inside an order ("older ones first"), "swap the order", and a second
language the reader takes for an answer's. Phrasings outside the follow-up eval set."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from router.followup_reader import read_filter_change

TODAY = date(2026, 6, 30)
ARGS: dict[str, Any] = {"text": "Ruby", "language": "en", "dateFrom": "2025-01-01", "dateTo": "2025-12-31",
                        "sort": "newest", "page": 2, "pageSize": 20}


def _change(text: str) -> dict[str, Any] | None:
    change = read_filter_change("SearchArticles", ARGS, text, TODAY)
    return None if change is None else {k: v for k, v in change.arguments.items() if ARGS[k] != v}


@pytest.mark.parametrize(("text", "expected"), [
    ("broaden it to since 2022", {"dateFrom": "2022-01-01", "dateTo": "2026-06-30", "page": 1}),
    ("расширьте до периода с 2022 года", None),  # "периода" is no filler: the model's
    ("erweitere bitte ab 2022", {"dateFrom": "2022-01-01", "dateTo": "2026-06-30", "page": 1}),
    ("uh, next page maybe", {"page": 3}),
    ("ähm, vielleicht die nächste Seite", {"page": 3}),
    ("эм, наверное следующую страницу", {"page": 3}),
    ("könntest du die nächste Seite zeigen", {"page": 3}),
    ("newer ones first", {"page": 1}),  # already newest: only a new first page
    ("the older posts first", {"sort": "oldest", "page": 1}),
    ("die älteren Beiträge zuerst", {"sort": "oldest", "page": 1}),
    ("swap the order please", {"sort": "oldest", "page": 1}),
    ("andersrum sortieren", {"sort": "oldest", "page": 1}),
])
def test_fillers_and_order_words(text: str, expected: dict[str, Any] | None) -> None:
    assert _change(text) == expected


@pytest.mark.parametrize("text", [
    "на английском и на русском",  # the second language was read as the answer's: the model's
    "widen it to Rails too",
    "swap Ruby for Crystal",
    "maybe something on Crystal",
])
def test_what_stays_for_the_model(text: str) -> None:
    assert _change(text) is None
