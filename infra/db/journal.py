"""The SQL of a job's narration (audit rows and progress events) written in order: one batch in one
statement (`Narration`), or a row on its own. The write-behind journal that queues the rows is the
job runner's (workers/journal.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import asyncpg

from infra.db.audit import AUDIT_COLUMNS, AuditEvent, audit_row, insert_audit_arrays, insert_audit_events
from infra.db.job_events import add_progress_event

log = logging.getLogger("turnout.jobs")


@dataclass(frozen=True)
class EventRow:
    job_id: str
    kind: str
    data: dict[str, Any]

    @property
    def label(self) -> str:
        return f"event {self.kind}"


@dataclass(frozen=True)
class AuditRow:
    event: AuditEvent

    @property
    def label(self) -> str:
        return f"audit row {self.event.kind}"


Row = EventRow | AuditRow



@dataclass(frozen=True)
class Narration:
    """Journal rows to write in one statement, as its parameters (from `first`: the events' job
    ids, kinds and data, then one array per audit column): `unnest ... WITH ORDINALITY ... ORDER
    BY` keeps each table's rows in the order they were added, so their ids are too."""

    rows: tuple[Row, ...]

    def __bool__(self) -> bool:
        return bool(self.rows)

    def parameters(self) -> list[list[Any]]:
        events = [r for r in self.rows if isinstance(r, EventRow)]
        audits = [audit_row(r.event) for r in self.rows if isinstance(r, AuditRow)]
        columns = [list(column) for column in zip(*audits, strict=True)] if audits else [[] for _ in AUDIT_COLUMNS]
        return [[e.job_id for e in events], [e.kind for e in events], [e.data for e in events], *columns]

    @staticmethod
    def event_rows(first: int) -> str:
        """A SELECT of the events (job_id, kind, data, n), n their order."""
        return (f"SELECT job_id, kind, data, n FROM unnest(${first}::text[], ${first + 1}::text[], "  # noqa: S608
                f"${first + 2}::jsonb[]) WITH ORDINALITY AS e(job_id, kind, data, n)")

    @staticmethod
    def insert_audits(first: int) -> str:
        """An INSERT of the audit rows, in order (their arrays follow the events' three)."""
        return insert_audit_arrays(first + 3)


# A batch in one statement: one round trip, one commit that does not wait for the WAL flush (as
# each row had on its own).
_INSERT_BATCH = f"""
    WITH events AS (
        INSERT INTO job_events (job_id, kind, data) SELECT job_id, kind, data FROM ({Narration.event_rows(1)}) AS e
        ORDER BY n
    ), audits AS ({Narration.insert_audits(1)})
    SELECT set_config('synchronous_commit', 'off', true)
"""  # noqa: S608 (constant fragments)


async def insert_batch(conn: asyncpg.Connection, rows: list[Row]) -> None:
    await conn.execute(_INSERT_BATCH, *Narration(tuple(rows)).parameters())


async def insert_one(conn: asyncpg.Connection, row: Row) -> None:
    if isinstance(row, EventRow):
        await add_progress_event(conn, row.job_id, row.kind, row.data)
    else:
        await insert_audit_events(conn, [row.event])
