"""A job's audit trail as the router writes it: every event is stored as it happens, so a job
that fails half-way still leaves its rounds behind."""

from __future__ import annotations

from typing import Any

import asyncpg

from infra.db.audit import AuditEvent, insert_audit_events
from router.hooks import Narrator


class AuditTrail:
    """Events for one routing job. Without a pool (the eval harness) they stay in memory only.
    With a `Narrator` (the job runner's journal) rows are written in the background, in order; the
    runner waits for it before the job's final state."""

    def __init__(self, pool: asyncpg.Pool | None, job_id: str | None, journal: Narrator | None = None) -> None:
        self.pool = pool
        self.job_id = job_id
        self.journal = journal
        self.events: list[AuditEvent] = []

    async def record(self, kind: Any, **values: Any) -> AuditEvent:
        event = AuditEvent(kind=kind, job_id=self.job_id, **values)
        self.events.append(event)
        if self.journal is not None:
            self.journal.audit(event)
        elif self.pool is not None:
            await insert_audit_events(self.pool, [event])
        return event
