"""Admin: bulk re-embedding runs (SPEC §10). Start one, watch its progress, list recent ones, cancel.

The API only plans runs and sends their batches to the ``embeddings`` queue; it never opens
the vector store (Qdrant Edge belongs to the vector worker).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from api.deps import AdminKey, Pool, SettingsDep
from api.errors import ApiError
from api.schemas import error_responses
from infra.db import reembed as runs_db
from infra.results import Language
from retrieval.reembed import ReembedError, RunConflict, run_document
from workers.reembed import start_reembed_run

router = APIRouter(prefix="/v1/admin/reembed", tags=["admin"])

RunId = Annotated[str, Path(min_length=1, max_length=64, description="The id returned by POST /v1/admin/reembed")]


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ReembedRequest(_Wire):
    """All articles when empty; or one language; or given article ids (localization or story ids)."""

    model_config = ConfigDict(strict=True)  # a value of another JSON type is a 422, never coerced

    language: Language | None = None
    ids: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, min_length=1, max_length=50_000
    )
    model: str | None = Field(default=None, min_length=1, max_length=200, description="default: the configured model")


class ReembedRun(_Wire):
    id: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    model: str
    dimension: int | None
    collection: str
    scope: dict[str, Any]
    total: int = Field(description="articles (localizations) in the run")
    done: int
    failed: int
    chunks_embedded: int
    chunks_skipped: int = Field(description="unchanged chunks whose vectors were copied, not re-embedded")
    batches: int
    pending_batches: int
    rate_per_s: float | None = Field(description="articles per second so far")
    eta_s: float | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class ReembedRunList(_Wire):
    runs: list[ReembedRun]


def _document(run: runs_db.Run) -> ReembedRun:
    return ReembedRun.model_validate(run_document(run))


async def _load(pool: Pool, run_id: str) -> runs_db.Run:
    run = await runs_db.get_run(pool, run_id)
    if run is None:
        raise ApiError(404, "not_found", f"no re-embedding run {run_id}")
    return run


@router.post("", status_code=202, response_model=ReembedRun, response_model_by_alias=True,
             summary="Start a re-embedding run", responses=error_responses(400, 401, 403, 409, 413))
async def start_run(
    body: ReembedRequest, pool: Pool, settings: SettingsDep, response: Response, _: AdminKey
) -> ReembedRun:
    """Plans the run (a new collection version), enqueues its batches and returns at once;
    poll `GET /v1/admin/reembed/{id}` for progress. One run at a time (409 otherwise)."""
    try:
        run_id = await start_reembed_run(
            pool, language=body.language, ids=body.ids, model=body.model, settings=settings
        )
    except RunConflict as exc:
        raise ApiError(409, "reembed_in_progress", f"re-embedding run {exc.run_id} is still in progress; "
                       "wait for it or cancel it first", {"runId": exc.run_id}) from None
    except ReembedError as exc:
        raise ApiError(422, "invalid_request", f"{exc.field}: {exc.message}",
                       [{"field": exc.field, "message": exc.message}]) from None
    response.headers["Location"] = f"/v1/admin/reembed/{run_id}"
    return _document(await _load(pool, run_id))


@router.get("", response_model=ReembedRunList, response_model_by_alias=True, summary="Recent re-embedding runs",
            responses=error_responses(401, 403))
async def list_runs(
    pool: Pool, _: AdminKey, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> ReembedRunList:
    return ReembedRunList(runs=[_document(r) for r in await runs_db.list_runs(pool, limit=limit)])


@router.get("/{run_id}", response_model=ReembedRun, response_model_by_alias=True,
            summary="A re-embedding run's progress", responses=error_responses(401, 403, 404))
async def get_run(run_id: RunId, pool: Pool, _: AdminKey) -> ReembedRun:
    """done/total (articles), chunks embedded and skipped, rate and ETA."""
    return _document(await _load(pool, run_id))


@router.delete("/{run_id}", response_model=ReembedRun, response_model_by_alias=True,
               summary="Cancel an open re-embedding run", responses=error_responses(401, 403, 404, 409))
async def cancel_run(run_id: RunId, pool: Pool, _: AdminKey) -> ReembedRun:
    """Its remaining batches become no-ops; reads stay on the active version."""
    run = await _load(pool, run_id)
    if not await runs_db.cancel_run(pool, run_id):
        raise ApiError(409, "reembed_not_cancellable", f"run {run_id} has already ended ({run.status})",
                       {"status": run.status})
    return _document(await _load(pool, run_id))
