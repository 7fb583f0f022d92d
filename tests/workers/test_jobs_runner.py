"""The job runner's outcomes (workers/tasks/jobs.py `execute_job`), in-process against a
database of its own: the routing step is replaced by a stand-in that fails in each way a real
one can, so every branch of the runner is exercised with real SQL and a real lease."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import pytest
import redis.exceptions

from infra.db import job_sweeps
from infra.db import jobs as jobs_db
from infra.db.api_keys import create_key
from infra.db.audit import AuditEvent, list_audit_events
from infra.db.pool import DatabaseUnavailable
from infra.pages import get_page
from infra.results import ArticlesPage, NormalizedSearch, QuestionResult, Usage
from infra.settings import Settings
from infra.status import JobStatus, ResultStatus, ResultType
from router.errors import RoutingFailed
from router.hooks import RunHooks
from tests.api.support import stack_settings, throwaway_database
from workers import _runtime
from workers.tasks import jobs as runner

Route = Callable[..., Awaitable[QuestionResult]]


@pytest.fixture(scope="module")
def runner_dsn(test_environment: None) -> Iterator[str]:
    with throwaway_database("runner") as dsn:
        yield dsn


@pytest.fixture
async def rt(runner_dsn: str, settings: Settings) -> AsyncIterator[_runtime.Runtime]:
    own = stack_settings(settings, database_url=runner_dsn, redis_prefix=settings.redis_prefix + "runner:",
                         job_lease_s=0.6, job_max_attempts=2)
    runtime = _runtime.Runtime(settings=own, loop=asyncio.get_running_loop())
    runtime.extras["jobs.router_deps"] = object()  # the stand-in route needs no dependencies
    try:
        yield runtime
    finally:
        await runtime.aclose()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Messages the runner sends (instead of the broker), as (kind, argument)."""
    calls: list[tuple[str, Any]] = []

    def send_run_job(app: Any, s: Any, job_id: str, countdown: float | None = None, priority: Any = None) -> bool:
        calls.append(("run_job", (job_id, countdown)))
        return True

    def send_webhook(app: Any, s: Any, delivery_id: int, countdown: float | None = None) -> bool:
        calls.append(("webhook", delivery_id))
        return True

    monkeypatch.setattr(runner, "send_run_job", send_run_job)
    monkeypatch.setattr(runner, "send_webhook", send_webhook)
    return calls


def _route(monkeypatch: pytest.MonkeyPatch, route: Route) -> None:
    async def with_hooks(deps: Any, req: Any, hooks: RunHooks) -> QuestionResult:
        return await route(deps, req, on_event=hooks.on_event, journal=hooks.narrator, before_tool=hooks.before_tool)

    monkeypatch.setattr(runner, "route_question", with_hooks)


async def _job(pool: asyncpg.Pool, webhook: str | None = "https://hooks.example.com/h") -> str:
    async with pool.acquire() as conn:
        key = await create_key(conn, "runner")
        job, _ = await jobs_db.create_job(
            conn, api_key_id=key.key.id, question="ruby news", answer_language="en", page_size=5,
            webhook_url=webhook, idempotency_key=None, request_hash="h", lease_s=60,
        )
    return job.id


async def _state(pool: asyncpg.Pool, job_id: str) -> tuple[jobs_db.JobRow, list[str]]:
    async with pool.acquire() as conn:
        job = await jobs_db.get_job(conn, job_id)
        kinds = [r["kind"] for r in await conn.fetch("SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id",
                                                     job_id)]
    assert job is not None
    return job, kinds


def _search_result() -> QuestionResult:
    search = NormalizedSearch(text="ruby", language="en", page=1, page_size=5)
    return QuestionResult(
        result_type=ResultType.SEARCH, status=ResultStatus.ANSWERED, search=search,
        articles=ArticlesPage(items=[], total_items=12, page=1, page_size=5, total_pages=3),
        usage=Usage(llm_calls=1, input_tokens=10, output_tokens=2, total_tokens=12),
    )


