"""Jobs: the source of truth for job state (SPEC §9).

Every transition is a conditional UPDATE, so a job executed twice (a redelivered message, a
sweeper re-enqueue racing a slow worker) still ends with one result and one webhook delivery:
- `claim_job`: queued -> running, bumping `attempts`; the attempt number is the runner's fence.
- `finish_job` / `release_job`: only the runner holding the current attempt may write.
- `infra.db.job_sweeps`: a job whose lease ran out goes back to queued (or fails after too many
  tries); a queued job whose message should have been claimed long ago is sent again.
A final transition writes its event and the webhook delivery in the same statement (`finalizing_sql`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import asyncpg

from infra.db.job_events import add_event
from infra.db.journal import Narration
from infra.results import QuestionResult
from infra.status import JobPriority, JobStatus

LEASE_SQL = "now() + make_interval(secs => $2)"  # the lease from now; its seconds are parameter $2


@dataclass(frozen=True)
class JobRow:
    id: str
    api_key_id: str | None
    status: JobStatus
    question: str
    answer_language: str | None
    page_size: int | None
    webhook_url: str | None
    idempotency_key: str | None
    request_hash: str | None
    result: QuestionResult | None  # parsed when the row is read: one parse per read
    error: dict[str, Any] | None
    usage: dict[str, Any]
    attempts: int
    lease_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    source: str = "http"  # "http" | "mcp" (migration 0006)
    client: str | None = None  # the MCP client's "name/version"
    tool_call: dict[str, Any] | None = None  # {tool, arguments}: the caller chose the tool (MCP)
    language: str | None = None  # the client's material language (migration 0007)
    dispatched_at: datetime | None = None  # when its run_job message was last due (migration 0009)
    previous_job_id: str | None = None  # the job a follow-up continues (migration 0010)
    conversation_id: str | None = None  # the chain's first job id (NULL: asked alone)
    feedback_rating: str | None = None  # "up" | "down": the owner's rating
    feedback_comment: str | None = None
    feedback_at: datetime | None = None
    retry_of: str | None = None  # the job this one retries (migration 0011)
    retries: tuple[str, ...] = ()  # this job's retries, oldest first
    cancel_requested_at: datetime | None = None  # a cancel asked for while it ran (migration 0012)
    priority: JobPriority = JobPriority.INTERACTIVE  # migration 0013

    @property
    def parked(self) -> bool:
        """Queued behind its key's jobs in flight: no message sent yet (infra/db/fair_shares.py)."""
        return self.status is JobStatus.QUEUED and self.dispatched_at is None


def job_row(row: asyncpg.Record | Mapping[str, Any]) -> JobRow:
    """A `jobs` row (any statement's `SELECT *`) as a JobRow; for the other jobs-table modules."""
    return _job_from(dict(row))


_ROW_FIELDS = frozenset(f.name for f in fields(JobRow))


def _job_from(values: dict[str, Any]) -> JobRow:
    values = {k: v for k, v in values.items() if k in _ROW_FIELDS}  # not the search vector, the retry flag
    values["status"] = JobStatus(values["status"])
    if "priority" in values:
        values["priority"] = JobPriority(values["priority"])
    if isinstance(values.get("tool_call"), str):  # stored as JSON text (migration 0006)
        values["tool_call"] = json.loads(values["tool_call"])
    values["retries"] = tuple(values.get("retries") or ())
    if isinstance(values.get("result"), dict):  # not yet parsed: finish_job passes the model it wrote
        values["result"] = QuestionResult.model_validate(values["result"])
    return JobRow(**values)


@dataclass(frozen=True)
class Finished:
    job: JobRow
    delivery_id: int | None  # the webhook delivery to send, when the job has a webhook URL


def new_job_id() -> str:
    """Unguessable: 128 random bits, URL-safe."""
    return "job_" + secrets.token_urlsafe(16)


# One statement (job and its `queued` event together, atomically): one round trip, one commit.
# The cap is read under the key's lock (`jobs_in_flight`, migration 0013), CASE so it is
# not even taken without a cap.
_INSERT_JOB = """
    WITH slot AS (
        SELECT CASE WHEN $17::int = 0 THEN true ELSE jobs_in_flight($2) < $17 END AS free
    ), job AS (
        INSERT INTO jobs (id, api_key_id, question, answer_language, page_size, webhook_url,
                          idempotency_key, request_hash, lease_expires_at, source, client, tool_call,
                          language, previous_job_id, conversation_id, priority, dispatched_at)
        SELECT $1, $2, $3, $4, $5, $6, $7, $8,
               CASE WHEN free THEN now() + make_interval(secs => $9) END, $10, $11, $12, $13,
               $14, $15, $16, CASE WHEN free THEN now() END
        FROM slot
        ON CONFLICT (api_key_id, idempotency_key) DO NOTHING
        RETURNING *
    ), queued AS (
        INSERT INTO job_events (job_id, kind, data)
        SELECT id, 'queued', CASE WHEN dispatched_at IS NULL THEN '{"parked": true}'::jsonb ELSE '{}'::jsonb END
        FROM job
    )
    SELECT * FROM job
"""


