"""The audit row of a RAG answer call (kind ``rag_answer`` in ``audit_events``): model,
tokens and latency of the answer LLM call, so ops metrics count RAG tokens too."""

from __future__ import annotations

from typing import Any

import asyncpg


async def insert_rag_audit(
    db: asyncpg.Pool | asyncpg.Connection,
    *,
    job_id: str,
    model: str,
    input_tokens: int,
    output_tokens: int,
    latency_ms: float,
    outcome: str,  # "llm" | "extractive" (the call failed and the answer fell back)
    error: str | None = None,
    arguments: dict[str, Any] | None = None,
) -> None:
    await db.execute(
        """
        INSERT INTO audit_events (job_id, kind, model, arguments, outcome, error, input_tokens, output_tokens,
                                  latency_ms)
        VALUES ($1, 'rag_answer', $2, $3, $4, $5, $6, $7, $8)
        """,
        job_id, model, arguments, outcome, error, input_tokens, output_tokens, latency_ms,
    )
