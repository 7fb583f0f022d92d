"""Pages named relative to the current one (`router.followup_paging.read_page_move`): a count of
pages and a direction either side, read before the period reader takes "назад"/"back" for a
period's; ordinals up to the tenth; "one more page". Phrasings outside the follow-up eval set."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from router.followup_paging import read_page_move
from router.followup_reader import read_filter_change

TODAY = date(2026, 6, 30)
ARGS: dict[str, Any] = {"text": "Ruby", "language": "en", "dateFrom": None, "dateTo": None, "sort": "newest",
                        "page": 3, "pageSize": 20}


def _change(text: str) -> dict[str, Any] | None:
    change = read_filter_change("SearchArticles", ARGS, text, TODAY)
    return None if change is None else {k: v for k, v in change.arguments.items() if ARGS[k] != v}


@pytest.mark.parametrize(("text", "page"), [
    ("skip ahead three pages", 6),
    ("move forward 2 pages please", 5),
    ("one page back", 2),
    ("back a page", 2),
    ("go back two pages", 1),
    ("five pages back", 1),  # never before the first page
    ("на три страницы вперёд", 6),
    ("пролистай на одну страницу назад", 2),
    ("две страницы назад", 1),  # "назад" is the page move's, not a period's ("две недели назад")
    ("drei Seiten vor", 6),
    ("eine Seite zurück", 2),
    ("blätter zwei Seiten weiter", 5),
    ("one more page", 4),
    ("ещё одну страницу", 4),
    ("noch eine Seite bitte", 4),
    ("the eighth page", 8),
    ("девятую страницу", 9),
    ("die zehnte Seite", 10),
])
def test_a_page_moved_or_counted(text: str, page: int) -> None:
    assert _change(text) == {"page": page}


@pytest.mark.parametrize("text", [
    "page 4, then two pages further",  # two pages named: the model's
    "which one was two pages back?",  # a question about a page
    "a few pages back",  # a count the grammar does not read
    "две недели назад и три страницы вперёд про Rails",  # a topic is left
])
def test_what_is_not_a_page_move_alone(text: str) -> None:
    assert _change(text) is None


def test_a_move_is_a_period_move_only_without_a_page_word() -> None:
    assert _change("две недели назад") == {"dateFrom": "2026-06-15", "dateTo": "2026-06-21", "page": 1}
    assert read_page_move("две недели назад", ARGS) == ("две недели назад", {})


def test_no_page_to_move_after_an_answer() -> None:
    ask = {"question": "why?", "language": "en", "answerLanguage": "en"}
    assert read_page_move("two pages further", ask)[1] == {}
