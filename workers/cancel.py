"""Cancelling a running job, the runner's side (issue 27; the API's side: infra/db/job_cancel.py).

The request is the job row's `cancel_requested_at`, not a Celery revoke (which a prefork worker
may miss, celery#7529). `CancelWatch` reads it every `CANCEL_POLL_S` while the job runs (one
primary-key lookup) and, once it is set, the runner stops the routing at the await it is in: a
rate-limit wait, an LLM call in flight (its HTTP request is aborted), the wait for a tool's reply.
The checkpoint (`raise_if_requested`) is also awaited before a tool runs, so a tool never starts
after the request was seen. A streamed RAG answer stops between chunks on its own (its delta insert
is conditional on the request, retrieval/answer_stream.py). `UsageSoFar` sums the LLM rounds the
job reported, the usage a cancelled job ends with.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import asyncpg

from infra.db import job_cancel
from infra.results import Usage
from infra.settings import Settings
from infra.transient import DEPENDENCY_DOWN

log = logging.getLogger("turnout.jobs")

CANCEL_POLL_S = 0.25  # how late a running job notices its cancel at most (plus a statement)


class CancelRequested(Exception):
    """A client asked to cancel this job; the runner ends it `cancelled`."""


class CancelWatch:
    def __init__(self, pool: asyncpg.Pool, job_id: str, *, poll_s: float = CANCEL_POLL_S) -> None:
        self.pool = pool
        self.job_id = job_id
        self.poll_s = poll_s
        self.requested = asyncio.Event()

    async def watch(self) -> None:
        """Returns once the cancel is requested (run as a task beside the routing)."""
        while not self.requested.is_set():
            await asyncio.sleep(self.poll_s)
            try:
                async with self.pool.acquire() as conn:
                    if await job_cancel.cancel_requested(conn, self.job_id):
                        self.requested.set()
            except DEPENDENCY_DOWN as exc:  # the next poll tries again; the job goes on meanwhile
                log.warning("job %s: cancel check failed: %s", self.job_id, exc)

    def raise_if_requested(self) -> None:
        if self.requested.is_set():
            raise CancelRequested(self.job_id)


class UsageSoFar:
    """The LLM usage a job's `llm_round` events reported (what a cancelled job had used), priced
    as the router model's calls."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.usage = Usage()

    def observe(self, kind: str, data: dict[str, Any]) -> None:
        if kind != "llm_round":
            return
        given, taken = int(data.get("inputTokens") or 0), int(data.get("outputTokens") or 0)
        self.usage.add_cost(self.settings.llm_cost_usd(self.settings.llm_router_model, given, taken))
        self.usage.llm_calls += 1
        self.usage.input_tokens += given
        self.usage.output_tokens += taken
        self.usage.total_tokens += given + taken
