"""The routing audit trail (table `audit_events`): one row per LLM round, tool execution,
rejected call, limit, fallback, cache hit, rate-limit wait and RAG answer call.

Ops metrics (LLM calls and tokens per minute, rate-limiter waits) are computed from these rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
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
    created_at: datetime | None = None  # set by the database

    def __post_init__(self) -> None:
        if self.kind not in AUDIT_KINDS:
            raise ValueError(f"unknown audit kind {self.kind!r}; known: {sorted(AUDIT_KINDS)}")


_COLUMNS = [f.name for f in fields(AuditEvent) if f.name != "created_at"]
_INSERT = """
    INSERT INTO audit_events (
        kind, job_id, round, loop_mode, model, tool, arguments, normalized_arguments, outcome, error,
        finish_reason, input_tokens, output_tokens, latency_ms
    ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
"""
_SELECT = """
    SELECT kind, job_id, round, loop_mode, model, tool, arguments, normalized_arguments, outcome, error,
           finish_reason, input_tokens, output_tokens, latency_ms, created_at
    FROM audit_events WHERE job_id = $1 ORDER BY id
"""


async def insert_audit_events(db: asyncpg.Pool | asyncpg.Connection, events: list[AuditEvent]) -> None:
    if not events:
        return
    rows = [tuple(asdict(e)[c] for c in _COLUMNS) for e in events]
    await db.executemany(_INSERT, rows)


async def list_audit_events(db: asyncpg.Pool | asyncpg.Connection, job_id: str) -> list[AuditEvent]:
    """A job's trail in the order it was written."""
    rows = await db.fetch(_SELECT, job_id)
    return [AuditEvent(**dict(row)) for row in rows]
