"""The queue executor (`workers.executor.QueueExecutor`) on real workers (search + RAG), driven by
the router."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from infra.db.audit import list_audit_events
from infra.db.pool import DatabaseUnavailable
from infra.settings import Settings
from infra.status import ResultStatus, ResultType
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, RecordingExecutor, make_deps
from tests.support.cut_connections import LOCK_LOCALIZATIONS, terminate_blocked_reads
from tests.support.llm_server import ScriptedLLM, Text, ToolCall, answer_from_passage
from workers._db_retry import DB_ATTEMPTS
from workers.executor import QueueExecutor

NewJob = Callable[[str], Awaitable[str]]
# The router asks the articles; the answer model answers from them (a sentence of its first
# passage, cited: an answer the answer check accepts).
ASK_YJIT = ToolCall("AskArticles", {"question": "What is YJIT?", "language": "en"})


def script_ask_yjit(llm: ScriptedLLM) -> None:
    llm.script(ASK_YJIT)
    llm.on_chat(lambda body: answer_from_passage(body, prompt_tokens=700, completion_tokens=40))


async def test_ask_tool_runs_on_the_rag_worker(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, indexed_ids: list[str], new_job: NewJob
) -> None:
    script_ask_yjit(llm)
    executor = RecordingExecutor(QueueExecutor())
    job = await new_job("What is YJIT?")
    result = await route_question(
        make_deps(settings, db, None, executor), RouteRequest("What is YJIT?", job_id=job, today=TODAY)
    )
    assert result.result_type is ResultType.ANSWER and result.status is ResultStatus.ANSWERED
    assert result.answer_kind == "llm" and result.answer is not None and "[1]" in result.answer
    assert result.answer_language == "en" and result.sources
    # Other suites may index more of the corpus in the same session: check the filter, not the ids.
    assert all(s.language in (None, "en") for s in result.sources)
    assert executor.order == ["ask"] and executor.asks[0]["scope"] is None
    # Router round + the RAG answer call, both in the job's usage.
    assert result.usage.llm_calls == 2 and result.usage.input_tokens == 120 + 700
    rag_request = llm.chat_requests[1]
    assert "tools" not in rag_request  # the answer model is offered no tools
    kinds = [e.kind for e in await list_audit_events(db, job)]
    assert kinds[0] == "llm_round" and kinds[-1] == "tool_execution"
    assert "rag_answer" in kinds  # written by the RAG worker for the answer call, under the same job


async def test_a_search_that_cannot_reach_the_database_fails_the_round_as_an_outage_not_a_tool_fault(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, celery_worker: object, new_job: NewJob
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "YJIT", "language": "en"}))
    job = await new_job("YJIT articles")
    deps = make_deps(settings, db, None, QueueExecutor())
    async with db.acquire() as lock_holder, lock_holder.transaction():
        await lock_holder.execute(LOCK_LOCALIZATIONS)  # each attempt of the search task is cut mid-statement
        routing = asyncio.ensure_future(route_question(deps, RouteRequest("YJIT articles", job_id=job, today=TODAY)))
        assert await asyncio.wait_for(terminate_blocked_reads(db, routing, times=DB_ATTEMPTS), 30) == DB_ATTEMPTS
        with pytest.raises(DatabaseUnavailable):  # not RoutingFailed(tool_failed): the runner re-queues the job
            await asyncio.wait_for(routing, 60)
    [execution] = [e for e in await list_audit_events(db, job) if e.kind == "tool_execution"]
    assert execution.outcome == "error" and execution.error is not None and "PostgreSQL unreachable" in execution.error


async def test_a_rag_answer_whose_connection_is_cut_runs_again_on_a_new_one(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, indexed_ids: list[str], new_job: NewJob
) -> None:
    script_ask_yjit(llm)
    job = await new_job("What is YJIT?")
    deps = make_deps(settings, db, None, QueueExecutor())
    async with db.acquire() as lock_holder, lock_holder.transaction():
        await lock_holder.execute(LOCK_LOCALIZATIONS)  # the answer's read of its sources waits, and is cut
        routing = asyncio.ensure_future(route_question(deps, RouteRequest("What is YJIT?", job_id=job, today=TODAY)))
        assert await asyncio.wait_for(terminate_blocked_reads(db, routing, times=1), 30) == 1
    result = await asyncio.wait_for(routing, 60)
    assert result.status is ResultStatus.ANSWERED and result.answer_kind == "llm" and result.sources
    assert len(llm.chat_requests) == 2  # the router round and one answer call: the retry came before it


async def test_search_and_ask_scopes_rag_to_the_page(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, indexed_ids: list[str], new_job: NewJob
) -> None:
    llm.script(
        ToolCall("SearchAndAskArticles", {"text": "YJIT", "language": "en", "question": "How did YJIT get faster?"}),
        Text("It got faster through better code generation [1].", prompt_tokens=600, completion_tokens=30),
    )
    executor = RecordingExecutor(QueueExecutor())
    job = await new_job("Find YJIT articles and explain how it got faster")
    req = RouteRequest("Find YJIT articles and explain how it got faster", job_id=job, page_size=5, today=TODAY)
    result = await route_question(make_deps(settings, db, None, executor), req)

    assert executor.order == ["search", "ask"]
    [search] = executor.searches
    assert (search.page, search.page_size, search.text, search.language) == (1, 5, "YJIT", "en")
    assert result.articles is not None
    page_ids = [item.id for item in result.articles.items]
    assert set(page_ids) & set(indexed_ids)  # the page the fixture indexed (give or take other suites' rows)
    [ask] = executor.asks
    assert ask["scope"] == page_ids and ask["language"] == "en"
    assert ask["scope_truncated"] is (result.articles.total_items > 5) is True
    assert result.result_type is ResultType.COMBINED and result.status is ResultStatus.ANSWERED
    assert result.coverage_limited is True
    assert result.sources and {s.article_id for s in result.sources} <= set(page_ids)
    assert result.search is not None and result.question == "How did YJIT get faster?"
    trail = await list_audit_events(db, job)
    [execution] = [e for e in trail if e.kind == "tool_execution"]
    assert execution.tool == "SearchAndAskArticles" and execution.outcome == "answered"
    assert execution.normalized_arguments is not None and execution.normalized_arguments["pageSize"] == 5


async def test_combined_with_an_empty_page_never_asks_rag(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, celery_worker: object, shared_corpus: object
) -> None:
    llm.script(
        ToolCall("SearchAndAskArticles", {"text": "qqxyzzy", "question": "What is qqxyzzy?"}),
        Text("NO_TOOL: nothing matches"),
    )
    executor = RecordingExecutor(QueueExecutor())
    result = await route_question(make_deps(settings, db, None, executor), RouteRequest("qqxyzzy?", today=TODAY))
    assert executor.order == ["search"]
    assert result.status is ResultStatus.NO_RESULTS and result.result_type is ResultType.COMBINED
