"""Job progress events (the SSE stream's source): one row per state change or router step."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from infra.status import JobStatus

FINAL_KINDS = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class JobEvent:
    id: int
    job_id: str
    kind: str
    data: dict[str, Any]
    created_at: datetime

    @property
    def is_final(self) -> bool:
        return self.kind in FINAL_KINDS


_INSERT = "INSERT INTO job_events (job_id, kind, data) VALUES ($1, $2, $3) RETURNING id"


async def add_event(conn: asyncpg.Connection, job_id: str, kind: str, data: dict[str, Any] | None = None) -> int:
    """An event inside the caller's transaction (state changes: committed with the change)."""
    event_id: int = await conn.fetchval(_INSERT, job_id, kind, data or {})
    return event_id


# `set_config(..., true)` is local to the statement's own (implicit) transaction and is evaluated
# before that transaction commits: SET LOCAL synchronous_commit in one round trip instead of four.
_INSERT_ASYNC_COMMIT = _INSERT + ", set_config('synchronous_commit', 'off', true)"


async def add_progress_event(conn: asyncpg.Connection, job_id: str, kind: str, data: dict[str, Any]) -> int:
    """A progress event on its own, committed without waiting for the WAL flush: a crash may
    lose the last few (they only narrate; the job's state is written durably, and its final
    synchronous commit flushes the WAL written before it), and each saves a disk flush on the
    job's critical path. Inside a caller's transaction, that transaction decides."""
    if conn.is_in_transaction():
        return await add_event(conn, job_id, kind, data)
    event_id: int = await conn.fetchval(_INSERT_ASYNC_COMMIT, job_id, kind, data)
    return event_id


# A streamed answer's chunk, written only while no cancel of its job was requested: the answer stops
# between chunks once it was (migration 0012), in the statement it writes anyway.
_INSERT_UNLESS_CANCELLED = """
    INSERT INTO job_events (job_id, kind, data)
    SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND cancel_requested_at IS NOT NULL)
    RETURNING id, set_config('synchronous_commit', 'off', true)
"""


async def add_answer_event(conn: asyncpg.Connection, job_id: str, kind: str, data: dict[str, Any]) -> int | None:
    """A streamed answer's progress event (as `add_progress_event`); None, writing nothing, when a
    cancel of the job was requested."""
    row = await conn.fetchrow(_INSERT_UNLESS_CANCELLED, job_id, kind, data)
    return None if row is None else int(row["id"])


async def has_event(conn: asyncpg.Connection, job_id: str, kind: str) -> bool:
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM job_events WHERE job_id = $1 AND kind = $2)",
                                    job_id, kind))


async def events_after(conn: asyncpg.Connection, job_id: str, after_id: int = 0, *, limit: int = 200) -> list[JobEvent]:
    rows = await conn.fetch(
        "SELECT id, job_id, kind, data, created_at FROM job_events WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        job_id, after_id, limit,
    )
    return [JobEvent(r["id"], r["job_id"], r["kind"], r["data"], r["created_at"]) for r in rows]


async def stream_read(
    conn: asyncpg.Connection, job_id: str, after_id: int = 0, *, limit: int = 200
) -> tuple[list[JobEvent], JobStatus | None]:
    """The job's events after `after_id` and its status (None: no such job), read in one statement:
    one snapshot, so a job seen final is seen with every event committed with its final status.
    Read in two statements, the end could commit in between (no events, then the job final) and
    a stream would stop before the events written in the final commit."""
    rows = await conn.fetch(
        """
        SELECT j.status, e.id, e.job_id, e.kind, e.data, e.created_at
        FROM jobs AS j LEFT JOIN LATERAL (
            SELECT id, job_id, kind, data, created_at FROM job_events
            WHERE job_id = j.id AND id > $2 ORDER BY id LIMIT $3
        ) AS e ON true
        WHERE j.id = $1
        ORDER BY e.id
        """,
        job_id, after_id, limit,
    )
    events = [JobEvent(r["id"], r["job_id"], r["kind"], r["data"], r["created_at"]) for r in rows if r["id"] is not None]
    return events, JobStatus(rows[0]["status"]) if rows else None


async def last_event(conn: asyncpg.Connection, job_id: str) -> JobEvent | None:
    """The job's latest event (what a still-running job is doing now)."""
    r = await conn.fetchrow(
        "SELECT id, job_id, kind, data, created_at FROM job_events WHERE job_id = $1 ORDER BY id DESC LIMIT 1", job_id
    )
    return JobEvent(r["id"], r["job_id"], r["kind"], r["data"], r["created_at"]) if r is not None else None
