"""Feedback on a job (`jobs.feedback_*`, migration 0010): the owner's rating, replaceable."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from infra.db.jobs import JobRow, job_row


async def rate_job(
    conn: asyncpg.Connection, job_id: str, *, api_key_id: str, rating: str, comment: str | None
) -> JobRow | None:
    """Store (or replace) the rating of a key's job; None: no such job for this key."""
    row = await conn.fetchrow(
        """
        UPDATE jobs SET feedback_rating = $3, feedback_comment = $4, feedback_at = now()
        WHERE id = $1 AND api_key_id = $2
        RETURNING *
        """,
        job_id, api_key_id, rating, comment,
    )
    return job_row(row) if row is not None else None


@dataclass(frozen=True)
class FeedbackCount:
    tool: str | None
    routed_by: str | None
    rating: str
    count: int


async def feedback_counts(conn: asyncpg.Connection) -> list[FeedbackCount]:
    """Rated jobs by the tool that ran, how it was routed and the rating (for /metrics)."""
    rows = await conn.fetch(
        """
        SELECT result->>'tool' AS tool, result->>'routedBy' AS routed_by, feedback_rating AS rating,
               count(*) AS count
        FROM jobs WHERE feedback_rating IS NOT NULL
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        """
    )
    return [FeedbackCount(r["tool"], r["routed_by"], r["rating"], r["count"]) for r in rows]


async def rated_jobs(conn: asyncpg.Connection, *, limit: int) -> list[JobRow]:
    """The rated jobs, the most recently rated first (for `turnout eval export-feedback`)."""
    rows = await conn.fetch(
        "SELECT * FROM jobs WHERE feedback_rating IS NOT NULL ORDER BY feedback_at DESC, id LIMIT $1", limit
    )
    return [job_row(row) for row in rows]
