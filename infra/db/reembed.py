"""Re-embedding runs and their batches (Postgres is the truth for progress and resumption),
and the localization rows a run reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import asyncpg

BatchMode = Literal["embed", "copy"]
OPEN_STATUSES = ("queued", "running")


class RunConflict(Exception):
    """Another run is queued or running (one run at a time)."""

    def __init__(self, run_id: str | None) -> None:
        super().__init__(f"re-embedding run {run_id} is still in progress")
        self.run_id = run_id


@dataclass(frozen=True)
class Run:
    id: str
    status: str
    scope: dict[str, Any]
    model: str
    dimension: int | None
    collection: str
    source_collection: str | None
    total: int
    done: int
    failed: int
    skipped: int
    embedded: int
    error: str | None
    created_at: datetime
    started_at: datetime | None
    updated_at: datetime
    finished_at: datetime | None
    pending_batches: int
    batches: int


@dataclass(frozen=True)
class Batch:
    run_id: str
    batch_no: int
    mode: BatchMode
    localization_ids: list[str]
    status: str


@dataclass(frozen=True)
class LocalizationText:
    id: str
    article_id: str
    language: str
    title: str
    summary: str
    body_text: str
    body: str = ""  # as imported: chunking re-reads it with the current markup parser
    body_format: str = "html"


_RUN_SELECT = """
    SELECT r.id, r.status, r.scope, r.model, r.dimension, r.collection, r.source_collection, r.total,
           r.done, r.failed, r.skipped, r.embedded, r.error, r.created_at, r.started_at, r.updated_at,
           r.finished_at,
           (SELECT count(*) FROM reembed_batches b WHERE b.run_id = r.id AND b.status = 'pending')
               AS pending_batches,
           (SELECT count(*) FROM reembed_batches b WHERE b.run_id = r.id) AS batches
    FROM reembed_runs r
"""


def _run(row: asyncpg.Record) -> Run:
    return Run(**dict(row))


# ---- selecting what a run covers ----
async def visible_localization_ids(
    conn: asyncpg.Connection, *, language: str | None = None, ids: Sequence[str] | None = None
) -> list[str]:
    """Published, not hidden localizations matching the filters, by id. ``ids`` match a
    localization id or its story's id."""
    rows = await conn.fetch(
        """
        SELECT id FROM localizations
        WHERE published AND NOT hidden
          AND ($1::text IS NULL OR language = $1)
          AND ($2::text[] IS NULL OR id = ANY($2) OR article_id = ANY($2))
        ORDER BY id
        """,
        language, list(ids) if ids is not None else None,
    )
    return [r["id"] for r in rows]


async def unknown_ids(conn: asyncpg.Connection, ids: Sequence[str]) -> list[str]:
    """Of ``ids``, those that are neither a localization id nor a story id."""
    rows = await conn.fetch(
        """
        SELECT x FROM unnest($1::text[]) AS x
        WHERE NOT EXISTS (SELECT 1 FROM localizations l WHERE l.id = x OR l.article_id = x)
        ORDER BY x
        """,
        list(ids),
    )
    return [r["x"] for r in rows]


async def fetch_localizations(conn: asyncpg.Connection | asyncpg.Pool, ids: Sequence[str]) -> list[LocalizationText]:
    """The visible ones among ``ids`` (hidden or deleted since the run was planned drop out)."""
    rows = await conn.fetch(
        """
        SELECT id, article_id, language, title, summary, body_text, body, body_format FROM localizations
        WHERE id = ANY($1::text[]) AND published AND NOT hidden
        ORDER BY id
        """,
        list(ids),
    )
    return [LocalizationText(**dict(r)) for r in rows]


# ---- runs ----
async def create_run(
    conn: asyncpg.Connection,
    *,
    run_id: str,
    model: str,
    dimension: int,
    collection: str,
    source_collection: str | None,
    scope: dict[str, Any],
    batches: Sequence[tuple[BatchMode, Sequence[str]]],
) -> None:
    """The run row and all its batches, in one transaction; raises RunConflict if a run is open."""
    total = sum(len(ids) for _, ids in batches)
    try:
        async with conn.transaction():
            await conn.execute(
                """
                INSERT INTO reembed_runs (id, model, dimension, collection, source_collection, scope, total)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                """,
                run_id, model, dimension, collection, source_collection, scope, total,
            )
            await conn.executemany(
                "INSERT INTO reembed_batches (run_id, batch_no, mode, localization_ids) VALUES ($1, $2, $3, $4)",
                [(run_id, no, mode, list(ids)) for no, (mode, ids) in enumerate(batches)],
            )
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name != "reembed_runs_one_open":
            raise
        raise RunConflict(await open_run_id(conn)) from exc


async def open_run_id(conn: asyncpg.Connection | asyncpg.Pool) -> str | None:
    value = await conn.fetchval(
        "SELECT id FROM reembed_runs WHERE status = ANY($1::text[]) ORDER BY created_at LIMIT 1", list(OPEN_STATUSES)
    )
    return str(value) if value is not None else None


async def get_run(conn: asyncpg.Connection | asyncpg.Pool, run_id: str) -> Run | None:
    row = await conn.fetchrow(_RUN_SELECT + " WHERE r.id = $1", run_id)
    return _run(row) if row else None


async def list_runs(conn: asyncpg.Connection | asyncpg.Pool, *, limit: int = 20) -> list[Run]:
    rows = await conn.fetch(_RUN_SELECT + " ORDER BY r.created_at DESC, r.id DESC LIMIT $1", limit)
    return [_run(r) for r in rows]


