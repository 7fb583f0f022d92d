"""The job runner, on the router queue: `turnout.router.run_job(job_id, submitted=None)`.

Idempotent by construction (see infra/db/jobs.py): the runner claims the job (queued ->
running, attempt n), keeps its lease alive while routing, and writes the outcome only while
it still holds attempt n. A duplicate message, a job already final or cancelled, or a job
another worker is running is a no-op.

The API's message carries the question as submitted (`submitted`), so routing starts while the
claim is in flight: the decision cache and the LLM round run beside it, not after it. Nothing is
executed and nothing is written until the claim holds (`before_tool`, the journal waits for it);
a job that turns out not to be this runner's costs at most that LLM round. A message without it
(the sweeper's, a retry's) claims first and routes what the claim read. The claim runs again on a
fresh connection when its own was dead (a restarted server); when PostgreSQL stays out of reach the
message is sent back to the queue (`ClaimUnreachable` -> Celery's retry), never acknowledged and
dropped. Outcomes:
- route_question returns  -> succeeded with the result (its first page cached for pagination);
- RoutingFailed           -> failed with {code, message} and the usage spent;
- a service was down      -> back to queued, retried after a pause (bounded by job_max_attempts);
- anything else           -> failed with `internal_error` (logged; a bug is not retried forever).
A webhook delivery, when the job has a URL, is written with the final status and sent after.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
from dataclasses import dataclass
from typing import Any, Literal

import asyncpg
import kombu.exceptions
from celery import Task
from redis.exceptions import RedisError

from infra.conversation import PreviousTurn
from infra.db import job_cancel
from infra.db import jobs as jobs_db
from infra.db.journal import Narration
from infra.db.pool import DatabaseUnavailable
from infra.messages.job import JobMessage
from infra.pages import put_page
from infra.results import QuestionResult, as_language
from infra.settings import Settings, get_settings
from infra.status import JobPriority, JobStatus, Queue
from infra.transient import DEPENDENCY_DOWN
from router.errors import RoutingFailed
from router.hooks import RunHooks
from router.language import load_detector
from router.request_examples import RequestExamples
from router.service import RouteRequest, route_question
from workers import registry
from workers._db_retry import with_db_retries
from workers._runtime import Runtime
from workers.app import process_app
from workers.base import run_async, turnout_task
from workers.cancel import CancelRequested, CancelWatch, UsageSoFar
from workers.deps import router_deps
from workers.dispatch import send_run_job, send_webhook
from workers.fair_shares import after_ended
from workers.journal import Journal
from workers.lifecycle import Hook, WorkerContext

log = logging.getLogger("turnout.jobs")

# Errors that mean "a service is briefly unavailable", not "this job is broken": the one policy
# (infra/transient.py) and the broker's error, which only workers/ may name.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (*DEPENDENCY_DOWN, kombu.exceptions.OperationalError)
RETRY_PAUSE_S = 5.0  # times the attempt number: a restarting service gets a moment
DEADLINE_GRACE_S = 15.0  # route_question enforces the job deadline; this is only a backstop
# A job's progress rows wait this long for the ones after them: a job done by then writes them all
# with its final state (no statement of their own); a slower job's progress is that late at most.
JOURNAL_LINGER_S = 0.1

Outcome = Literal["skipped", "succeeded", "failed", "cancelled", "released", "lost"]


def _limit(settings: Settings) -> float:
    return settings.limits.job_deadline_s + DEADLINE_GRACE_S + 30


class LeaseLost(Exception):
    """Another runner (after a sweep) owns the job now; this one must stop without writing."""


class ClaimUnreachable(Exception):
    """PostgreSQL could not be reached for the claim, also after retrying: the job is still queued
    and its message goes back to the queue (a new one, after a pause) instead of being dropped."""


class NotClaimed(Exception):
    """The job was not this runner's to run (see `execute_job`); routing started early must stop."""


