"""Jobs: list them, retry one, poll one, cancel it, stream its progress, page through its results (no LLM)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator
from typing import Annotated

import asyncpg
import redis.asyncio as aioredis
from fastapi import APIRouter, Header, Path, Query, Request, Response
from redis.exceptions import RedisError
from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from api.budget_gate import refuse_if_spent
from api.deps import CurrentKey, JobEvents, Pool, Redis, SettingsDep, get_producer, own_job
from api.errors import ApiError
from api.job_query import JobListQuery, JobPage, list_page
from api.long_poll import WAIT_MAX_S, watch_until_final
from api.routes.questions import REPLAY_HEADER
from api.schemas import PageDocument, error_responses
from api.visibility import visible_job, visible_page, visible_result
from infra import counters
from infra.db import job_cancel
from infra.db import jobs as jobs_db
from infra.db.job_events import stream_read
from infra.db.job_retries import retry_job
from infra.job_document import JobDocument
from infra.pages import page_filters
from infra.settings import Settings
from infra.status import JobStatus
from workers.dispatch import send_run_job, send_webhook
from workers.fair_shares import after_ended

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

JobId = Annotated[str, Path(min_length=1, max_length=64, description="The id returned by POST /v1/questions")]
SSE_PING_S = 15


@router.get("", response_model=JobPage, summary="List jobs", responses=error_responses(401, 403, 422))
async def list_jobs(
    query: Annotated[JobListQuery, Query()], key: CurrentKey, pool: Pool, settings: SettingsDep
) -> JobPage:
    """The caller's jobs, newest first, `limit` at a time; `nextCursor` fetches the next page
    (keyset: no duplicates or gaps while jobs are added). Filters combine (AND); `status` may be
    repeated. Each item is the job document without its result, with `resultSummary` instead.
    An admin key may pass `apiKeyId` (another key, or `*` for every key)."""
    return await list_page(pool, key, query, base_url=settings.public_base_url)


@router.post(
    "/{job_id}/retry",
    status_code=201,
    response_model=JobDocument,
    summary="Retry a finished job",
    responses={200: {"model": JobDocument, "description": "Already retried (without `force`): that retry"},
               **error_responses(401, 404, 409, 422, 429)},
)
async def retry(
    job_id: JobId,
    request: Request,
    response: Response,
    key: CurrentKey,
    pool: Pool,
    settings: SettingsDep,
    force: Annotated[bool, Query(description="Make another retry even if this job was retried before")] = False,
) -> JobDocument:
    """A new job with the same question and options (`retryOf` names the original, whose `retries`
    lists it); the original is otherwise unchanged. Idempotent per original: retrying a job again
    answers its first retry (200, `Idempotent-Replayed: true`) unless `force=true`. A queued or
    running job cannot be retried yet (409). A retry is a submission: a key whose budget is spent
    gets `429 budget_exceeded`."""
    await refuse_if_spent(pool, settings, key.id, key.budgets)
    async with pool.acquire() as conn:
        outcome = await retry_job(conn, job_id, api_key_id=key.id, force=force, lease_s=settings.job_lease_s,
                                  in_flight_cap=settings.jobs_per_key_in_flight)
    if outcome.outcome == "not_found":
        raise ApiError(404, "not_found", f"no job {job_id} for this key")
    if outcome.outcome == "not_final" or outcome.job is None:
        status = outcome.original.status.value if outcome.original else "unknown"
        raise ApiError(409, "job_not_retryable", f"only a finished job can be retried; this one is {status}",
                       {"status": status})
    document = JobDocument.from_row(outcome.job, base_url=settings.public_base_url)
    response.headers["Location"] = document.links.self
    if outcome.outcome == "existing":
        response.status_code = 200
        response.headers[REPLAY_HEADER] = "true"
    elif not outcome.job.parked:  # after the row is committed; if this send fails the sweeper sends it
        await asyncio.to_thread(functools.partial(send_run_job, get_producer(request), settings, outcome.job.id,
                                                  priority=outcome.job.priority))
    return document


@router.get("/{job_id}", response_model=JobDocument, summary="Get a job", responses=error_responses(401, 404, 422))
async def get_job(
    job_id: JobId,
    key: CurrentKey,
    pool: Pool,
    redis: Redis,
    settings: SettingsDep,
    job_events: JobEvents,
    wait_s: Annotated[
        float,
        Query(
            alias="waitS", ge=0, le=WAIT_MAX_S,
            description=f"Long poll: answer as soon as the job ends, or after this many seconds (at most "
            f"{WAIT_MAX_S:g}) with its status then. 0 (the default) answers at once.",
            examples=[20],
        ),
    ] = 0,
) -> JobDocument:
    """Status (`queued`, `running`, `succeeded`, `failed`, `cancelled`), timestamps, usage, and the
    result (succeeded) or the error (failed). With `waitS`, the answer waits for the job to end
    (woken by the job's final event, not by polling)."""
    if wait_s <= 0:
        job = await own_job(pool, key, job_id)
    else:
        job = await watch_until_final(job_events, job_id, lambda: own_job(pool, key, job_id), wait_s=wait_s)
    return JobDocument.from_row(await visible_job(pool, redis, settings, job), base_url=settings.public_base_url)


@router.delete(
    "/{job_id}",
    response_model=JobDocument,
    summary="Cancel a job",
    status_code=200,
    responses={202: {"model": JobDocument, "description": "A running job: the cancel is recorded "
                     "(`cancelRequested: true`); the job ends `cancelled` at its next safe point"},
               **error_responses(401, 404, 409)},
)
async def cancel_job(
    job_id: JobId, request: Request, response: Response, key: CurrentKey, pool: Pool, settings: SettingsDep
) -> JobDocument:
    """A queued job is cancelled at once (200). A running job answers 202 with `cancelRequested:
    true`: its runner stops before its next LLM round or tool, aborts an LLM call in flight, stops a
    streamed answer between chunks, and ends the job `cancelled` with the usage spent so far (one
    final event, one `job.cancelled` webhook). A finished job answers 409."""
    async with pool.acquire() as conn:
        outcome, finished, running = await job_cancel.request_cancel(conn, job_id, api_key_id=key.id)
    if outcome == "not_found":
        raise ApiError(404, "not_found", f"no job {job_id} for this key")
    if running is not None:
        response.status_code = 202
        return JobDocument.from_row(running, base_url=settings.public_base_url)
    if finished is None:
        raise ApiError(409, "job_not_cancellable", f"the job has already ended ({outcome}); it cannot be cancelled",
                       {"status": str(outcome)})
    if finished.delivery_id is not None:
        await asyncio.to_thread(send_webhook, get_producer(request), settings, finished.delivery_id)
    await after_ended(pool, get_producer(request), settings, [finished.job])  # its slot to the key's next job
    return JobDocument.from_row(finished.job, base_url=settings.public_base_url)


@router.get(
    "/{job_id}/events",
    summary="Stream a job's progress (server-sent events)",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`text/event-stream`: one event per step (`queued`, `running`, `routing`, "
            "`llm_round`, `tool_started`, `tool_finished`, `rate_limited`, `fallback`, `requeued`; while a RAG "
            "answer is written, `answer_delta` {text} and `answer_reset`: the deltas since the last reset "
            "concatenate to the final answer), "
            "ending after the final status (`succeeded`, `failed`, `cancelled`). Each event's `id` may be "
            "sent back as `Last-Event-ID` to resume; `data` is JSON {jobId, kind, data, at}.",
            "content": {"text/event-stream": {"example": 'id: 12\nevent: running\ndata: {"jobId": "job_x", '
                                              '"kind": "running", "data": {"attempt": 1}, "at": "..."}\n\n'}},
        },
        **error_responses(401, 404),
    },
)
async def stream_events(
    job_id: JobId,
    key: CurrentKey,
    pool: Pool,
    job_events: JobEvents,
    last_event_id: Annotated[int | None, Header(alias="Last-Event-ID", ge=0, le=2**63 - 1)] = None,
) -> EventSourceResponse:
    await own_job(pool, key, job_id)

    async def events() -> AsyncIterator[ServerSentEvent]:
        after = last_event_id or 0
        with job_events.watch(job_id) as watch:  # before the first read: no event can slip in between
            while True:
                async with pool.acquire() as conn:  # one snapshot: a job seen final is seen with its last events
                    batch, status = await stream_read(conn, job_id, after)
                for event in batch:
                    after = event.id
                    payload = {"jobId": job_id, "kind": event.kind, "data": event.data,
                               "at": event.created_at.isoformat()}
                    yield ServerSentEvent(data=json.dumps(payload), event=event.kind, id=str(event.id))
                    if event.is_final:
                        return
                if not batch and status is not None and status.is_final:
                    return  # resumed after the final event: nothing more will come
                if not batch:  # woken by the next event's notification (or the periodic re-check)
                    await watch.wait(job_events.recheck_s)
                    watch.reset()

    return EventSourceResponse(events(), ping=SSE_PING_S)


