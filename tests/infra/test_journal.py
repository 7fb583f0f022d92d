"""The job journal (infra/db/journal.py) against the real PostgreSQL: rows in the order they
were added, a failed audit row reported at flush, cache writes alongside that never raise."""

from __future__ import annotations

import logging

import asyncpg
import pytest

from infra.db.audit import AuditEvent, insert_audit_events, list_audit_events
from infra.db.job_events import add_progress_event, events_after
from infra.db.journal import Journal, Write
from tests.infra.conftest import queued_job


async def test_rows_are_written_in_the_order_they_were_added(pool: asyncpg.Pool) -> None:
    job_id = (await queued_job(pool)).id
    journal = Journal(pool)
    kinds = [f"step{i}" for i in range(12)]

    def event(kind: str) -> Write:
        return lambda conn: add_progress_event(conn, job_id, kind, {"k": kind})

    def audit_row(kind: str) -> Write:
        return lambda conn: insert_audit_events(conn, [AuditEvent("llm_round", job_id=job_id, tool=kind)])

    for kind in kinds:  # added without awaiting: the job goes on while they are written
        journal.add(event(kind), label=kind, critical=False)
        journal.add(audit_row(kind), label=f"audit {kind}")
    await journal.flush()
    async with pool.acquire() as conn:
        events = await events_after(conn, job_id)
        audit = await list_audit_events(conn, job_id)
    assert [e.kind for e in events] == ["queued", *kinds]
    assert [a.tool for a in audit] == kinds


async def test_a_failed_audit_row_fails_flush_and_later_rows_are_still_written(
    pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    job_id = (await queued_job(pool)).id
    journal = Journal(pool)
    orphan = AuditEvent("llm_round", job_id="job_that_does_not_exist")  # violates the jobs foreign key
    journal.add(lambda conn: insert_audit_events(conn, [orphan]), label="audit row llm_round")
    journal.add(lambda conn: add_progress_event(conn, "job_that_does_not_exist", "x", {}), label="event x",
                critical=False)
    journal.add(lambda conn: add_progress_event(conn, job_id, "after", {}), label="event after", critical=False)
    with caplog.at_level(logging.WARNING, logger="turnout.jobs"), pytest.raises(asyncpg.ForeignKeyViolationError):
        await journal.flush()
    assert "could not write event x" in caplog.text  # not critical: logged only
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "after"]
    await journal.flush()  # reported once


async def test_work_alongside_is_awaited_by_flush_and_its_failure_only_logged(
    pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    journal = Journal(pool)
    done: list[str] = []

    async def cache_write() -> None:
        done.append("page")

    async def broken_cache() -> None:
        raise ConnectionError("redis is down")

    journal.alongside(cache_write(), label="first page")
    journal.alongside(broken_cache(), label="decision cache")
    with caplog.at_level(logging.WARNING, logger="turnout.jobs"):
        await journal.flush()
    assert done == ["page"]
    assert "could not write decision cache: ConnectionError: redis is down" in caplog.text