class JobSlots:
    """A worker hook (workers/lifecycle.py). A job waits for search/rag tasks. In a worker that also
    consumes those queues, jobs holding every thread would wait for tasks no thread is left to run
    (until the job deadline): the job runner leaves one thread free for the other queues (and the
    sweeper, and webhooks) and sends a job that finds no free slot back to the queue for a moment.
    Sized at the worker's start; the language detector is built then too, before the first question."""

    name = "job slots"

    def __init__(self) -> None:
        self.slots: threading.BoundedSemaphore | None = None
        self._sizing: tuple[int, int] | None = None  # (slots, threads), said at the first job

    def start(self, worker: WorkerContext) -> None:
        if Queue.ROUTER.value not in worker.queues:
            return
        if worker.concurrency is not None and worker.queues - {Queue.ROUTER.value}:
            self._sizing = (max(1, worker.concurrency - 1), worker.concurrency)
            self.slots = threading.BoundedSemaphore(self._sizing[0])
        load_detector()

    def stop(self, worker: WorkerContext) -> None:
        self.slots, self._sizing = None, None

    def try_acquire(self) -> tuple[bool, threading.BoundedSemaphore | None]:
        """(a slot is free, the semaphore to release after the job: None when jobs are not limited here)."""
        slots = self.slots
        if self._sizing is not None:  # logging is set up by now (at the worker's init it was not)
            log.info("job runner: at most %d concurrent job(s) in this worker (of %d threads)", *self._sizing)
            self._sizing = None
        if slots is None:
            return True, None
        return (True, slots) if slots.acquire(blocking=False) else (False, None)


JOB_SLOTS = JobSlots()


def _load_gate_examples(worker: WorkerContext) -> None:
    if Queue.ROUTER.value in worker.queues:  # the request gate's vote embeds every question it reads
        RequestExamples.shipped().warm_up()


# A hook of its own (workers.app.worker_hooks): the embedding model and the labelled examples loaded
# before the first question, so no question waits ~3 s (more on busy cores) for them.
GATE_EXAMPLES = Hook("request gate examples", on_start=_load_gate_examples)
SLOT_RETRY_S = (0.2, 1.0)  # jittered pause before a job without a slot is offered again


@turnout_task(registry.RUN_JOB, time_limit_s=_limit, bind=True, max_retries=None)
def run_job(self: Task, job_id: str, submitted: dict[str, Any] | None = None) -> str:
    free, slots = JOB_SLOTS.try_acquire()
    if not free:
        # Not claimed yet, so the job is still queued: re-offer the message shortly (no thread waits).
        raise self.retry(countdown=random.uniform(*SLOT_RETRY_S))
    try:
        return run_async(lambda rt: execute_job(rt, job_id, submitted), timeout_s=_limit(get_settings()))
    except ClaimUnreachable as exc:
        log.warning("job %s: %s; its message goes back to the queue in %.0fs", job_id, exc, RETRY_PAUSE_S)
        raise self.retry(countdown=RETRY_PAUSE_S) from exc
    finally:
        if slots is not None:
            slots.release()