@router.get(
    "/{job_id}/pages/{n}",
    response_model=PageDocument,
    summary="Page n of a search or combined result (no LLM call)",
    responses=error_responses(401, 404, 409, 422),
)
async def get_page(
    job_id: JobId,
    n: Annotated[int, Path(ge=1, le=100_000, description="Page number, 1-based")],
    key: CurrentKey,
    pool: Pool,
    redis: Redis,
    settings: SettingsDep,
) -> PageDocument:
    """Served from the page cache, or on a miss by the deterministic search with the job's stored
    normalized filters; never by the LLM. The rest of the result (a combined answer and its
    sources) is returned unchanged. Pages run from 1 to `totalPages` of the job's result (page 1
    when it found nothing); any other page is a 404 `page_out_of_range`."""
    return await job_page(pool, redis, settings, await own_job(pool, key, job_id), n)


async def job_page(pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings, job: jobs_db.JobRow, n: int) -> PageDocument:
    """Page n of a job's result (also the MCP page resource); ApiError when it has none."""
    job_id = job.id
    if job.status is not JobStatus.SUCCEEDED or job.result is None:
        raise ApiError(409, "job_not_succeeded", f"the job is {job.status.value}; pages exist once it has succeeded",
                       {"status": job.status.value})
    result = await visible_result(pool, redis, settings, job.result)
    if result.search is None or result.articles is None:
        raise ApiError(409, "not_paginated", f"a {result.result_type.value} has no pages; only search and "
                       "combined results do", {"resultType": result.result_type.value})
    last = max(result.articles.total_pages, 1)
    if n > last:
        raise ApiError(404, "page_out_of_range", f"page {n} does not exist; this result has pages 1..{last}",
                       {"totalPages": result.articles.total_pages})
    articles, source, cache_reachable = await visible_page(pool, redis, settings, result.search, n)
    if cache_reachable:  # else Redis just timed out on this request: the metric would wait once more
        with contextlib.suppress(RedisError, OSError):  # a metric; the page is served regardless
            await counters.incr(redis, settings, counters.PAGE_CACHE, outcome="hit" if source == "cache" else "miss")
    search = page_filters(result.search, n).model_copy(update={"adjustments": result.search.adjustments})
    page_result = result.model_copy(update={"articles": articles, "search": search})
    return PageDocument(job_id=job_id, page=n, source=source, result=page_result)
