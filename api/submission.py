"""One submission path for `POST /v1/questions` and MCP tool calls (api/mcp/server.py).

In this order, once: the turn a follow-up continues, the key's spent budget (429), its submission limit, the job's row
(committed before anything is sent: an accepted job is never lost; parked when the key's jobs in
flight are at the cap), the watch for its end, its `run_job` message (`JobMessage`, unless parked), the wait (`Prefer: wait=N`, MCP's bound) and the result as it is
visible now. A refusal is an `ApiError`: the route answers it as is, MCP as the call's `ERROR: …`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import dataclass

from api.budget_gate import refuse_if_spent
from api.conversation import Continuation, continuation
from api.long_poll import until_final
from api.state import AppState
from api.visibility import visible_job
from infra.budgets import BudgetLimits
from infra.db import jobs as jobs_db
from infra.messages.job import JobMessage, ToolCall
from infra.status import JobPriority
from workers.dispatch import send_run_job


@dataclass(frozen=True)
class NewJob:
    """A job as its submitter asks for it: the row's columns, and the turn it continues."""

    question: str
    answer_language: str | None
    request_hash: str
    page_size: int | None = None
    language: str | None = None  # the articles' language by default (the client's)
    webhook_url: str | None = None
    idempotency_key: str | None = None
    source: str = "http"  # "http" | "mcp"
    client: str | None = None  # the MCP client's "name/version"
    tool_call: ToolCall | None = None  # an MCP host chose the call
    previous_job_id: str | None = None
    conversation_id: str | None = None
    priority: JobPriority = JobPriority.INTERACTIVE  # MCP's calls: a host waits for them


@dataclass(frozen=True)
class Submitted:
    """The job, as the wait left it; `created` False: the idempotency key's earlier job (a
    concurrent request with the same key won the insert), nothing was sent for it."""

    job: jobs_db.JobRow
    created: bool


async def submit(
    state: AppState, key_id: str, new: NewJob, *, wait_s: float | None, budgets: BudgetLimits | None = None
) -> Submitted:
    """Submit `new` for the key; with `wait_s`, answer when the job ends or after `wait_s` seconds.
    `budgets`: the key's own budgets when the caller knows them (the key cache), else read."""
    follows = await continuation(state.pool, key_id, previous_job_id=new.previous_job_id,
                                 conversation_id=new.conversation_id)
    await refuse_if_spent(state.pool, state.settings, key_id, budgets)  # before the limit: a refusal costs none
    await state.limiter.hit(key_id)
    job, created = await _create(state, key_id, new, follows)
    if not created:
        return Submitted(job, created=False)
    message = JobMessage.for_job(job, follows.turn if follows is not None else None)
    return Submitted(await _send_and_wait(state, key_id, job, message, wait_s), created=True)


async def _create(
    state: AppState, key_id: str, new: NewJob, follows: Continuation | None
) -> tuple[jobs_db.JobRow, bool]:
    async with state.pool.acquire() as conn:
        return await jobs_db.create_job(
            conn, api_key_id=key_id, question=new.question, answer_language=new.answer_language,
            page_size=new.page_size, webhook_url=new.webhook_url, idempotency_key=new.idempotency_key,
            request_hash=new.request_hash, lease_s=state.settings.job_lease_s, source=new.source,
            client=new.client, tool_call=new.tool_call.wire() if new.tool_call is not None else None, language=new.language,
            previous_job_id=follows.previous_job_id if follows is not None else None,
            conversation_id=follows.conversation_id if follows is not None else None,
            priority=new.priority, in_flight_cap=state.settings.jobs_per_key_in_flight,
        )


async def _send_and_wait(
    state: AppState, key_id: str, job: jobs_db.JobRow, message: JobMessage, wait_s: float | None
) -> jobs_db.JobRow:
    async def read() -> jobs_db.JobRow:
        async with state.pool.acquire() as conn:
            return await jobs_db.get_job(conn, job.id, api_key_id=key_id) or job

    # Watched before the message is sent, so the job's end cannot come before the watch.
    with state.job_events.watch(job.id, final_only=True) if wait_s else contextlib.nullcontext() as watch:
        # After the row is committed; if this send fails the sweeper sends it once the lease passes.
        # A parked job (its key's jobs in flight are at the cap) is sent when one of them ends.
        if not job.parked:
            await asyncio.to_thread(functools.partial(
                send_run_job, state.producer, state.settings, job.id, submitted=message, priority=job.priority))
        if watch is None:
            return job
        job = await until_final(watch, read, state.job_events, wait_s=wait_s or 0, job=job)
    return await visible_job(state.pool, state.redis, state.settings, job)