async def execute_job(rt: Runtime, job_id: str, submitted: dict[str, Any] | None = None) -> Outcome:
    """Claim, route, record. With `submitted` (the question as the job's row holds it), routing
    starts beside the claim and waits for it before running a tool or writing a row."""
    settings = rt.settings
    pool = await rt.pool()
    # Resolved by the claim: True lets the journal write and tools run, False drops both.
    claimed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    journal = Journal(pool, after=claimed, linger_s=JOURNAL_LINGER_S)
    cancel, spent = CancelWatch(pool, job_id), UsageSoFar(settings)
    run = _Running(journal, claimed, cancel, spent)
    routing = None
    if submitted is not None:
        # A failure to start recurs after the claim, where it fails the job with its reason.
        with contextlib.suppress(Exception):
            routing = await _start_routing(rt, _submitted_request(job_id, submitted), run)
            await asyncio.sleep(0)  # routing sends its first requests (cache, rate limit) before the claim
    try:
        job = await _claim(pool, job_id, settings.job_lease_s)
    except BaseException:
        await _abandon(routing, journal, claimed)
        raise
    if job is None:
        await _abandon(routing, journal, claimed)
        log.info("job %s: not queued (final, cancelled or running elsewhere); nothing to do", job_id)
        return "skipped"
    claimed.set_result(True)
    attempt = job.attempts
    try:
        if routing is None:
            routing = await _start_routing(rt, await _job_request(pool, job), run)
        result, narration = await _route_and_record(rt, job, attempt, run, routing)
    except CancelRequested:
        return await _finish_cancelled(rt, job_id, attempt, spent)
    except LeaseLost:
        log.warning("job %s: lease lost during attempt %d; another runner owns it", job_id, attempt)
        return "lost"
    except RoutingFailed as exc:
        return await _finish_failed(rt, job_id, attempt, exc.code, exc.message, exc.usage.wire(), exc.details)
    except TimeoutError:
        message = f"the job ran past its {settings.limits.job_deadline_s:.0f}s deadline"
        return await _finish_failed(rt, job_id, attempt, "limit_deadline", message, {})
    except TRANSIENT_ERRORS as exc:
        return await _release(rt, job_id, attempt, exc, spent, job.priority)
    except Exception:
        log.exception("job %s: unexpected error in attempt %d", job_id, attempt)
        return await _finish_failed(
            rt, job_id, attempt, "internal_error", "the job failed on an internal error (logged); submit it again",
            spent.usage.wire(),
        )
    finished = await _finish(
        pool, job_id, attempt=attempt, status=JobStatus.SUCCEEDED, result=result, error=None,
        usage=result.usage.wire(),
        event_data={"resultType": result.result_type.value, "status": result.status.value},
        narration=narration,
    )
    return await _after_finish(rt, job_id, finished, "succeeded")


async def _finish(pool: asyncpg.Pool, job_id: str, **final: Any) -> jobs_db.Finished | None:
    """`finish_job`, again on a fresh connection when its own was dead. Safe to repeat: the write is
    fenced by the attempt (a repeat after a commit whose reply was lost finds the job final: None)."""

    async def finish() -> jobs_db.Finished | None:
        async with pool.acquire() as conn:
            return await jobs_db.finish_job(conn, job_id, **final)

    return await with_db_retries(finish, log=log, pool=pool)


async def _claim(pool: asyncpg.Pool, job_id: str, lease_s: float) -> jobs_db.JobRow | None:
    """The claim, again on a fresh connection when its own was dead (a restarted server leaves
    every pooled connection dead); ClaimUnreachable when PostgreSQL stays out of reach."""

    async def claim() -> jobs_db.JobRow | None:
        async with pool.acquire() as conn:
            return await jobs_db.claim_job(conn, job_id, lease_s=lease_s)

    try:
        return await with_db_retries(claim, log=log, pool=pool)
    except DatabaseUnavailable as exc:
        raise ClaimUnreachable(str(exc)) from exc


def _submitted_request(job_id: str, submitted: dict[str, Any]) -> RouteRequest:
    """The message's question (a `JobMessage`; one from before a deploy parses too)."""
    message = JobMessage.model_validate(submitted)
    return RouteRequest(
        question=message.question, answer_language=message.answer_language, page_size=message.page_size,
        job_id=job_id, tool_call=message.tool_call.wire() if message.tool_call is not None else None,
        client_language=message.language, previous=message.previous,
    )


async def _job_request(pool: asyncpg.Pool, job: jobs_db.JobRow) -> RouteRequest:
    previous = None
    if job.previous_job_id is not None:  # a follow-up sent again without its message: its turn from the row
        async with pool.acquire() as conn:
            row = await jobs_db.get_job(conn, job.previous_job_id)
        previous = PreviousTurn.from_job(row) if row is not None else None
    return RouteRequest(
        question=job.question, answer_language=as_language(job.answer_language, name="answer_language"),
        page_size=job.page_size, job_id=job.id, tool_call=job.tool_call, client_language=as_language(job.language),
        previous=previous,
    )


@dataclass(frozen=True)
class _Running:
    """One run's companions: its journal, its claim, its cancel watch and the usage it reported."""

    journal: Journal
    claimed: asyncio.Future[bool]
    cancel: CancelWatch
    spent: UsageSoFar


