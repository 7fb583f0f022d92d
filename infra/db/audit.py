"""The routing audit trail (table `audit_events`): one row per LLM round, tool execution,
rejected call, limit, fallback, cache hit, rate-limit wait and RAG answer call. The one module
that writes the table.

Ops metrics (LLM calls and tokens per minute, rate-limiter waits) are computed from these rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import asyncpg

AuditKind = Literal[
    "llm_round", "tool_execution", "tool_rejected", "limit", "fallback", "cache_hit", "rate_limit_wait", "rag_answer"
]
AUDIT_KINDS: frozenset[str] = frozenset(AuditKind.__args__)  # type: ignore[attr-defined]


@dataclass
class AuditEvent:
    kind: AuditKind
    job_id: str | None = None
    round: int | None = None
    loop_mode: str | None = None  # "tools" | "json_schema"
    model: str | None = None
    tool: str | None = None
    arguments: Any = None  # what the model sent (parsed JSON, or the raw string if it did not parse)
    normalized_arguments: dict[str, Any] | None = None  # what was executed
    outcome: str | None = None  # e.g. "answered", "no_results", "error", a limit code
    error: str | None = None
    finish_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float | None = None
    cost_usd: float | None = None  # an LLM call's cost by the price table (`usage.costUsd` of that call)
    created_at: datetime | None = None  # set by the database

    def __post_init__(self) -> None:
        if self.kind not in AUDIT_KINDS:
            raise ValueError(f"unknown audit kind {self.kind!r}; known: {sorted(AUDIT_KINDS)}")


AUDIT_COLUMNS = tuple(f.name for f in fields(AuditEvent) if f.name != "created_at")
_INSERT = """
    INSERT INTO audit_events (
        kind, job_id, round, loop_mode, model, tool, arguments, normalized_arguments, outcome, error,
        finish_reason, input_tokens, output_tokens, latency_ms, cost_usd
    ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
"""
_SELECT = """
    SELECT kind, job_id, round, loop_mode, model, tool, arguments, normalized_arguments, outcome, error,
           finish_reason, input_tokens, output_tokens, latency_ms, cost_usd, created_at
    FROM audit_events WHERE job_id = $1 ORDER BY id
"""


# The same insert, committed without waiting for the WAL flush: `set_config(..., true)` is local
# to the statement's own (implicit) transaction and is evaluated before that transaction commits.
# One statement instead of BEGIN / SET LOCAL / INSERT / COMMIT: one round trip per row.
_INSERT_ASYNC_COMMIT = _INSERT + " RETURNING set_config('synchronous_commit', 'off', true)"


async def insert_audit_events(db: asyncpg.Pool | asyncpg.Connection, events: list[AuditEvent]) -> None:
    """Store events, committed without waiting for the WAL flush (inside a caller's transaction,
    that transaction decides). Safe because the trail narrates, it decides nothing: WAL is flushed
    in order, so the job's final (synchronous) commit makes every row written before it durable,
    and a database crash can lose only the last rows of a job that was still running. Each row
    saves a disk flush (~3 ms) on the job's critical path."""
    if not events:
        return
    rows = [audit_row(e) for e in events]
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn:
            await _insert(conn, _INSERT_ASYNC_COMMIT, rows)
    else:
        await _insert(db, _INSERT if db.is_in_transaction() else _INSERT_ASYNC_COMMIT, rows)


_AUDIT_TYPES = {"round": "integer", "arguments": "jsonb", "normalized_arguments": "jsonb",
                "input_tokens": "integer", "output_tokens": "integer", "latency_ms": "double precision",
                "cost_usd": "double precision"}
_AUDIT_LIST = ", ".join(AUDIT_COLUMNS)


def insert_audit_arrays(first: int) -> str:
    """An INSERT of audit rows given as one array parameter per column (`AUDIT_COLUMNS` order, from
    `$first`), in their array order: for a statement that writes other tables too."""
    arrays = ", ".join(f"${i}::{_AUDIT_TYPES.get(c, 'text')}[]" for i, c in enumerate(AUDIT_COLUMNS, start=first))
    return (f"INSERT INTO audit_events ({_AUDIT_LIST}) SELECT {_AUDIT_LIST} "  # noqa: S608 (constants)
            f"FROM unnest({arrays}) WITH ORDINALITY AS a({_AUDIT_LIST}, n) ORDER BY n")


def audit_row(event: AuditEvent) -> tuple[Any, ...]:
    """The event's values in `AUDIT_COLUMNS` order, storable (see `_storable`)."""
    return tuple(_storable(getattr(event, column)) for column in AUDIT_COLUMNS)


async def _insert(conn: asyncpg.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    if len(rows) == 1:  # the router writes one event at a time: a plain execute is the cheaper call
        await conn.execute(sql, *rows[0])
    else:
        await conn.executemany(sql, rows)


def _storable(value: Any) -> Any:
    """PostgreSQL text and jsonb cannot hold NUL (nor jsonb NaN/Infinity); a model may send them in
    any argument. The trail keeps the rest of what was sent, with U+FFFD where a NUL was."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_storable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # jsonb has no NaN/Infinity
    return value


async def list_audit_events(db: asyncpg.Pool | asyncpg.Connection, job_id: str) -> list[AuditEvent]:
    """A job's trail in the order it was written."""
    rows = await db.fetch(_SELECT, job_id)
    return [AuditEvent(**dict(row)) for row in rows]
