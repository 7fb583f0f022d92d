"""route_question against the scripted LLM (real HTTP), real Postgres, Redis and search."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from infra.db.audit import list_audit_events
from infra.settings import LLMFilters, LLMMode, Settings
from infra.status import ResultStatus, ResultType
from router.errors import RoutingFailed
from router.hooks import RunHooks
from router.prompt import CORRECTION
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, make_deps, with_limits
from tests.support.llm_server import (
    Delay,
    Garbage,
    HttpError,
    ScriptedLLM,
    Text,
    ToolCall,
    ToolCalls,
    json_decision,
)

NewJob = Callable[[str], Awaitable[str]]
pytestmark = pytest.mark.usefixtures("shared_corpus")


def request(question: str, job_id: str | None = None, **kw: Any) -> RouteRequest:
    return RouteRequest(question=question, job_id=job_id, today=TODAY, **kw)


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_search_tool_chosen_and_executed(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "language": "en", "pageSize": 3}))
    job = await new_job("Find English articles about Ruby")
    result = await route_question(make_deps(settings, db, None), request("Find English articles about Ruby", job))

    assert result.result_type is ResultType.SEARCH and result.status is ResultStatus.ANSWERED
    assert result.tool == "SearchArticles" and result.routed_by == "llm"
    assert result.articles is not None and len(result.articles.items) == 3
    assert result.articles.total_items > 3
    assert {item.language for item in result.articles.items} == {"en"}
    assert result.search is not None and result.search.text == "Ruby" and result.search.page_size == 3
    assert result.usage.llm_calls == 1 and result.usage.input_tokens == 120 and result.usage.total_tokens == 140

    sent = llm.chat_requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["SearchArticles", "AskArticles", "SearchAndAskArticles"]
    assert sent["parallel_tool_calls"] is False and sent["tool_choice"] == "auto"
    assert "Tuesday, 2026-09-15" in sent["messages"][0]["content"]
    assert sent["messages"][1] == {"role": "user", "content": "Find English articles about Ruby"}

    trail = await list_audit_events(db, job)
    assert [e.kind for e in trail] == ["llm_round", "tool_execution"]
    rnd, execution = trail
    assert (rnd.loop_mode, rnd.finish_reason, rnd.input_tokens, rnd.output_tokens) == ("tools", "tool_calls", 120, 20)
    assert rnd.tool == "SearchArticles" and rnd.arguments == {"text": "Ruby", "language": "en", "pageSize": 3}
    assert execution.outcome == "answered" and execution.normalized_arguments is not None
    assert execution.normalized_arguments["pageSize"] == 3 and execution.normalized_arguments["sort"] == "newest"


async def test_client_page_size_wins_over_the_model(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "pageSize": 40}))
    result = await route_question(make_deps(settings, db, None), request("Ruby articles", page_size=4))
    assert result.articles is not None and len(result.articles.items) == 4


GOOD_SEARCH = ToolCall("SearchArticles", {"text": "Ruby", "language": "de"})


@pytest.mark.parametrize(
    ("question", "bad", "error"),
    [
        ("Deutsche Artikel über Ruby", ToolCall("DeleteArticles", {"id": "x"}), "ERROR: unknown tool 'DeleteArticles'"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"text": "Ruby", "limit": 5}),
         "ERROR: SearchArticles: unknown argument 'limit'"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"text": "Ruby", "page": "two"}),
         "ERROR: SearchArticles: page must be an integer"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"dateFrom": "2026-02-30"}),
         "not a calendar date"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"language": "fr"}), "language 'fr' is not supported"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"sort": "relevance"}), "sort 'relevance'"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"dateFrom": "2025-05-01", "dateTo": "2025-01-01"}),
         "dateFrom 2025-05-01 is after dateTo 2025-01-01"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", {"dateFrom": "2027-01-01"}), "after today"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchArticles", '{"text": "Ruby"'), "not valid JSON"),
        ("Deutsche Artikel über Ruby", ToolCall("AskArticles", {"question": 42}),
         "ERROR: AskArticles: question must be a string"),
        ("Deutsche Artikel über Ruby", ToolCall("AskArticles", {"question": "Was ist neu?", "answerLanguage": "fr"}),
         "answerLanguage 'fr' is not supported"),
        ("Deutsche Artikel über Ruby", ToolCall("SearchAndAskArticles", {"text": "Ruby"}),
         "argument 'question' is required"),
        ("Deutsche Artikel über Ruby seit letztem Jahr",
         ToolCall("SearchArticles", {"text": "Ruby", "dateFrom": "2026-01-01"}), "'seit letztem Jahr'"),
    ],
)
async def test_invalid_call_gets_error_message_then_correction_succeeds(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, question: str, bad: ToolCall, error: str
) -> None:
    good = GOOD_SEARCH
    if "seit letztem Jahr" in question:
        good = ToolCall("SearchArticles", {"text": "Ruby", "language": "de", "dateFrom": "2025-01-01"})
    llm.script(bad, good)
    result = await route_question(make_deps(settings, db, None), request(question))

    assert result.status is ResultStatus.ANSWERED and result.tool == "SearchArticles"
    assert result.usage.llm_calls == 2
    first, second = llm.chat_requests
    [answer] = tool_messages(second)
    assistant = second["messages"][-2]
    assert answer["tool_call_id"] == assistant["tool_calls"][0]["id"]  # the rejected call is answered
    assert answer["content"].startswith("ERROR: ") and error in answer["content"]
    assert not tool_messages(first)


async def test_each_extra_call_in_one_message_is_answered_not_executed(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    llm.script(ToolCalls([ToolCall("SearchArticles", {"text": "Ruby"}), ToolCall("AskArticles", {"question": "x"})]))
    job = await new_job("Ruby")
    result = await route_question(make_deps(settings, db, None), request("Ruby", job))
    assert result.tool == "SearchArticles" and result.status is ResultStatus.ANSWERED
    trail = await list_audit_events(db, job)
    rejected = [e for e in trail if e.kind == "tool_rejected"]
    assert len(rejected) == 1 and rejected[0].tool == "AskArticles"
    assert rejected[0].outcome == "limit_tool_calls_per_round"
    assert [e.tool for e in trail if e.kind == "tool_execution"] == ["SearchArticles"]


async def test_audit_trail_holds_every_round(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    llm.script(
        ToolCall("FindStuff", {}, prompt_tokens=200, completion_tokens=10),
        ToolCall("SearchArticles", {"sort": "best"}, prompt_tokens=300, completion_tokens=11),
        ToolCall("SearchArticles", {"text": "Ruby"}, prompt_tokens=400, completion_tokens=12),
    )
    job = await new_job("Ruby news")
    result = await route_question(make_deps(settings, db, None), request("Ruby news", job))
    assert result.usage.llm_calls == 3 and result.usage.input_tokens == 900 and result.usage.output_tokens == 33

    trail = await list_audit_events(db, job)
    assert [(e.kind, e.round) for e in trail] == [
        ("llm_round", 1), ("tool_rejected", 1), ("llm_round", 2), ("tool_rejected", 2),
        ("llm_round", 3), ("tool_execution", 3),
    ]
    rounds = [e for e in trail if e.kind == "llm_round"]
    assert [(e.input_tokens, e.output_tokens) for e in rounds] == [(200, 10), (300, 11), (400, 12)]
    assert all(e.model and e.loop_mode == "tools" and e.finish_reason == "tool_calls" for e in rounds)
    assert all(e.latency_ms is not None and e.latency_ms >= 0 for e in rounds)
    assert "unknown tool 'FindStuff'" in (trail[1].error or "")
    assert "sort 'best'" in (trail[3].error or "")


# ---- limits ----

async def test_four_rounds_end_the_job(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob) -> None:
    # Each call differs (the same rejected call twice would end the loop early: test_small_models.py).
    llm.script(*[ToolCall("SearchArticles", {"sort": f"random-{i}"}) for i in range(5)])
    job = await new_job("Ruby")
    with pytest.raises(RoutingFailed) as failed:
        await route_question(make_deps(settings, db, None), request("Ruby", job))
    assert failed.value.code == "limit_max_rounds"
    assert failed.value.usage.llm_calls == 4
    assert len(llm.chat_requests) == 4 and llm.remaining == 1
    trail = await list_audit_events(db, job)
    assert [e.kind for e in trail].count("llm_round") == 4
    assert trail[-1].kind == "limit" and trail[-1].outcome == "limit_max_rounds"
    assert [e.kind for e in trail].count("limit") == 1


async def test_three_tool_executions_end_the_job(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    nothing = [ToolCall("SearchArticles", {"text": f"qqxyzzy{i}"}) for i in range(4)]
    llm.script(*nothing)
    job = await new_job("qqxyzzy")
    with pytest.raises(RoutingFailed) as failed:
        await route_question(make_deps(settings, db, None), request("qqxyzzy", job))
    assert failed.value.code == "limit_tool_executions"
    trail = await list_audit_events(db, job)
    executions = [e for e in trail if e.kind == "tool_execution"]
    assert [e.outcome for e in executions] == ["no_results"] * 3
    # Each empty result was shown to the model so it could broaden the search.
    second = llm.chat_requests[1]
    assert "found nothing" in tool_messages(second)[0]["content"]


async def test_model_may_stop_after_nothing_found(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "qqxyzzy"}), Text("There are no such articles."))
    result = await route_question(make_deps(settings, db, None), request("qqxyzzy articles"))
    assert result.status is ResultStatus.NO_RESULTS and result.result_type is ResultType.SEARCH
    assert result.articles is not None and result.articles.total_items == 0
    assert result.usage.llm_calls == 2


@pytest.mark.parametrize(
    ("limits", "first", "calls"),
    [
        # input budget: the second round would not fit, so it is never sent
        ({"input_tokens": 9_000}, ToolCall("SearchArticles", {"sort": "x"}, prompt_tokens=8_500), 1),
        # output budget: exceeded by the first reply
        ({"output_tokens": 100}, ToolCall("SearchArticles", {"text": "Ruby"}, completion_tokens=150), 1),
        # total budget
        ({"total_tokens": 9_000}, ToolCall("SearchArticles", {"sort": "x"}, prompt_tokens=7_500,
                                           completion_tokens=10), 1),
    ],
)
async def test_token_budgets_end_the_job(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, limits: dict[str, int], first: ToolCall, calls: int
) -> None:
    llm.script(first, ToolCall("SearchArticles", {"text": "Ruby"}))
    with pytest.raises(RoutingFailed) as failed:
        await route_question(make_deps(with_limits(settings, **limits), db, None), request("Ruby"))
    assert failed.value.code == "limit_tokens"
    assert len(llm.chat_requests) == calls
    assert failed.value.usage.total_tokens == first.prompt_tokens + first.completion_tokens


async def test_max_tokens_sent_follows_the_budget(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby"}), ToolCall("SearchArticles", {"text": "Ruby"}))
    await route_question(make_deps(with_limits(settings, output_tokens=111), db, None), request("Ruby"))
    assert llm.chat_requests[0]["max_tokens"] == 111  # the budget is below a routing reply's own cap
    # Otherwise a routing round asks for a short reply: a decision, the question copied at most.
    question = "Ruby " * 40
    await route_question(make_deps(settings, db, None), request(question))
    assert llm.chat_requests[1]["max_tokens"] == 128 + len(" ".join(question.split())) // 2


async def test_hanging_llm_leaves_the_fallback_its_slice_of_the_deadline(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    # The call timeout (30 s) is longer than the whole deadline: without the reserve the LLM call
    # used it all and the job ended in limit_deadline (issue 16, item 5).
    llm.script(Delay(30, ToolCall("SearchArticles", {"text": "Ruby"})), ToolCall("SearchArticles", {"text": "Ruby"}))
    job = await new_job("Ruby")
    limited = with_limits(settings, job_deadline_s=4.0, llm_call_timeout_s=30.0)
    started = time.monotonic()
    result = await route_question(make_deps(limited, db, None), request("Ruby", job))
    elapsed = time.monotonic() - started
    assert result.routed_by == "fallback" and result.status is ResultStatus.ANSWERED, result
    assert elapsed < 4.0, elapsed
    assert len(llm.chat_requests) == 1  # no retry may start inside the fallback's reserve (1 s here)
    trail = await list_audit_events(db, job)
    [fallback] = [e for e in trail if e.kind == "fallback"]
    assert fallback.outcome == "routed"
    assert not [e for e in trail if e.kind == "limit"]


# ---- retries and timeouts ----

async def test_429_with_retry_after_is_retried_after_the_wait(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(HttpError(429, "slow down", headers={"Retry-After": "1"}), ToolCall("SearchArticles", {"text": "Ruby"}))
    result = await route_question(make_deps(settings, db, None), request("Ruby"))
    assert result.routed_by == "llm" and result.status is ResultStatus.ANSWERED
    chats = [r for r in llm.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 2
    assert chats[1].at - chats[0].at >= 0.9  # Retry-After honoured, not the shorter jitter


async def test_500_is_retried(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(HttpError(500), HttpError(503), ToolCall("SearchArticles", {"text": "Ruby"}))
    result = await route_question(make_deps(settings, db, None), request("Ruby"))
    assert result.routed_by == "llm" and len(llm.chat_requests) == 3


async def test_400_is_not_retried(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob) -> None:
    llm.script(HttpError(400, "bad request"), ToolCall("SearchArticles", {"text": "Ruby"}))
    job = await new_job("Find articles about Ruby")
    result = await route_question(make_deps(settings, db, None), request("Find articles about Ruby", job))
    assert len(llm.chat_requests) == 1 and llm.remaining == 1
    assert result.routed_by == "fallback" and result.tool == "SearchArticles"
    trail = await list_audit_events(db, job)
    assert [e.kind for e in trail] == ["fallback", "tool_execution"]
    assert "HTTP 400" in (trail[0].error or "")


async def test_400_without_fallback_fails_with_llm_unavailable(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(HttpError(400, "bad request"))
    with pytest.raises(RoutingFailed) as failed:
        await route_question(make_deps(settings, db, None, fallback=False), request("Ruby"))
    assert failed.value.code == "llm_unavailable" and "HTTP 400" in failed.value.message


async def test_slow_llm_hits_the_per_call_timeout(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(Delay(3, ToolCall("SearchArticles", {"text": "never"})), ToolCall("SearchArticles", {"text": "Ruby"}))
    deps = make_deps(with_limits(settings, llm_call_timeout_s=0.5), db, None)
    result = await route_question(deps, request("Ruby"))
    assert result.routed_by == "llm" and result.search is not None and result.search.text == "Ruby"
    assert len(llm.chat_requests) == 2


async def test_garbage_response_falls_back(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(Garbage())
    result = await route_question(make_deps(settings, db, None), request("Show articles about Ruby"))
    assert result.routed_by == "fallback" and result.search is not None and result.search.text == "Ruby"


async def test_fallback_runs_when_the_llm_is_down(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    llm.fail_every_call("the LLM is down")
    events: list[tuple[str, dict[str, Any]]] = []

    async def on_event(kind: str, data: dict[str, Any]) -> None:
        events.append((kind, data))

    question = "Найди статьи на немецком про Ruby за 2025 год"
    job = await new_job(question)
    result = await route_question(make_deps(settings, db, None), request(question, job), RunHooks(on_event=on_event))
    assert len(llm.chat_requests) == settings.llm_max_retries + 1
    assert result.routed_by == "fallback" and result.result_type is ResultType.SEARCH
    assert result.search is not None
    assert (result.search.text, result.search.language) == ("Ruby", "de")
    assert (str(result.search.date_from), str(result.search.date_to)) == ("2025-01-01", "2025-12-31")
    assert result.articles is not None and result.articles.items
    assert all(i.language == "de" and i.created_at.year == 2025 for i in result.articles.items)
    assert result.usage.llm_calls == 0
    assert "fallback" in [k for k, _ in events]
    trail = await list_audit_events(db, job)
    assert trail[0].kind == "fallback" and "HTTP 500" in (trail[0].error or "")


async def test_degraded_mode_without_llm_makes_no_call(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.fail_every_call()
    result = await route_question(make_deps(settings, db, None, llm=False), request("Hallo!"))
    assert result.routed_by == "fallback" and result.status is ResultStatus.REFUSED
    assert result.message is not None and "Artikeln" in result.message
    assert llm.chat_requests == []


# ---- prose and refusals ----

async def test_prose_gets_exactly_one_corrective_round_then_the_fallback_decides(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    llm.script(Text("Ruby is a programming language."), Text("Ruby 3.4 was released."), ToolCall("SearchArticles", {}))
    job = await new_job("Find articles about Ruby")
    result = await route_question(make_deps(settings, db, None), request("Find articles about Ruby", job))
    # A real request answered in prose twice is not a failed job: the deterministic router runs it.
    assert result.routed_by == "fallback" and result.tool == "SearchArticles" and result.status is ResultStatus.ANSWERED
    assert result.routed_reason is not None and "prose" in result.routed_reason
    assert len(llm.chat_requests) == 2 and llm.remaining == 1
    correction = llm.chat_requests[1]["messages"][-1]
    assert correction == {"role": "user", "content": CORRECTION}
    trail = await list_audit_events(db, job)
    assert [e.outcome for e in trail if e.kind == "llm_round"] == ["text", "text"]
    assert [(e.kind, e.outcome) for e in trail if e.kind == "fallback"] == [("fallback", "routed")]


async def test_prose_then_tool_call_succeeds(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(Text("Let me think."), ToolCall("SearchArticles", {"text": "Ruby"}))
    result = await route_question(make_deps(settings, db, None), request("Ruby news"))
    assert result.status is ResultStatus.ANSWERED and result.usage.llm_calls == 2


async def test_declined_greeting_is_refused_without_invented_data(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    # A message the gate lets through (it reads like a question); the model declines it.
    llm.script(Text("NO_TOOL: not about the articles. Also here are 3 great articles: ..."))
    result = await route_question(make_deps(settings, db, None), request("Расскажи мне про Ruby, а?"))
    assert result.status is ResultStatus.REFUSED and result.routed_by == "llm"
    assert result.articles is None and result.answer is None and result.sources == []
    assert result.message is not None and "статьях" in result.message and "great articles" not in result.message
    assert len(llm.chat_requests) == 1


# ---- json_schema loop mode ----

async def test_json_schema_mode_decides_through_response_format(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: NewJob
) -> None:
    llm.script(
        json_decision("SearchArticles", {"text": "Ruby", "sort": "latest"}),
        Text("```json\n" + json.dumps({"tool": "SearchArticles", "arguments": {"text": "Ruby"}}) + "\n```"),
    )
    job = await new_job("Ruby")
    deps = make_deps(settings, db, None, mode=LLMMode.JSON_SCHEMA)
    result = await route_question(deps, request("Ruby", job))
    assert result.status is ResultStatus.ANSWERED and result.search is not None and result.search.sort == "newest"
    first, second = llm.chat_requests
    assert "tools" not in first
    assert first["response_format"]["type"] == "json_schema"
    variants = first["response_format"]["json_schema"]["schema"]["anyOf"]
    assert [v["properties"]["tool"].get("const") for v in variants] == [
        "SearchArticles", "AskArticles", "SearchAndAskArticles", None]
    assert first["temperature"] == 0
    assert "SearchAndAskArticles" in first["messages"][0]["content"]
    feedback = second["messages"][-1]
    assert feedback["role"] == "user" and "ERROR: SearchArticles: sort 'latest'" in feedback["content"]
    trail = await list_audit_events(db, job)
    assert {e.loop_mode for e in trail if e.kind == "llm_round"} == {"json_schema"}


async def test_json_schema_null_tool_is_a_refusal(llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool) -> None:
    llm.script(json_decision(None, {}))  # type: ignore[arg-type]
    # The model fills the filters itself, so it is trusted: its decline stands (issue 23).
    deps = make_deps(settings, db, None, mode=LLMMode.JSON_SCHEMA, filters=LLMFilters.MODEL)
    result = await route_question(deps, request("Tell me about Bundler"))
    assert result.status is ResultStatus.REFUSED and result.routed_by == "llm" and len(llm.chat_requests) == 1


# ---- decision cache ----

async def test_decision_cache_hit_makes_no_llm_call(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, redis_client: aioredis.Redis, new_job: NewJob
) -> None:
    question = "Show me articles about Bundler"
    llm.script(ToolCall("SearchArticles", {"text": "Bundler"}))
    deps = make_deps(settings, db, redis_client, cache=True)
    first = await route_question(deps, request(question))
    assert first.routed_by == "llm" and first.usage.llm_calls == 1

    llm.fail_every_call("a cache hit must not call the LLM")
    job = await new_job(question)
    second = await route_question(deps, request("  show me ARTICLES about bundler?  ", job))
    assert second.routed_by == "cache" and second.usage.llm_calls == 0
    assert second.search == first.search and second.articles == first.articles
    assert llm.chat_requests == [llm.chat_requests[0]]
    trail = await list_audit_events(db, job)
    assert [e.kind for e in trail] == ["cache_hit", "tool_execution"]

    # Another day is another decision ("last month" would mean something else).
    llm.reset()
    llm.script(ToolCall("SearchArticles", {"text": "Bundler"}))
    later = await route_question(deps, RouteRequest(question=question, today=TODAY.replace(day=16)))
    assert later.routed_by == "llm"
