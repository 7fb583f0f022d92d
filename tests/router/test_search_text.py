"""Search text that can match its articles, routed end to end (scripted LLM, real PostgreSQL and
corpus): a small model's topic in another language than the articles (json_schema code-filled
mode) is searched with the question's own words; a relaxed search says so in the result's
`search.adjustments`. The oracle is a scan of the corpus file."""

from __future__ import annotations

import re

import asyncpg
import pytest

from infra.settings import LLMMode, Settings
from infra.status import ResultStatus
from router.code_filters import fill_filters
from router.question_reading import read_question
from router.service import RouteRequest, route_question
from router.tools import SEARCH
from tests.retrieval.test_search import corpus, full_text
from tests.router.conftest import TODAY, make_deps
from tests.support.llm_server import ScriptedLLM, ToolCall, json_decision

pytestmark = pytest.mark.usefixtures("shared_corpus")


def russian_rexml_vulnerability_posts() -> set[str]:
    return {r.id for r in corpus() if r.language == "ru"
            and re.search(r"(?<![\w/.])rexml(?![\w/])", full_text(r), re.I)
            and re.search(r"(?<!\w)уязвим", full_text(r), re.I)}


@pytest.mark.parametrize(("question", "topic", "searched"), [
    ("Найди статьи про уязвимости REXML", "REXML vulnerabilities", "уязвимости REXML"),
    ("Что нового в Ruby?", "Ruby", "Ruby"),  # a name copied from the question: kept
    ("Find English articles about Sicherheitslücken", "Sicherheitslücken", "Sicherheitslücken"),  # the articles' own
    ("Zeige Artikel über Sicherheitslücken in REXML", "REXML vulnerabilities", "Sicherheitslücken REXML"),
])
def test_a_translated_topic_gives_way_to_the_questions_words(question: str, topic: str, searched: str) -> None:
    _, arguments = fill_filters(SEARCH, {"text": topic}, read_question(question, TODAY))
    assert arguments["text"] == searched


async def test_an_english_topic_over_russian_articles_finds_the_russian_posts(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    expected = russian_rexml_vulnerability_posts()
    assert len(expected) > 2
    llm.script(json_decision(SEARCH, {"text": "REXML vulnerabilities"}))
    deps = make_deps(settings, db, None, mode=LLMMode.JSON_SCHEMA)
    result = await route_question(deps, RouteRequest(question="Найди статьи про уязвимости REXML", today=TODAY,
                                                     page_size=50))
    assert result.status is ResultStatus.ANSWERED and result.articles is not None and result.search is not None
    assert result.search.text == "уязвимости REXML" and result.search.language == "ru"
    assert {item.id for item in result.articles.items} == expected


async def test_a_relaxed_search_says_so_in_the_results_search_adjustments(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(ToolCall(SEARCH, {"text": "REXML zqxwnotices", "language": "en", "pageSize": 50}))
    result = await route_question(make_deps(settings, db, None), RouteRequest(question="REXML notices", today=TODAY))
    assert result.status is ResultStatus.ANSWERED and result.search is not None and result.articles is not None
    note = "no article has all of 'REXML zqxwnotices'; showing those with 'REXML'"
    assert note in result.search.adjustments
    assert result.wire()["articles"]["adjustments"] == [note]
    expected = {r.id for r in corpus() if r.language == "en"
                and re.search(r"(?<![\w/.])rexml(?![\w/])", full_text(r), re.I)}
    assert {item.id for item in result.articles.items} == expected