async def _start_routing(rt: Runtime, request: RouteRequest, run: _Running) -> asyncio.Future[QuestionResult]:
    """route_question as a task, bounded by the job's deadline; it runs no tool before the claim,
    nor once a cancel was seen."""
    deps = await router_deps(rt)
    job_id = request.job_id or ""
    journal, claimed = run.journal, run.claimed

    async def on_event(kind: str, data: dict[str, Any]) -> None:
        # Progress is informative: a row that cannot be written is logged, never fails the job.
        run.spent.observe(kind, data)
        journal.event(job_id, kind, _json_safe(data))

    async def before_tool() -> None:
        if not await asyncio.shield(claimed):
            raise NotClaimed(job_id)
        run.cancel.raise_if_requested()

    async def bounded() -> QuestionResult:
        async with asyncio.timeout(rt.settings.limits.job_deadline_s + DEADLINE_GRACE_S):
            return await route_question(deps, request, RunHooks(on_event=on_event, narrator=journal, before_tool=before_tool))

    return asyncio.ensure_future(bounded())


async def _abandon(
    routing: asyncio.Future[QuestionResult] | None, journal: Journal, claimed: asyncio.Future[bool]
) -> None:
    """The claim failed or found the job not queued: stop routing started early, write nothing."""
    if not claimed.done():
        claimed.set_result(False)
    if routing is not None:
        routing.cancel()
        await asyncio.gather(routing, return_exceptions=True)
    await journal.flush()  # drops the rows (nothing is written without the claim)


async def _route_and_record(
    rt: Runtime, job: jobs_db.JobRow, attempt: int, run: _Running, routing: asyncio.Future[QuestionResult]
) -> tuple[QuestionResult, Narration]:
    """Route, then wait for the journal: its rows and cache writes must precede the job's final
    state. The rows not yet written come back, for the final statement to write. An audit row that
    could not be written fails the job like the step that wrote it would have; a cache write that
    failed is only logged."""
    journal = run.journal
    try:
        result = await _hold_lease_while(rt, job.id, attempt, routing, run.cancel)
    except BaseException:
        try:
            await journal.flush()
        except Exception as exc:  # the routing error is the one to report
            log.warning("job %s: audit rows not written: %s", job.id, exc)
        raise
    # The first page goes to the cache while the last rows are written; both before the final
    # status, so a reader told "succeeded" finds page 1 cached.
    journal.alongside(_cache_first_page(rt, result), label="first page")
    return result, await journal.take_rest()


async def _hold_lease_while(
    rt: Runtime, job_id: str, attempt: int, routing: asyncio.Future[QuestionResult], cancel: CancelWatch
) -> QuestionResult:
    """Wait for `routing` with the lease renewed meanwhile; LeaseLost when renewal is refused,
    CancelRequested (the routing stopped where it was) when a client cancelled the job."""
    heartbeat = asyncio.ensure_future(_keep_lease(rt, job_id, attempt))
    watch = asyncio.ensure_future(cancel.watch())
    try:
        either: set[asyncio.Future[Any]] = {routing, heartbeat, watch}
        done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if routing in done:
            return routing.result()
        routing.cancel()
        await asyncio.gather(routing, return_exceptions=True)
        if watch in done:
            raise CancelRequested(job_id)
        heartbeat.result()  # raises LeaseLost
        raise LeaseLost(job_id)
    finally:
        for task in (routing, heartbeat, watch):
            if not task.done():
                task.cancel()
        await asyncio.gather(routing, heartbeat, watch, return_exceptions=True)


async def _keep_lease(rt: Runtime, job_id: str, attempt: int) -> None:
    lease_s = rt.settings.job_lease_s
    pool = await rt.pool()
    while True:
        await asyncio.sleep(lease_s / 3)
        try:
            async with pool.acquire() as conn:
                renewed = await jobs_db.renew_lease(conn, job_id, attempt=attempt, lease_s=lease_s)
        except TRANSIENT_ERRORS as exc:  # try again next beat; the lease has slack for two misses
            log.warning("job %s: lease renewal failed: %s", job_id, exc)
            continue
        if not renewed:
            raise LeaseLost(job_id)


