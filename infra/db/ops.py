"""Read-only aggregates for operations: the audit trail and webhooks (jobs by source and status is
`infra.db.jobs.count_by_source`, re-embedding runs `infra.db.reembed.list_runs`).

Windows are relative to the database clock (`now()`), so every process agrees on them.
Every aggregate over audit_events is one scan that produces all windows at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

LLM_KINDS = ("llm_round", "rag_answer")
RATE_LIMIT_KIND = "rate_limit_wait"
TOOL_KIND = "tool_execution"


async def llm_usage_by_model(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """Per (kind, model): calls and tokens in total and in the last 5 and 60 minutes."""
    return list(await conn.fetch(
        """
        SELECT kind, coalesce(model, '') AS model,
               count(*) AS calls,
               coalesce(sum(input_tokens), 0) AS input_tokens,
               coalesce(sum(output_tokens), 0) AS output_tokens,
               count(*) FILTER (WHERE created_at > now() - interval '5 minutes') AS calls_5m,
               coalesce(sum(input_tokens) FILTER (WHERE created_at > now() - interval '5 minutes'), 0)
                   AS input_tokens_5m,
               coalesce(sum(output_tokens) FILTER (WHERE created_at > now() - interval '5 minutes'), 0)
                   AS output_tokens_5m,
               count(*) FILTER (WHERE created_at > now() - interval '60 minutes') AS calls_60m,
               coalesce(sum(input_tokens) FILTER (WHERE created_at > now() - interval '60 minutes'), 0)
                   AS input_tokens_60m,
               coalesce(sum(output_tokens) FILTER (WHERE created_at > now() - interval '60 minutes'), 0)
                   AS output_tokens_60m
        FROM audit_events
        WHERE kind = ANY($1::text[])
        GROUP BY kind, coalesce(model, '')
        ORDER BY kind, model
        """,
        list(LLM_KINDS),
    ))


async def llm_per_minute(conn: asyncpg.Connection, since_epoch: float) -> list[asyncpg.Record]:
    """LLM calls and tokens per minute (epoch minute number) since `since_epoch`."""
    return list(await conn.fetch(
        """
        SELECT floor(extract(epoch FROM created_at) / 60)::bigint AS minute,
               count(*) AS calls,
               coalesce(sum(input_tokens), 0) AS input_tokens,
               coalesce(sum(output_tokens), 0) AS output_tokens
        FROM audit_events
        WHERE kind = ANY($1::text[]) AND created_at >= to_timestamp($2)
        GROUP BY 1
        """,
        list(LLM_KINDS), since_epoch,
    ))


async def rate_limit_waits(conn: asyncpg.Connection) -> asyncpg.Record:
    """Waits for the shared LLM rate limiter (`latency_ms` = time waited)."""
    row = await conn.fetchrow(
        """
        SELECT count(*) AS waits,
               coalesce(sum(latency_ms), 0) AS waited_ms,
               count(*) FILTER (WHERE created_at > now() - interval '5 minutes') AS waits_5m,
               coalesce(sum(latency_ms) FILTER (WHERE created_at > now() - interval '5 minutes'), 0)
                   AS waited_ms_5m,
               count(*) FILTER (WHERE created_at > now() - interval '60 minutes') AS waits_60m,
               coalesce(sum(latency_ms) FILTER (WHERE created_at > now() - interval '60 minutes'), 0)
                   AS waited_ms_60m,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)
                   FILTER (WHERE created_at > now() - interval '60 minutes') AS p95_ms_60m
        FROM audit_events
        WHERE kind = $1
        """,
        RATE_LIMIT_KIND,
    )
    assert row is not None  # an aggregate without GROUP BY always returns one row
    return row


async def latency_histogram(
    conn: asyncpg.Connection, kinds: Sequence[str], label: str, bounds_s: Sequence[float]
) -> list[asyncpg.Record]:
    """Counts per (label value, outcome, bucket) of audit `latency_ms`, for Prometheus histograms.

    `label` is the audit column to group by ("tool" or "model"); bucket i counts values in
    (bounds[i-1], bounds[i]]; bucket len(bounds) is +Inf.
    """
    if label not in ("tool", "model"):
        raise ValueError(f"cannot group latency by {label!r}")
    return list(await conn.fetch(
        f"""
        SELECT coalesce({label}, '') AS label, kind, coalesce(outcome, '') AS outcome,
               CASE WHEN latency_ms IS NULL THEN NULL
                    ELSE (SELECT count(*) FROM unnest($2::float8[]) AS b WHERE b < latency_ms / 1000.0)
               END AS bucket,
               count(*) AS n,
               coalesce(sum(latency_ms), 0) / 1000.0 AS sum_s
        FROM audit_events
        WHERE kind = ANY($1::text[])
        GROUP BY 1, 2, 3, 4
        """,  # noqa: S608  (label is one of two column names, checked above)
        list(kinds), list(bounds_s),
    ))


async def webhook_summary(conn: asyncpg.Connection) -> asyncpg.Record:
    row = await conn.fetchrow(
        """
        SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
               count(*) FILTER (WHERE status = 'pending' AND attempts > 0) AS retrying,
               count(*) FILTER (WHERE status = 'pending' AND next_attempt_at > now()) AS delayed,
               count(*) FILTER (WHERE status = 'delivered') AS delivered,
               count(*) FILTER (WHERE status = 'dead') AS dead,
               count(*) FILTER (WHERE status = 'disabled') AS disabled,
               extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending'))
                   AS oldest_pending_age_s,
               (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NULL) AS endpoints_enabled,
               (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NULL AND consecutive_failures > 0)
                   AS endpoints_failing,
               (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL) AS endpoints_disabled
        FROM webhook_deliveries
        """
    )
    assert row is not None
    return row


async def webhook_attempts_per_minute(conn: asyncpg.Connection, since_epoch: float) -> list[asyncpg.Record]:
    """Delivery attempts per minute, split into delivered (2xx, no error) and failed."""
    return list(await conn.fetch(
        """
        SELECT floor(extract(epoch FROM created_at) / 60)::bigint AS minute,
               count(*) FILTER (WHERE error IS NULL AND status_code BETWEEN 200 AND 299) AS ok,
               count(*) FILTER (WHERE error IS NOT NULL OR status_code IS NULL
                                OR status_code NOT BETWEEN 200 AND 299) AS failed
        FROM webhook_attempts
        WHERE created_at >= to_timestamp($1)
        GROUP BY 1
        """,
        since_epoch,
    ))
