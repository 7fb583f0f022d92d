"""The SSE stream of a job that ends while the stream reads it: the real API over HTTP, the real
PostgreSQL, the job moved by the real claim and finish statements (on the idle API, no runner
takes it), the moment of the end pinned by a table lock instead of left to chance."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx

from infra.db.job_listener import CHANNEL
from infra.db.jobs import claim_job, finish_job
from infra.db.journal import EventRow, Narration
from infra.db.pool import create_pool
from infra.settings import Settings
from infra.status import JobStatus


class StreamReader:
    """Reads a job's SSE stream in a thread; `join()` re-raises what the reader raised."""

    def __init__(self, client: httpx.Client, job_id: str) -> None:
        self.kinds: list[str] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, args=(client, job_id), daemon=True)
        self._thread.start()

    def _read(self, client: httpx.Client, job_id: str) -> None:
        try:
            with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=60) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        self.kinds.append(line.removeprefix("event: "))
        except BaseException as exc:  # handed to the test by join()
            self.error = exc

    def join(self) -> list[str]:
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the event stream did not end"
        if self.error is not None:
            raise self.error
        return self.kinds


def _wait(predicate: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_job_ending_between_the_streams_reads_streams_its_last_events(
    idle_client: httpx.Client, settings: Settings
) -> None:
    response = idle_client.post("/v1/questions", json={"question": "a job that ends while its stream reads"})
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    reader = StreamReader(idle_client, job_id)

    async def end_the_job_while_the_stream_reads() -> None:
        pool = await create_pool(settings.database_url, min_size=2, max_size=2)
        try:
            async with pool.acquire() as conn:
                claimed = await claim_job(conn, job_id, lease_s=600)
                assert claimed is not None
            await asyncio.to_thread(_wait, lambda: reader.kinds == ["queued", "running"], "queued and running")
            async with pool.acquire() as writer, pool.acquire() as waker:
                transaction = writer.transaction()
                await transaction.start()
                try:
                    # The runner's final statement (its last progress event with it), not yet
                    # committed; until it is, every read of `jobs` waits for this lock.
                    await writer.execute("SET LOCAL lock_timeout = '30s'")
                    await writer.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
                    finished = await finish_job(
                        writer, job_id, attempt=claimed.attempts, status=JobStatus.SUCCEEDED, result=None,
                        error=None, usage={}, narration=Narration((EventRow(job_id, "routing", {}),)),
                    )
                    assert finished is not None
                    # Wake the stream now (as a progress event's notification would): it reads,
                    # sees nothing committed yet, and its read of the job waits for the lock.
                    await waker.execute("SELECT pg_notify($1, $2)", CHANNEL, f"{job_id}:routing")
                    deadline = time.monotonic() + 30
                    while not await waker.fetchval(
                        "SELECT count(*) FROM pg_locks WHERE relation = 'jobs'::regclass AND NOT granted"
                    ):
                        assert time.monotonic() < deadline, "the stream never read the job"
                        await asyncio.sleep(0.02)
                except BaseException:
                    await transaction.rollback()
                    raise
                await transaction.commit()  # the end lands between the stream's reads
        finally:
            await pool.close()

    asyncio.run(end_the_job_while_the_stream_reads())
    kinds = reader.join()
    assert kinds == ["queued", "running", "routing", "succeeded"]
    # A stream opened after the end replays all of it, and ends.
    replay = idle_client.get(f"/v1/jobs/{job_id}/events", timeout=30)
    assert [json.loads(line.removeprefix("data: "))["kind"] for line in replay.text.splitlines()
            if line.startswith("data: ")] == kinds