async def create_job(
    conn: asyncpg.Connection,
    *,
    api_key_id: str,
    question: str,
    answer_language: str | None,
    page_size: int | None,
    webhook_url: str | None,
    idempotency_key: str | None,
    request_hash: str,
    lease_s: float,
    source: str = "http",
    client: str | None = None,
    tool_call: dict[str, Any] | None = None,
    language: str | None = None,
    previous_job_id: str | None = None,
    conversation_id: str | None = None,
    priority: JobPriority = JobPriority.INTERACTIVE,
    in_flight_cap: int = 0,
) -> tuple[JobRow, bool]:
    """Insert a queued job (and its `queued` event); with an idempotency key already used, return
    that job instead. Returns (job, created). The lease is how long the job may wait for a
    worker before the sweeper sends its message again. With `in_flight_cap` (0: none) a key that
    has that many jobs in flight gets the job parked (`job.parked`: send no message; the end of one
    of its jobs dispatches it, infra/db/fair_shares.py)."""
    row = await conn.fetchrow(
        _INSERT_JOB,
        new_job_id(), api_key_id, question, answer_language, page_size, webhook_url,
        idempotency_key, request_hash, lease_s, source, client,
        json.dumps(tool_call) if tool_call is not None else None, language, previous_job_id, conversation_id,
        priority.value, in_flight_cap,
    )
    if row is not None:
        return job_row(row), True
    assert idempotency_key is not None  # only a key conflict skips the insert
    existing = await find_by_idempotency_key(conn, api_key_id, idempotency_key)
    if existing is None:  # pragma: no cover - the conflicting row cannot vanish (no deletes)
        raise RuntimeError("idempotency conflict without a stored job")
    return existing, False


async def find_by_idempotency_key(conn: asyncpg.Connection, api_key_id: str, idempotency_key: str) -> JobRow | None:
    row = await conn.fetchrow(
        "SELECT * FROM jobs WHERE api_key_id = $1 AND idempotency_key = $2", api_key_id, idempotency_key
    )
    return job_row(row) if row is not None else None


async def get_job(conn: asyncpg.Connection, job_id: str, *, api_key_id: str | None = None) -> JobRow | None:
    """The job; with `api_key_id`, only if that key owns it (another key's job does not exist for it)."""
    row = await conn.fetchrow(
        "SELECT * FROM jobs WHERE id = $1 AND ($2::text IS NULL OR api_key_id = $2)", job_id, api_key_id
    )
    return job_row(row) if row is not None else None


async def claim_job(conn: asyncpg.Connection, job_id: str, *, lease_s: float) -> JobRow | None:
    """queued -> running with a lease; None when the job is not queued (running elsewhere, final, unknown)
    or parked (its key's turn has not come: a message for it is no licence to run it)."""
    # One statement (the claim and its `running` event together, atomically): one round trip, one
    # commit, and that commit does not wait for the WAL flush. A claim lost in a database crash
    # leaves the job queued: its runner's next write fails (its connection died with the server)
    # and the sweeper sends the job again, as after any crash mid-job; the attempt fence still
    # lets only one runner finish it. The final commit is synchronous and flushes the claim too.
    row = await conn.fetchrow(
        f"""
        WITH claimed AS (
            UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_expires_at = {LEASE_SQL},
                            started_at = coalesce(started_at, now()), updated_at = now()
            WHERE id = $1 AND status = 'queued' AND dispatched_at IS NOT NULL
            RETURNING *
        ), running AS (
            INSERT INTO job_events (job_id, kind, data)
            SELECT id, 'running', jsonb_build_object('attempt', attempts) FROM claimed
        )
        SELECT claimed.* FROM claimed, (SELECT set_config('synchronous_commit', 'off', true)) AS local_setting
        """,  # noqa: S608 (constant fragment)
        job_id, lease_s,
    )
    return job_row(row) if row is not None else None


async def renew_lease(conn: asyncpg.Connection, job_id: str, *, attempt: int, lease_s: float) -> bool:
    """Extend a running job's lease; False when this runner no longer owns the job."""
    result: str = await conn.execute(
        f"UPDATE jobs SET lease_expires_at = {LEASE_SQL}, updated_at = now() "  # noqa: S608 (constant fragment)
        "WHERE id = $1 AND status = 'running' AND attempts = $3",
        job_id, lease_s, attempt,
    )
    return result.endswith(" 1")


# What finish_job reads back: everything but the result it has just written (up to a page of
# articles: no need to have PostgreSQL print it and the runner parse it again).
_FINISHED_COLUMNS = ", ".join(f"done.{f.name}" for f in fields(JobRow) if f.name != "result")


