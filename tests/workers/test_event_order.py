"""A job's events in commit order (migration 0009): its two writers, the router's journal and the
RAG worker's `answer_delta` rows (retrieval/answer_stream.py), write on their own connections, and
a client that resumes its event stream with `Last-Event-ID` (every id above it) must get each
event exactly once, in order, wherever it resumes."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg

from infra.db.job_events import add_progress_event, stream_read
from retrieval.answer_stream import AnswerStream
from tests.infra.conftest import queued_job
from workers.journal import Journal


async def _resume_from(pool: asyncpg.Pool, job_id: str, after: int) -> list[int]:
    """What a client resuming with `Last-Event-ID: after` reads: every event after it."""
    async with pool.acquire() as conn:
        events, _ = await stream_read(conn, job_id, after, limit=10_000)
    return [e.id for e in events]


async def test_a_later_id_waits_for_an_earlier_one_to_commit(pool: asyncpg.Pool) -> None:
    """The journal's row is written (id taken) but not yet committed when the answer stream writes
    its delta: the delta is not visible before it, so a client reading meanwhile skips nothing."""
    job = await queued_job(pool)
    [queued] = await _resume_from(pool, job.id, 0)
    stream = AnswerStream(pool, job.id)
    async with pool.acquire() as slow:
        tx = slow.transaction()
        await tx.start()
        try:
            await add_progress_event(slow, job.id, "tool_started", {"tool": "AskArticles"})  # its commit lags
            delta = asyncio.ensure_future(stream.passages("the answer"))
            await asyncio.sleep(0.5)
            seen = await _resume_from(pool, job.id, queued)  # a client reading now, resuming later
            assert seen == [], seen  # nothing committed out of order is visible
            assert not delta.done()  # the second writer waits for the first one's commit
        finally:
            await tx.commit()
        await asyncio.wait_for(delta, timeout=10)
    rest = await _resume_from(pool, job.id, queued)
    assert len(rest) == 2 and rest == sorted(rest), rest
    async with pool.acquire() as conn:
        kinds = [r["kind"] for r in await conn.fetch("SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id",
                                                     job.id)]
    assert kinds == ["queued", "tool_started", "answer_delta"], kinds


async def test_racing_writers_and_a_resuming_client_get_every_event_once_in_order(pool: asyncpg.Pool) -> None:
    job = await queued_job(pool)
    journal = Journal(pool)
    stream = AnswerStream(pool, job.id)
    done = asyncio.Event()
    read: list[int] = []

    async def journal_writer() -> None:
        for n in range(60):
            journal.event(job.id, "progress", {"n": n})
            if n % 3 == 0:
                await asyncio.sleep(0)
        await journal.flush()

    async def answer_writer() -> None:
        for n in range(60):
            await stream.add(f"word{n} " * 10)  # over FLUSH_CHARS: a delta row per call
        await stream.finish()

    async def client() -> None:
        """Resumes after the last id it got, again and again, until the writers are done."""
        while True:
            finished = done.is_set()
            read.extend(await _resume_from(pool, job.id, read[-1] if read else 0))
            if finished:
                return
            await asyncio.sleep(0)

    reader = asyncio.ensure_future(client())
    try:
        await asyncio.gather(journal_writer(), answer_writer())
    finally:
        done.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(reader, timeout=30)
    everything = await _resume_from(pool, job.id, 0)
    assert len(everything) == 1 + 60 + 60  # queued, the journal's, the deltas
    assert read == everything  # each exactly once, in order, over all the resumptions
    for i, event_id in enumerate(everything):  # and resuming at any point gives the rest
        assert await _resume_from(pool, job.id, event_id) == everything[i + 1:]