async def test_success_stores_result_events_cached_page_and_webhook(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    async def route(deps: Any, req: Any, *, on_event: Any, **_: Any) -> QuestionResult:
        assert (req.question, req.answer_language, req.page_size, req.job_id) == ("ruby news", "en", 5, job_id)
        await on_event("routing", {"llm": True})
        await on_event("tool_started", {"tool": "SearchArticles", "when": asyncio.get_running_loop()})  # not JSON
        return _search_result()

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    assert await runner.execute_job(rt, job_id) == "succeeded"
    job, kinds = await _state(pool, job_id)
    assert job.status is JobStatus.SUCCEEDED and job.result == _search_result()
    assert job.usage == {"llmCalls": 1, "inputTokens": 10, "outputTokens": 2, "totalTokens": 12, "costUsd": 0.0}
    assert kinds == ["queued", "running", "routing", "tool_started", "succeeded"]
    cached = await get_page(await rt.redis(), rt.settings, _search_result().search, 1)  # type: ignore[arg-type]
    assert cached == _search_result().articles
    assert [kind for kind, _ in sent] == ["webhook"]
    assert await runner.execute_job(rt, job_id) == "skipped"  # a second message changes nothing
    assert (await _state(pool, job_id))[1][-1] == "succeeded" and len(sent) == 1


async def test_routing_failure_is_the_jobs_error(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    async def route(deps: Any, req: Any, *, on_event: Any, **_: Any) -> QuestionResult:
        raise RoutingFailed("limit_max_rounds", "4 rounds without a valid tool call", Usage(llm_calls=4))

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool, webhook=None)
    assert await runner.execute_job(rt, job_id) == "failed"
    job, kinds = await _state(pool, job_id)
    assert job.error == {"code": "limit_max_rounds", "message": "4 rounds without a valid tool call"}
    assert job.usage["llmCalls"] == 4 and job.result is None and kinds[-1] == "failed"
    assert sent == []  # no webhook URL, no delivery


async def test_a_bug_fails_the_job_without_retrying(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    async def route(deps: Any, req: Any, *, on_event: Any, **_: Any) -> QuestionResult:
        raise KeyError("oops")

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    assert await runner.execute_job(rt, job_id) == "failed"
    job, _ = await _state(pool, job_id)
    assert job.error is not None and job.error["code"] == "internal_error" and "oops" not in job.error["message"]
    assert [kind for kind, _ in sent] == ["webhook"]


@pytest.mark.parametrize("outage", [
    redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379"),
    DatabaseUnavailable("PostgreSQL unreachable over 3 attempts"),  # what a search task sends back
], ids=lambda exc: type(exc).__name__)
async def test_a_service_outage_requeues_then_gives_up(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]], outage: Exception
) -> None:
    async def route(deps: Any, req: Any, *, on_event: Any, **_: Any) -> QuestionResult:
        raise outage

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    assert await runner.execute_job(rt, job_id) == "released"
    job, kinds = await _state(pool, job_id)
    assert job.status is JobStatus.QUEUED and kinds[-1] == "requeued"
    assert sent == [("run_job", (job_id, runner.RETRY_PAUSE_S))]  # a delayed retry; no thread sleeps
    assert await runner.execute_job(rt, job_id) == "failed"  # attempt 2 of job_max_attempts=2
    job, _ = await _state(pool, job_id)
    assert job.error is not None and job.error["code"] == "service_unavailable"
    assert type(outage).__name__ in job.error["message"] and job.attempts == 2