def finalizing_sql(update: str, event_data: str, narration_from: int | None = None, *, columns: str = "done.*") -> str:
    """One statement that moves a job to a final status (`update`: an UPDATE ... RETURNING *), writes
    its final event (data from the parameter `event_data`, e.g. "$7") and, when the job has a URL,
    its webhook delivery: one round trip, one commit. ON CONFLICT keeps one delivery per job.
    With `narration_from` (the first of a `Narration`'s parameters), the job's last journal rows
    are written too, its events before the final one (they are written even by a runner that lost
    the job: they narrate what it did). `columns`: what it returns of the job."""
    final_event = f"SELECT id, status, {event_data}::jsonb FROM done"  # noqa: S608 (constant fragments)
    narration = ""
    if narration_from is not None:
        final_event = f"""
            SELECT job_id, kind, data FROM (
                {Narration.event_rows(narration_from)}
                UNION ALL SELECT id, status, {event_data}::jsonb, NULL::bigint FROM done
            ) AS rows ORDER BY n NULLS LAST"""  # noqa: S608 (constants; the final event last: the highest id)
        narration = f", narration AS ({Narration.insert_audits(narration_from)})"
    return f"""
        WITH done AS ({update}), final_event AS (
            INSERT INTO job_events (job_id, kind, data) {final_event}
        ){narration}, delivery AS (
            INSERT INTO webhook_deliveries (job_id, url) SELECT id, webhook_url FROM done WHERE webhook_url IS NOT NULL
            ON CONFLICT (job_id) DO NOTHING
            RETURNING id
        )
        SELECT {columns}, (SELECT id FROM delivery) AS delivery_id FROM done
    """  # noqa: S608 (only constant fragments from this module)


def finished_from(row: asyncpg.Record, **known: Any) -> Finished:
    """`known`: the columns the statement did not return, as the caller wrote them."""
    values = dict(row) | known
    delivery_id: int | None = values.pop("delivery_id")
    return Finished(_job_from(values), delivery_id)


async def finish_job(
    conn: asyncpg.Connection,
    job_id: str,
    *,
    attempt: int,
    status: Literal[JobStatus.SUCCEEDED, JobStatus.FAILED],
    result: QuestionResult | None,
    error: dict[str, Any] | None,
    usage: dict[str, Any],
    event_data: dict[str, Any] | None = None,
    narration: Narration | None = None,
) -> Finished | None:
    """running -> final, only for the runner holding `attempt`; None when it lost the job. With
    `narration` (the rest of the job's journal), its rows are written in the same statement."""
    # A synchronous commit (the default): the final state is what clients and webhooks are told.
    # The fenced UPDATE keeps a job from finishing twice.
    extra = narration.parameters() if narration else []
    row = await conn.fetchrow(
        finalizing_sql(
            """
            UPDATE jobs SET status = $3, result = $4, error = $5, usage = $6, lease_expires_at = NULL,
                            finished_at = now(), updated_at = now()
            WHERE id = $1 AND status = 'running' AND attempts = $2
            RETURNING *
            """,
            "$7",
            8 if extra else None,
            columns=_FINISHED_COLUMNS,
        ),
        job_id, attempt, status.value, result.wire() if result is not None else None, error, usage, event_data if event_data is not None else {"error": error},
        *extra,
    )
    return finished_from(row, result=result) if row is not None else None


async def release_job(
    conn: asyncpg.Connection, job_id: str, *, attempt: int, retry_in_s: float, reason: str, message_in_s: float = 0.0
) -> bool:
    """running -> queued after a transient failure (a service was down); a delayed message runs it
    again after `message_in_s` (its dispatch time), the sweeper once `retry_in_s` has passed.
    False as well for a job whose cancel was requested: it is not retried (the runner cancels it)."""
    async with conn.transaction():
        row = await conn.fetchrow(
            f"""
            UPDATE jobs SET status = 'queued', lease_expires_at = {LEASE_SQL}, updated_at = now(),
                            dispatched_at = now() + make_interval(secs => $4)
            WHERE id = $1 AND status = 'running' AND attempts = $3 AND cancel_requested_at IS NULL
            RETURNING id
            """,  # noqa: S608 (constant fragment)
            job_id, retry_in_s, attempt, message_in_s,
        )
        if row is None:
            return False
        await add_event(conn, job_id, "requeued", {"reason": reason, "attempt": attempt})
    return True


CancelOutcome = Literal["cancelled", "not_found"] | JobStatus


async def cancel_job(conn: asyncpg.Connection, job_id: str, *, api_key_id: str) -> tuple[CancelOutcome, Finished | None]:
    """queued -> cancelled. Returns ("cancelled", finished), ("not_found", None), or the job's
    current status when it can no longer be cancelled."""
    row = await conn.fetchrow(
        finalizing_sql(
            """
            UPDATE jobs SET status = 'cancelled', lease_expires_at = NULL, finished_at = now(), updated_at = now()
            WHERE id = $1 AND api_key_id = $2 AND status = 'queued'
            RETURNING *
            """,
            "$3",
        ),
        job_id, api_key_id, {},
    )
    if row is not None:
        return "cancelled", finished_from(row)
    current = await get_job(conn, job_id, api_key_id=api_key_id)
    return ("not_found", None) if current is None else (current.status, None)


async def count_by_source(conn: asyncpg.Connection) -> dict[str, dict[str, int]]:
    """Jobs per source (`http`, `mcp`) and status."""
    rows = await conn.fetch("SELECT source, status, count(*) AS n FROM jobs GROUP BY source, status")
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["source"], {})[r["status"]] = r["n"]
    return out