async def mark_running(conn: asyncpg.Connection | asyncpg.Pool, run_id: str) -> None:
    await conn.execute(
        """
        UPDATE reembed_runs SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now()
        WHERE id = $1 AND status = 'queued'
        """,
        run_id,
    )


async def finish_run(conn: asyncpg.Connection, run_id: str) -> bool:
    """Open run with no pending batch → succeeded. False if it was not open (already final)."""
    result: str = await conn.execute(
        """
        UPDATE reembed_runs SET status = 'succeeded', finished_at = now(), updated_at = now()
        WHERE id = $1 AND status = ANY($2::text[])
          AND NOT EXISTS (SELECT 1 FROM reembed_batches WHERE run_id = $1 AND status <> 'done')
        """,
        run_id, list(OPEN_STATUSES),
    )
    return result == "UPDATE 1"


async def fail_run(conn: asyncpg.Connection | asyncpg.Pool, run_id: str, error: str) -> bool:
    result: str = await conn.execute(
        """
        UPDATE reembed_runs SET status = 'failed', error = $2, finished_at = now(), updated_at = now()
        WHERE id = $1 AND status = ANY($3::text[])
        """,
        run_id, error[:2000], list(OPEN_STATUSES),
    )
    return result == "UPDATE 1"


async def cancel_run(conn: asyncpg.Connection | asyncpg.Pool, run_id: str) -> bool:
    result: str = await conn.execute(
        """
        UPDATE reembed_runs SET status = 'cancelled', finished_at = now(), updated_at = now()
        WHERE id = $1 AND status = ANY($2::text[])
        """,
        run_id, list(OPEN_STATUSES),
    )
    return result == "UPDATE 1"


async def stale_open_runs(conn: asyncpg.Connection | asyncpg.Pool, *, stale_after_s: float) -> list[str]:
    """Open runs without progress for ``stale_after_s`` (a worker died, or messages were lost)."""
    rows = await conn.fetch(
        """
        SELECT id FROM reembed_runs
        WHERE status = ANY($1::text[]) AND updated_at <= now() - make_interval(secs => $2)
        ORDER BY created_at
        """,
        list(OPEN_STATUSES), float(stale_after_s),
    )
    return [r["id"] for r in rows]


async def touch_run(conn: asyncpg.Connection | asyncpg.Pool, run_id: str) -> None:
    await conn.execute("UPDATE reembed_runs SET updated_at = now() WHERE id = $1", run_id)


# ---- batches ----
async def get_batch(conn: asyncpg.Connection | asyncpg.Pool, run_id: str, batch_no: int) -> Batch | None:
    row = await conn.fetchrow(
        "SELECT run_id, batch_no, mode, localization_ids, status FROM reembed_batches "
        "WHERE run_id = $1 AND batch_no = $2",
        run_id, batch_no,
    )
    return Batch(**dict(row)) if row else None


async def pending_batch_numbers(conn: asyncpg.Connection | asyncpg.Pool, run_id: str) -> list[int]:
    rows = await conn.fetch(
        "SELECT batch_no FROM reembed_batches WHERE run_id = $1 AND status = 'pending' ORDER BY batch_no", run_id
    )
    return [r["batch_no"] for r in rows]


async def complete_batch(
    conn: asyncpg.Connection, run_id: str, batch_no: int, *, localizations: int, embedded: int, copied: int
) -> bool:
    """Mark a pending batch done and add its counts to the run, atomically. False (and no
    counting) when it was already done: a redelivered or resumed batch counts once."""
    async with conn.transaction():
        result: str = await conn.execute(
            """
            UPDATE reembed_batches SET status = 'done', chunks_written = $3, chunks_skipped = $4,
                   finished_at = now()
            WHERE run_id = $1 AND batch_no = $2 AND status = 'pending'
            """,
            run_id, batch_no, embedded, copied,
        )
        if result != "UPDATE 1":
            return False
        await conn.execute(
            """
            UPDATE reembed_runs SET done = done + $2, embedded = embedded + $3, skipped = skipped + $4,
                   updated_at = now()
            WHERE id = $1
            """,
            run_id, localizations, embedded, copied,
        )
    return True


async def fail_batch(conn: asyncpg.Connection, run_id: str, batch_no: int, *, localizations: int, error: str) -> None:
    async with conn.transaction():
        result: str = await conn.execute(
            "UPDATE reembed_batches SET status = 'failed', error = $3, finished_at = now() "
            "WHERE run_id = $1 AND batch_no = $2 AND status = 'pending'",
            run_id, batch_no, error[:2000],
        )
        if result == "UPDATE 1":
            await conn.execute(
                "UPDATE reembed_runs SET failed = failed + $2, updated_at = now() WHERE id = $1",
                run_id, localizations,
            )


async def expected_points(conn: asyncpg.Connection | asyncpg.Pool, run_id: str) -> int:
    """Chunks the finished batches wrote: what the new collection must hold, exactly."""
    value = await conn.fetchval(
        "SELECT COALESCE(sum(chunks_written + chunks_skipped), 0) FROM reembed_batches "
        "WHERE run_id = $1 AND status = 'done'",
        run_id,
    )
    return int(value)


async def try_lock_run(conn: asyncpg.Connection, run_id: str) -> bool:
    """Transaction-scoped advisory lock so one process finalizes a run; released when the caller's
    transaction ends (pooled connections carry no session state, see infra/db/pool.py)."""
    if not conn.is_in_transaction():
        raise RuntimeError("try_lock_run needs a transaction: the lock lasts as long as it")
    return bool(await conn.fetchval("SELECT pg_try_advisory_xact_lock(hashtext('reembed:' || $1))", run_id))