async def _cache_first_page(rt: Runtime, result: QuestionResult) -> None:
    if result.search is None or result.articles is None:
        return
    try:
        await put_page(await rt.redis(), rt.settings, result.search, result.articles)
    except RedisError as exc:  # the page is also in the stored result; the cache is an optimisation
        log.warning("could not cache the first page: %s", exc)


async def _finish_failed(
    rt: Runtime, job_id: str, attempt: int, code: str, message: str, usage: dict[str, Any],
    details: dict[str, Any] | None = None,
) -> Outcome:
    pool = await rt.pool()
    # A failure after a cancel was requested is the cancel's doing (a streamed answer stopped by it
    # fails its tool before the watch's next poll): the job ends cancelled, as its client asked.
    cancelled = await _cancel_if_requested(pool, job_id, attempt, usage)
    if cancelled is not None:
        return await _after_finish(rt, job_id, cancelled, "cancelled")
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:  # e.g. budget_exceeded: the period, its limit and when it resets
        error["details"] = details
    finished = await _finish(pool, job_id, attempt=attempt, status=JobStatus.FAILED, result=None, error=error,
                             usage=usage)
    return await _after_finish(rt, job_id, finished, "failed")


async def _finish_cancelled(rt: Runtime, job_id: str, attempt: int, spent: UsageSoFar) -> Outcome:
    """The job ends `cancelled` with what it had used (its journal's rows were flushed before)."""
    finished = await _cancel_if_requested(await rt.pool(), job_id, attempt, spent.usage.wire())
    return await _after_finish(rt, job_id, finished, "cancelled")


async def _cancel_if_requested(
    pool: asyncpg.Pool, job_id: str, attempt: int, usage: dict[str, Any]
) -> jobs_db.Finished | None:
    """running -> cancelled when a cancel was requested (None otherwise, or when the job was lost)."""

    async def cancel() -> jobs_db.Finished | None:
        async with pool.acquire() as conn:
            return await job_cancel.cancel_running(conn, job_id, attempt=attempt, usage=usage)

    return await with_db_retries(cancel, log=log, pool=pool)


async def _release(
    rt: Runtime, job_id: str, attempt: int, exc: BaseException, spent: UsageSoFar, job_priority: JobPriority
) -> Outcome:
    settings = rt.settings
    reason = f"{type(exc).__name__}: {exc}"
    if attempt >= settings.job_max_attempts:
        log.error("job %s: service unavailable on attempt %d; giving up: %s", job_id, attempt, reason)
        message = f"a required service stayed unavailable over {attempt} attempts ({reason})"
        return await _finish_failed(rt, job_id, attempt, "service_unavailable", message, {})
    pause = RETRY_PAUSE_S * attempt
    log.warning("job %s: service unavailable on attempt %d, retrying in %.0fs: %s", job_id, attempt, pause, reason)
    pool = await rt.pool()
    async with pool.acquire() as conn:
        # The lease outlasts the delayed message: if that message is lost, the sweeper sends another.
        released = await jobs_db.release_job(
            conn, job_id, attempt=attempt, retry_in_s=pause + settings.job_lease_s, reason=reason, message_in_s=pause
        )
    if released:
        send_run_job(process_app(), settings, job_id, countdown=pause, priority=job_priority)
        return "released"
    # Not requeued: another runner owns it, or a cancel was requested (then it ends here, not retried).
    return await _finish_cancelled(rt, job_id, attempt, spent)


async def _after_finish(rt: Runtime, job_id: str, finished: jobs_db.Finished | None, outcome: Outcome) -> Outcome:
    """The webhook is sent, and the job's slot goes to its key's next parked job (fair shares)."""
    if finished is None:
        log.warning("job %s: finished, but another runner owns it now; result discarded", job_id)
        return "lost"
    if finished.delivery_id is not None:
        send_webhook(process_app(), rt.settings, finished.delivery_id)
    await after_ended(await rt.pool(), process_app(), rt.settings, [finished.job])
    return outcome


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    safe: dict[str, Any] = json.loads(json.dumps(data, default=str))
    return safe
