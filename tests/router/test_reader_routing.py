"""The reader through the router, on the real corpus in Postgres (issue 22, items 2-4): a period
after today ends in an honest empty result (no search run, no rejection loop, the year not
searched as a word); a period cue nobody could read is named in `adjustments`, recorded in the
audit and cut from the search text; several named languages search both."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from infra.db.audit import list_audit_events
from infra.settings import Settings
from infra.status import ResultStatus, ResultType
from router.executor import InProcessExecutor
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, RecordingExecutor, make_deps
from tests.support.llm_server import ScriptedLLM, ToolCall

NewJob = Callable[[str], Awaitable[str]]
pytestmark = pytest.mark.usefixtures("shared_corpus")
UNREAD = "could not read the period 'aus dem vorvorigen Quartal'; searched all dates"


async def test_a_period_after_today_is_an_honest_empty_result(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    question = "Find posts about Ruby from 2032"
    executor = RecordingExecutor(InProcessExecutor(db))
    job = await new_job(question)
    result = await route_question(make_deps(settings, db, None, executor, llm=False),
                                  RouteRequest(question=question, job_id=job, today=TODAY))
    assert result.routed_by == "fallback" and result.status is ResultStatus.NO_RESULTS
    assert result.result_type is ResultType.SEARCH and result.articles is not None and result.articles.items == []
    assert result.message is not None and "after today (2026-09-15)" in result.message and "'2032'" in result.message
    assert result.search is not None and result.search.text == "Ruby"  # not the year as a word
    assert (str(result.search.date_from), str(result.search.date_to)) == ("2032-01-01", "2032-12-31")
    assert executor.searches == []  # nothing can match: nothing is searched
    execution = [e for e in await list_audit_events(db, job) if e.kind == "tool_execution"]
    assert execution and execution[0].normalized_arguments is not None
    assert "nothing was searched" in execution[0].normalized_arguments["adjustments"][-1]


async def test_a_model_that_sends_the_future_dates_is_not_argued_with(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "dateFrom": "2032-01-01", "dateTo": "2032-12-31"}))
    result = await route_question(make_deps(settings, db, None),
                                  RouteRequest(question="Ruby posts from 2032", today=TODAY))
    assert result.routed_by == "llm" and result.usage.llm_calls == 1  # no ERROR round, no rejection loop
    assert result.status is ResultStatus.NO_RESULTS and result.message and "after today" in result.message


async def test_an_unread_period_is_named_audited_and_not_searched_as_words(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    question = "Zeig mir Artikel über RubyGems aus dem vorvorigen Quartal"
    job = await new_job(question)
    result = await route_question(make_deps(settings, db, None, llm=False),
                                  RouteRequest(question=question, job_id=job, today=TODAY))
    assert result.search is not None and UNREAD in result.search.adjustments
    assert result.search.date_from is None and result.search.date_to is None
    assert result.search.text is not None and "Quartal" not in result.search.text and "RubyGems" in result.search.text
    assert result.articles is not None and result.articles.items  # the topic alone finds the articles
    rows = await list_audit_events(db, job)
    fallback = next(e for e in rows if e.kind == "fallback")
    assert fallback.normalized_arguments is not None and UNREAD in fallback.normalized_arguments["adjustments"]


async def test_a_models_topic_loses_the_unread_period_words_too(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "RubyGems Quartal"}))
    result = await route_question(make_deps(settings, db, None),
                                  RouteRequest(question="Zeig mir Artikel über RubyGems aus dem vorvorigen Quartal",
                                               today=TODAY))
    assert result.search is not None and result.search.text == "RubyGems" and UNREAD in result.search.adjustments


async def test_two_named_languages_search_both(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.fail_every_call()
    result = await route_question(make_deps(settings, db, None, llm=False), RouteRequest(
        question="Find the Russian and the German articles about Ruby", today=TODAY, page_size=50))
    assert result.search is not None and result.search.language == ["de", "ru"]
    assert result.articles is not None and {item.language for item in result.articles.items} == {"de", "ru"}
