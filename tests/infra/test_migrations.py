"""The migration chain against the real PostgreSQL: down to nothing and up again, with the
objects later revisions add (the job-event and API-key NOTIFY triggers, the ops indexes) in place."""

from __future__ import annotations

import asyncio

import asyncpg
from alembic import command

from infra.migrate import alembic_config


async def _objects(dsn: str) -> tuple[set[str], set[str], set[str]]:
    conn = await asyncpg.connect(dsn)
    try:
        tables = {r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        triggers = {r["tgname"] for r in await conn.fetch("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")}
        indexes = {r["indexname"] for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
    finally:
        await conn.close()
    return tables, triggers, indexes


def test_the_chain_goes_down_to_nothing_and_up_again(fresh_dsn: str) -> None:
    at_head = asyncio.run(_objects(fresh_dsn))  # fresh_dsn is migrated to head
    tables, triggers, indexes = at_head
    assert {"jobs", "job_events", "audit_events", "webhook_attempts"} <= tables
    assert {"job_events_notify", "api_keys_notify", "job_events_in_commit_order"} <= triggers
    assert {"audit_events_kind_created", "webhook_attempts_created", "jobs_queued_dispatch"} <= indexes

    command.downgrade(alembic_config(fresh_dsn), "0008")  # 0009 undone: ids from the column default again
    _, triggers, indexes = asyncio.run(_objects(fresh_dsn))
    assert "job_events_in_commit_order" not in triggers and "jobs_queued_dispatch" not in indexes

    command.downgrade(alembic_config(fresh_dsn), "0001")
    _, triggers, indexes = asyncio.run(_objects(fresh_dsn))
    assert not {"job_events_notify", "api_keys_notify"} & triggers and "audit_events_kind_created" not in indexes

    command.downgrade(alembic_config(fresh_dsn), "base")
    assert asyncio.run(_objects(fresh_dsn))[0] <= {"alembic_version"}

    command.upgrade(alembic_config(fresh_dsn), "head")
    assert asyncio.run(_objects(fresh_dsn)) == at_head
