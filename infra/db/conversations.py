"""A conversation: the chain of jobs one key asked as follow-ups (`jobs.conversation_id`, the
first job's id; migration 0010)."""

from __future__ import annotations

import asyncpg

from infra.db.jobs import JobRow, job_row

CHAIN_MAX = 200  # a chain longer than this is listed from its start up to here


async def conversation_jobs(conn: asyncpg.Connection, conversation_id: str, *, api_key_id: str) -> list[JobRow]:
    """The conversation's jobs, oldest first: its first job and every follow-up (empty: no such
    conversation for this key, another key's conversation included)."""
    rows = await conn.fetch(
        """
        SELECT * FROM jobs
        WHERE api_key_id = $2 AND ((id = $1 AND conversation_id IS NULL) OR conversation_id = $1)
        ORDER BY created_at, id
        LIMIT $3
        """,
        conversation_id, api_key_id, CHAIN_MAX,
    )
    return [job_row(row) for row in rows]


async def last_job(conn: asyncpg.Connection, conversation_id: str, *, api_key_id: str) -> JobRow | None:
    """The newest job of the conversation (what a follow-up by `conversationId` continues)."""
    row = await conn.fetchrow(
        """
        SELECT * FROM jobs
        WHERE api_key_id = $2 AND ((id = $1 AND conversation_id IS NULL) OR conversation_id = $1)
        ORDER BY created_at DESC, id DESC
        LIMIT 1
        """,
        conversation_id, api_key_id,
    )
    return job_row(row) if row is not None else None
