"""The job journal (workers/journal.py) against the real PostgreSQL: rows in the order they
were added, rows added together written in one statement, a failed audit row reported at flush
without taking its batch with it, a journal held until a claim, a lingering journal, cache writes
alongside that never raise."""

from __future__ import annotations

import asyncio
import logging

import asyncpg
import pytest

from infra.db.audit import AuditEvent, list_audit_events
from infra.db.job_events import events_after
from tests.infra.conftest import queued_job
from workers.journal import Journal


async def test_rows_are_written_in_the_order_they_were_added(pool: asyncpg.Pool) -> None:
    job_id = (await queued_job(pool)).id
    journal = Journal(pool)
    kinds = [f"step{i}" for i in range(12)]
    for i, kind in enumerate(kinds):  # added without awaiting: the job goes on while they are written
        journal.event(job_id, kind, {"k": kind})
        journal.audit(AuditEvent("llm_round", job_id=job_id, tool=kind, arguments={"q": kind}, latency_ms=1.5))
        if i % 3 == 2:
            await asyncio.sleep(0.002)  # some rows are written alone, others wait and go together
    await journal.flush()
    async with pool.acquire() as conn:
        events = await events_after(conn, job_id)
        audit = await list_audit_events(conn, job_id)
    assert [e.kind for e in events] == ["queued", *kinds]
    assert [e.data for e in events[1:]] == [{"k": kind} for kind in kinds]
    assert [(a.tool, a.arguments, a.latency_ms, a.round) for a in audit] == [(k, {"q": k}, 1.5, None) for k in kinds]


async def test_rows_added_together_are_written_in_one_statement(pool: asyncpg.Pool) -> None:
    job_id = (await queued_job(pool)).id
    journal = Journal(pool)
    journal.event(job_id, "first", {})  # starts the writer; the next ones queue behind it
    journal.audit(AuditEvent("llm_round", job_id=job_id, round=1, input_tokens=7))
    journal.event(job_id, "llm_round", {"round": 1})
    journal.event(job_id, "tool_started", {"tool": "SearchArticles"})
    await journal.flush()
    async with pool.acquire() as conn:
        stamps = await conn.fetch(
            "SELECT kind, created_at FROM job_events WHERE job_id = $1 AND kind <> 'queued' "
            "UNION ALL SELECT kind, created_at FROM audit_events WHERE job_id = $1", job_id,
        )
    assert len(stamps) == 4
    # now() is the transaction's start: rows of one statement share it, rows written apart do not.
    assert len({r["created_at"] for r in stamps}) <= 2
    assert len({r["created_at"] for r in stamps if r["kind"] != "first"}) == 1


async def test_a_failed_audit_row_fails_flush_and_the_rest_of_its_batch_is_still_written(
    pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    job_id = (await queued_job(pool)).id
    journal = Journal(pool)
    journal.event(job_id, "before", {})
    journal.audit(AuditEvent("llm_round", job_id="job_that_does_not_exist"))  # violates the jobs foreign key
    journal.event("job_that_does_not_exist", "x", {})
    journal.audit(AuditEvent("tool_execution", job_id=job_id, tool="SearchArticles"))
    journal.event(job_id, "after", {})
    with caplog.at_level(logging.WARNING, logger="turnout.jobs"), pytest.raises(asyncpg.ForeignKeyViolationError):
        await journal.flush()
    assert "could not write event x" in caplog.text  # not critical: logged only
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "before", "after"]
        assert [a.kind for a in await list_audit_events(conn, job_id)] == ["tool_execution"]
    await journal.flush()  # reported once


async def test_take_rest_returns_the_rows_not_yet_started_or_held_or_writes_them_after_a_failure(
    pool: asyncpg.Pool,
) -> None:
    job_id = (await queued_job(pool)).id
    journal = Journal(pool)
    journal.event(job_id, "written", {})
    await asyncio.sleep(0.1)  # the writer has taken it
    journal.event(job_id, "rest", {})
    rest = await journal.take_rest()
    assert [row.kind for row in rest.rows] == ["rest"]  # type: ignore[union-attr]
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "written"]

    held = Journal(pool)
    held.event(job_id, "last", {})
    held.hold()  # said before the writer ran: the row waits for the final statement
    await asyncio.sleep(0.1)
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "written"]
    assert [row.kind for row in (await held.take_rest()).rows] == ["last"]  # type: ignore[union-attr]
    held.event(job_id, "flushed", {})
    held.hold()
    await held.flush()  # flush() writes what hold() kept
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "written", "flushed"]

    failing = Journal(pool)
    failing.audit(AuditEvent("llm_round", job_id="job_that_does_not_exist"))  # violates the jobs foreign key
    await asyncio.sleep(0.1)
    failing.event(job_id, "after the failure", {})
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await failing.take_rest()
    async with pool.acquire() as conn:  # the job fails on the audit row; its later rows are not lost
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "written", "flushed", "after the failure"]


async def test_a_held_journal_writes_once_its_claim_holds_and_drops_everything_if_not(pool: asyncpg.Pool) -> None:
    job_id = (await queued_job(pool)).id
    claimed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    journal = Journal(pool, after=claimed)
    journal.event(job_id, "routing", {})
    await asyncio.sleep(0.05)
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued"]  # held
    claimed.set_result(True)
    journal.audit(AuditEvent("llm_round", job_id=job_id))
    await journal.flush()
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued", "routing"]
        assert len(await list_audit_events(conn, job_id)) == 1

    other_job = (await queued_job(pool)).id
    refused: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    dropped = Journal(pool, after=refused)
    dropped.event(other_job, "routing", {})
    refused.set_result(False)
    await dropped.flush()
    dropped.audit(AuditEvent("llm_round", job_id=other_job))  # added after the refusal: dropped too
    await dropped.flush()
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, other_job)] == ["queued"]
        assert await list_audit_events(conn, other_job) == []


async def test_a_lingering_journal_leaves_a_quick_burst_to_the_final_statement_and_writes_a_slow_one(
    pool: asyncpg.Pool,
) -> None:
    job_id = (await queued_job(pool)).id
    quick = Journal(pool, linger_s=0.5)
    quick.event(job_id, "routing", {})
    quick.audit(AuditEvent("llm_round", job_id=job_id))
    await asyncio.sleep(0.1)  # within the linger: nothing written yet
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued"]
    quick.event(job_id, "tool_finished", {})
    quick.hold()  # the job is done: its rows go with the final statement, none in one of their own
    rest = await quick.take_rest()
    assert [row.label for row in rest.rows] == ["event routing", "audit row llm_round", "event tool_finished"]
    async with pool.acquire() as conn:
        assert [e.kind for e in await events_after(conn, job_id)] == ["queued"]
        assert await list_audit_events(conn, job_id) == []

    slow = Journal(pool, linger_s=0.05)
    slow.event(job_id, "tool_started", {})  # a job still running past the linger shows its progress
    async with pool.acquire() as conn:
        for _ in range(100):
            kinds = [e.kind for e in await events_after(conn, job_id)]
            if kinds != ["queued"]:
                break
            await asyncio.sleep(0.02)
    assert kinds == ["queued", "tool_started"]  # written with no flush() or hold()
    await slow.flush()


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