async def test_a_runner_that_lost_its_lease_writes_nothing(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    taken_over = asyncio.Event()

    async def route(deps: Any, req: Any, *, on_event: Any, **_: Any) -> QuestionResult:
        # Meanwhile the sweeper decided this worker was dead and another runner claimed the job.
        async with pool.acquire() as conn:
            await conn.execute("UPDATE jobs SET attempts = attempts + 1 WHERE id = $1", job_id)
        taken_over.set()
        await asyncio.sleep(30)  # far past the lease: the heartbeat must notice first
        return _search_result()

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    assert await asyncio.wait_for(runner.execute_job(rt, job_id), timeout=10) == "lost"
    assert taken_over.is_set()
    job, kinds = await _state(pool, job_id)
    assert job.status is JobStatus.RUNNING and job.result is None and kinds == ["queued", "running"]
    assert sent == []


async def test_the_lease_is_renewed_while_routing(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    swept_meanwhile: list[list[str]] = []

    async def route(deps: Any, req: Any, *, on_event: Any, **_: Any) -> QuestionResult:
        await asyncio.sleep(1.5)  # two and a half leases
        async with pool.acquire() as conn:  # the sweeper runs while the job is still routing
            swept_meanwhile.append((await job_sweeps.sweep_expired(conn, lease_s=60, max_attempts=3)).requeued)
        return _search_result()

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    assert await runner.execute_job(rt, job_id) == "succeeded"
    assert swept_meanwhile and job_id not in swept_meanwhile[0]  # the heartbeat kept it from looking orphaned
    job, kinds = await _state(pool, job_id)
    assert job.attempts == 1 and "requeued" not in kinds


# A message as the API sent it before `JobMessage` (one in the queue over a deploy): it still routes.
SUBMITTED = {"question": "ruby news", "answerLanguage": "en", "pageSize": 5}


async def test_with_the_question_in_the_message_routing_writes_and_runs_tools_only_once_claimed(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    seen: list[str] = []

    async def route(deps: Any, req: Any, *, on_event: Any, journal: Any, before_tool: Any) -> QuestionResult:
        assert (req.question, req.answer_language, req.page_size, req.job_id) == ("ruby news", "en", 5, job_id)
        await on_event("routing", {"llm": True})  # before the claim has answered: held
        await before_tool()  # the tool waits for the claim
        async with pool.acquire() as conn:
            seen.append(str((await jobs_db.get_job(conn, job_id)).status))  # type: ignore[union-attr]
        await on_event("tool_started", {"tool": "SearchArticles"})
        return _search_result()

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    assert await runner.execute_job(rt, job_id, SUBMITTED) == "succeeded"
    assert seen == ["running"]  # claimed before the tool ran
    job, kinds = await _state(pool, job_id)
    assert job.status is JobStatus.SUCCEEDED and job.result == _search_result()
    assert kinds == ["queued", "running", "routing", "tool_started", "succeeded"]  # the claim's event first


async def test_a_message_for_a_job_that_is_not_queued_stops_its_early_routing_and_writes_nothing(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    reached: list[str] = []

    async def route(deps: Any, req: Any, *, on_event: Any, journal: Any, before_tool: Any) -> QuestionResult:
        await on_event("routing", {"llm": True})
        journal.audit(AuditEvent("llm_round", job_id=req.job_id, round=1))  # an LLM round made meanwhile
        reached.append("before tool")
        await before_tool()
        reached.append("tool")  # never: the job is not this runner's
        return _search_result()

    _route(monkeypatch, route)
    pool = await rt.pool()
    job_id = await _job(pool)
    async with pool.acquire() as conn:
        owner = await conn.fetchval("SELECT api_key_id FROM jobs WHERE id = $1", job_id)
        outcome, _ = await jobs_db.cancel_job(conn, job_id, api_key_id=owner)  # cancelled while queued
    assert outcome == "cancelled"
    assert await runner.execute_job(rt, job_id, SUBMITTED) == "skipped"
    assert reached == ["before tool"]
    job, kinds = await _state(pool, job_id)
    assert job.status is JobStatus.CANCELLED and kinds == ["queued", "cancelled"]
    async with pool.acquire() as conn:
        assert await list_audit_events(conn, job_id) == []
    assert sent == []


async def test_a_follow_up_sent_again_without_its_message_reads_its_previous_turn_from_the_row(
    rt: _runtime.Runtime, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, Any]]
) -> None:
    seen: list[Any] = []
    previous_result = _search_result().model_copy(update={"tool": "SearchArticles"})

    async def route(deps: Any, req: Any, **_: Any) -> QuestionResult:
        seen.append(req.previous)
        return previous_result

    _route(monkeypatch, route)
    pool = await rt.pool()
    first = await _job(pool, webhook=None)
    assert await runner.execute_job(rt, first) == "succeeded"
    async with pool.acquire() as conn:
        key_id = (await jobs_db.get_job(conn, first)).api_key_id  # type: ignore[union-attr]
        followup, _ = await jobs_db.create_job(
            conn, api_key_id=key_id or "", question="nur auf Deutsch", answer_language=None, page_size=None,
            webhook_url=None, idempotency_key=None, request_hash="h2", lease_s=60, previous_job_id=first,
            conversation_id=first,
        )
    assert await runner.execute_job(rt, followup.id) == "succeeded"  # no `submitted`: as the sweeper sends it
    assert seen[0] is None
    turn = seen[1]
    assert (turn.job_id, turn.question, turn.tool) == (first, "ruby news", "SearchArticles")
    assert turn.arguments == {k: v for k, v in previous_result.search.wire().items() if k != "adjustments"}  # type: ignore[union-attr]
