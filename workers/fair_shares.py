"""Fair shares per key (issue 27): when a key's job ends, its next parked jobs get their turn.

`take_turns` (after any final transition of a key's job: the runner's end, a cancel, the sweeper's
gives-up) dispatches the key's next parked jobs in PostgreSQL (infra/db/fair_shares.py) and
`send_turns` sends their messages. A dispatch that fails here is not lost: the sweeper dispatches
for every key with parked jobs, and a message that is not sent is re-sent by the lost-message sweep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

import asyncpg
from celery import Celery

from infra.db import fair_shares as fair_db
from infra.db.fair_shares import Dispatched
from infra.db.jobs import JobRow
from infra.settings import Settings
from infra.transient import POSTGRES_DOWN
from workers.dispatch import send_run_job

log = logging.getLogger("turnout.fair_shares")


async def take_turns(pool: asyncpg.Pool, settings: Settings, api_key_ids: Iterable[str | None]) -> list[Dispatched]:
    """Dispatch these keys' next parked jobs (as many as each has free slots); nothing without a cap."""
    cap = settings.jobs_per_key_in_flight
    turns: list[Dispatched] = []
    if cap == 0:
        return turns
    for api_key_id in dict.fromkeys(k for k in api_key_ids if k is not None):
        try:
            async with pool.acquire() as conn:
                turns += await fair_db.dispatch_parked(conn, api_key_id, cap=cap, lease_s=settings.job_lease_s)
        except POSTGRES_DOWN as exc:  # the sweeper dispatches for this key later
            log.warning("could not dispatch the parked jobs of key %s (the sweeper will): %s", api_key_id, exc)
    return turns


def send_turns(app: Celery, settings: Settings, turns: Iterable[Dispatched]) -> None:
    """Send the dispatched jobs' messages (after their rows are committed), each at its priority."""
    for turn in turns:
        send_run_job(app, settings, turn.id, priority=turn.priority)


async def after_ended(pool: asyncpg.Pool, app: Celery, settings: Settings, ended: Iterable[JobRow]) -> None:
    """These jobs reached a final state: each that held a slot (it had been dispatched) hands it to
    its key's next parked job. Sends in a thread: the callers are on an event loop."""
    turns = await take_turns(pool, settings, [job.api_key_id for job in ended if job.dispatched_at is not None])
    if turns:
        await asyncio.to_thread(send_turns, app, settings, turns)
