"""Waiting inside a request for a job to end (a long poll), woken by its final event.

Used by `GET /v1/jobs/{id}?waitS=` and by `POST /v1/questions` with `Prefer: wait=N` (RFC 7240):
the answer comes as soon as the job ends, or when the wait is over with the job's state then.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

from infra.db.job_listener import JobEventListener, JobWatch
from infra.db.jobs import JobRow

WAIT_MAX_S = 30.0  # a long poll's longest wait; below common proxy and client idle timeouts

_PREFER_WAIT = re.compile(r"^\s*wait\s*=\s*(\d{1,6})\s*$", re.IGNORECASE)


def preferred_wait(prefer: str | None) -> float | None:
    """The seconds of a `Prefer: wait=N` header (at most `WAIT_MAX_S`), None without one. Other
    preferences, and a wait that is not a number of seconds, are ignored (RFC 7240 §2)."""
    if not prefer:
        return None
    for token in prefer.split(","):
        match = _PREFER_WAIT.match(token.split(";")[0])
        if match:
            return min(float(match.group(1)), WAIT_MAX_S)
    return None


async def watch_until_final(
    job_events: JobEventListener, job_id: str, read: Callable[[], Awaitable[JobRow]], *, wait_s: float
) -> JobRow:
    """`until_final` for a job not read yet: watched before its first read."""
    with job_events.watch(job_id, final_only=True) as watch:  # progress events do not wake it
        return await until_final(watch, read, job_events, wait_s=wait_s)


async def until_final(
    watch: JobWatch,
    read: Callable[[], Awaitable[JobRow]],
    job_events: JobEventListener,
    *,
    wait_s: float,
    job: JobRow | None = None,
) -> JobRow:
    """The job once it has ended, or as it is after `wait_s`. `watch` must have been entered before
    the state in `job` (or the first `read()`) was read, so the end cannot slip in between."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    if job is None:
        job = await read()
    while not job.status.is_final:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        await watch.wait(min(remaining, job_events.recheck_s))  # the end, or time to look again
        watch.reset()
        job = await read()
    return job
