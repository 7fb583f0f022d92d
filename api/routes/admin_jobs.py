"""Admin: any key's job with its event timeline (the dashboard's jobs view), and bulk retry runs:
retry every finished job matching the list filters, tracked with progress (like re-embedding
runs). The API stores the run and sends its first batch; the maintenance worker retries batch by
batch (workers/tasks/job_upkeep.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response
from pydantic import Field

from api.deps import AdminKey, Pool, Redis, SettingsDep
from api.errors import ApiError
from api.job_query import JobFilters
from api.schemas import error_responses
from api.visibility import visible_job
from infra.db import job_retry_runs as runs_db
from infra.db.job_events import events_after
from infra.db.jobs import get_job
from infra.job_document import JobDocument
from infra.results import WireModel
from workers.job_retries import start_retry_run

router = APIRouter(prefix="/v1/admin/jobs", tags=["admin"])
TIMELINE_MAX = 1000  # events shown; a long streamed answer has one per chunk

RunId = Annotated[str, Path(min_length=1, max_length=64, description="The id returned by POST /v1/admin/jobs/retry-runs")]


class RetryRunRequest(JobFilters):
    """The list filters of GET /v1/jobs (`apiKeyId` default: every key's jobs), and `force`."""

    force: bool = Field(False, description="Retry also jobs retried before (each gets another retry)")


class RetryRunDocument(WireModel):
    id: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    filters: dict[str, Any] = Field(description="As applied; `createdBefore` bounded by the run's start")
    force: bool
    total: int = Field(description="Jobs matching the filters when the run started")
    done: int = Field(description="Jobs retried so far (a new retry, or the one it already had)")
    skipped: int = Field(description="Matching jobs not finished (queued or running): not retried")
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def from_run(cls, run: runs_db.RetryRun) -> RetryRunDocument:
        return cls(id=run.id, status=run.status, filters=run.filters, force=run.force,  # type: ignore[arg-type]
                   total=run.total, done=run.done, skipped=run.skipped, error=run.error, created_at=run.created_at,
                   started_at=run.started_at, finished_at=run.finished_at)


class RetryRunList(WireModel):
    runs: list[RetryRunDocument]


@router.post("/retry-runs", status_code=202, response_model=RetryRunDocument, summary="Retry the jobs matching filters",
             responses=error_responses(400, 401, 403, 413))
async def start_run(body: RetryRunRequest, pool: Pool, settings: SettingsDep, response: Response,
                    key: AdminKey) -> RetryRunDocument:
    """Counts the matching jobs, returns at once; poll `GET /v1/admin/jobs/retry-runs/{id}` for
    `done`/`total`. Each job is retried as by `POST /v1/jobs/{id}/retry` (idempotent unless
    `force`), so a job matched by two runs is retried once."""
    job_filter = body.model_copy(update={"api_key_id": body.api_key_id or "*"}).for_key(key)
    run = await start_retry_run(pool, settings, admin_key_id=key.id, filters=job_filter, force=body.force)
    response.headers["Location"] = f"/v1/admin/jobs/retry-runs/{run.id}"
    return RetryRunDocument.from_run(run)


@router.get("/retry-runs", response_model=RetryRunList, summary="Recent bulk retry runs", responses=error_responses(401, 403))
async def list_runs(pool: Pool, _: AdminKey, limit: Annotated[int, Query(ge=1, le=100, description="Runs, newest first")] = 20
                    ) -> RetryRunList:
    async with pool.acquire() as conn:
        return RetryRunList(runs=[RetryRunDocument.from_run(r) for r in await runs_db.list_runs(conn, limit=limit)])


@router.get("/retry-runs/{run_id}", response_model=RetryRunDocument, summary="A bulk retry run's progress",
            responses=error_responses(401, 403, 404))
async def get_run(run_id: RunId, pool: Pool, _: AdminKey) -> RetryRunDocument:
    async with pool.acquire() as conn:
        run = await runs_db.get_run(conn, run_id)
    if run is None:
        raise ApiError(404, "not_found", f"no bulk retry run {run_id}")
    return RetryRunDocument.from_run(run)


class TimelineEvent(WireModel):
    id: int
    kind: str = Field(description="As on GET /v1/jobs/{id}/events")
    data: dict[str, Any]
    at: datetime


class AdminJobView(WireModel):
    """A job of any key with its events, oldest first."""

    api_key_id: str | None
    job: JobDocument
    events: list[TimelineEvent]
    events_truncated: bool = Field(description=f"More than {TIMELINE_MAX} events: the first ones are shown")


@router.get("/{job_id}", response_model=AdminJobView, summary="Any key's job and its event timeline",
            responses=error_responses(401, 403, 404))
async def job_view(
    job_id: Annotated[str, Path(min_length=1, max_length=64, description="Any key's job id")], pool: Pool, redis: Redis, settings: SettingsDep,
    _: AdminKey,
) -> AdminJobView:
    async with pool.acquire() as conn:
        job = await get_job(conn, job_id)
        events = await events_after(conn, job_id, limit=TIMELINE_MAX + 1) if job is not None else []
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id}")
    document = JobDocument.from_row(await visible_job(pool, redis, settings, job), base_url=settings.public_base_url)
    return AdminJobView(
        api_key_id=job.api_key_id, job=document, events_truncated=len(events) > TIMELINE_MAX,
        events=[TimelineEvent(id=e.id, kind=e.kind, data=e.data, at=e.created_at) for e in events[:TIMELINE_MAX]],
    )
