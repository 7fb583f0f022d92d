"""Bulk retry runs (`job_retry_runs`): an admin retries every job matching the list filters, as a
tracked run with progress (like re-embedding runs). A run walks the matching jobs newest first in
keyset batches; its position (`cursor_at`, `cursor_id`) and counts are written with each batch, so
a run whose message was lost resumes where it stopped, and retrying a job twice is harmless (an
unforced retry is idempotent per original)."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg


@dataclass(frozen=True)
class RetryRun:
    id: str
    api_key_id: str | None
    status: str
    filters: dict[str, Any]
    force: bool
    total: int
    done: int
    skipped: int
    cursor_at: datetime | None
    cursor_id: str | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    updated_at: datetime
    finished_at: datetime | None

    @property
    def position(self) -> tuple[datetime, str] | None:
        return (self.cursor_at, self.cursor_id) if self.cursor_at is not None and self.cursor_id is not None else None


def _run(row: asyncpg.Record) -> RetryRun:
    values = dict(row)
    if isinstance(values["filters"], str):
        values["filters"] = json.loads(values["filters"])
    return RetryRun(**values)


def new_run_id() -> str:
    return "retryrun_" + secrets.token_urlsafe(12)


async def create_run(conn: asyncpg.Connection, *, api_key_id: str, filters: dict[str, Any], force: bool,
                     total: int) -> RetryRun:
    row = await conn.fetchrow(
        "INSERT INTO job_retry_runs (id, api_key_id, filters, force, total) VALUES ($1, $2, $3::jsonb, $4, $5) "
        "RETURNING *",
        new_run_id(), api_key_id, json.dumps(filters), force, total,
    )
    return _run(row)


async def get_run(conn: asyncpg.Connection, run_id: str) -> RetryRun | None:
    row = await conn.fetchrow("SELECT * FROM job_retry_runs WHERE id = $1", run_id)
    return _run(row) if row is not None else None


async def list_runs(conn: asyncpg.Connection, *, limit: int) -> list[RetryRun]:
    rows = await conn.fetch("SELECT * FROM job_retry_runs ORDER BY created_at DESC, id DESC LIMIT $1", limit)
    return [_run(r) for r in rows]


async def start_run(conn: asyncpg.Connection, run_id: str) -> RetryRun | None:
    """queued -> running (or still running: a resumed run); None when it has ended."""
    row = await conn.fetchrow(
        "UPDATE job_retry_runs SET status = 'running', started_at = coalesce(started_at, now()), updated_at = now() "
        "WHERE id = $1 AND status IN ('queued', 'running') RETURNING *",
        run_id,
    )
    return _run(row) if row is not None else None


async def record_batch(
    conn: asyncpg.Connection, run_id: str, *, done: int, skipped: int, position: tuple[datetime, str] | None,
    finished: bool, started_from: tuple[datetime, str] | None,
) -> bool:
    """Add a batch's counts and move the position; `finished` ends the run (succeeded). Only when
    the run is still where the batch started (`started_from`): a batch run twice (a redelivered
    or resent message) counts once. False when another copy got there first."""
    result: str = await conn.execute(
        """
        UPDATE job_retry_runs SET done = done + $2, skipped = skipped + $3,
               cursor_at = coalesce($4, cursor_at), cursor_id = coalesce($5, cursor_id), updated_at = now(),
               status = CASE WHEN $6 THEN 'succeeded' ELSE status END,
               finished_at = CASE WHEN $6 THEN now() ELSE finished_at END
        WHERE id = $1 AND status = 'running' AND cursor_id IS NOT DISTINCT FROM $7
        """,
        run_id, done, skipped, position[0] if position else None, position[1] if position else None, finished,
        started_from[1] if started_from else None,
    )
    return result.endswith(" 1")


async def fail_run(conn: asyncpg.Connection, run_id: str, error: str) -> None:
    await conn.execute(
        "UPDATE job_retry_runs SET status = 'failed', error = $2, finished_at = now(), updated_at = now() "
        "WHERE id = $1 AND status IN ('queued', 'running')",
        run_id, error,
    )


async def stalled_runs(conn: asyncpg.Connection, *, idle_s: float) -> list[str]:
    """Open runs with no progress for `idle_s`: their message was lost; the sweeper sends it again."""
    rows = await conn.fetch(
        "UPDATE job_retry_runs SET updated_at = now() "
        "WHERE status IN ('queued', 'running') AND updated_at < now() - make_interval(secs => $1) RETURNING id",
        idle_s,
    )
    return [r["id"] for r in rows]
