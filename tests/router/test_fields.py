"""Filters typed as fields by apps, agents and chat-ops (docs/router.md, round 23): "topic: X; lang: de;
since: 2023-01", "lang=any | range=2023-Q1..2024-Q2", a JSON object's keys, "Thema: X; Antwort: ru",
"задача: объяснить", ISO months, quarters, weeks and "a..b" ranges: read as the words they stand for,
by the fallback, the gate and the gateway's period check alike; the question routed on stays the user's.
Phrasings written for these tests, in no eval case."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.gate import check_request
from router.language import written_language
from router.reader import as_words, find_period
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize(("question", "expected"), [
    ("subject: Bundler 2; language: ru; from: 2024-02", {"text": "Bundler 2", "language": "ru", "dateFrom": "2024-02-01"}),
    ("q=YJIT | langs=en,de | range=2024-Q3..2025-Q1",
     {"text": "YJIT", "language": ["de", "en"], "dateFrom": "2024-07-01", "dateTo": "2025-03-31"}),
    ('{"query": "RubyGems", "language": "de", "limit": 3, "sort": "oldest"}',
     {"text": "RubyGems", "language": "de", "pageSize": 3, "sort": "oldest"}),
    ("Suchbegriff: Certbot; Sprache: alle; bis: 2019", {"text": "Certbot", "dateTo": "2019-12-31"}),
    ("тема: OCSP; язык статей: de; неделя 2025-W10", {"text": "OCSP", "language": "de", "dateFrom": "2025-03-03",
                                                      "dateTo": "2025-03-09"}),
    ("keywords: CAA / exclude_lang: ru", {"text": "CAA", "language": ["de", "en"]}),
])
def test_fields_are_read_as_the_filters_they_name(question: str, expected: dict[str, object]) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (decision.reason, decision.arguments)
    assert {k: decision.arguments.get(k) for k in expected} == expected, decision.arguments
    if "language" not in expected:
        assert decision.arguments.get("language") is None  # "Sprache: alle": every language


@pytest.mark.parametrize(("question", "tool", "answer"), [
    ("task: explain\nsubject: ACME Renewal Information\nanswer_lang: ru", ASK, "ru"),
    ("Aufgabe: zusammenfassen; Thema: OCSP; Zeitraum: 2025-Q2; Antwortsprache: en", SEARCH_AND_ASK, "en"),
    ("вопрос: зачем нужен CAA?\nответ: de", ASK, "de"),
])
def test_a_task_field_is_the_request_and_an_answer_field_its_language(question: str, tool: str, answer: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool and decision.arguments["answerLanguage"] == answer, (decision.reason,
                                                                                     decision.arguments)


def test_the_question_keeps_the_users_words_and_language() -> None:
    question = "тема: Certbot; задача: объяснить; язык ответа: de"
    assert written_language(question) == "ru"  # the keys are Russian, whatever words the fields are read as
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("language") == "ru" and decision.arguments.get("question") == question


async def test_the_gate_judges_the_fields_and_routes_the_users_text() -> None:
    question = "Aufgabe: zusammenfassen; Thema: REXML; Zeitraum: 2024-07-01..2024-12-31"
    verdict = await check_request(question, language="de", tools=frozenset(), relevance=None, today=TODAY)
    assert verdict.passed and verdict.question == question  # no German infinitive of a change here
    deleting = await check_request("action=delete; target=the article about Ruby 3.3.11", language="en",
                                   tools=frozenset(), relevance=None, today=TODAY)
    assert deleting.refused == "write"


@pytest.mark.parametrize(("text", "bounds"), [
    ("since: 2023-01", (date(2023, 1, 1), TODAY)),
    ("2025-Q3", (date(2025, 7, 1), date(2025, 9, 30))),
    ("ISO week 2025-W38", (date(2025, 9, 15), date(2025, 9, 21))),
    ("с: 2025-01-01; по: 2025-06-30", (date(2025, 1, 1), date(2025, 6, 30))),
])
def test_iso_periods_and_period_fields_are_read(text: str, bounds: tuple[date, date]) -> None:
    period = find_period(text, TODAY)
    assert period is not None and (period.date_from, period.date_to_options[0]) == bounds


def test_plain_prose_is_left_as_typed() -> None:
    for text in ("What is YJIT? Answer: the short version please", "Ruby 3.4: what changed?", "Note: posts from 2024"):
        assert as_words(text) == text
