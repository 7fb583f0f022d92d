"""`POST /v1/jobs/{id}/feedback`: a rating of a job (issue 28), one per key and job, replaceable."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path
from pydantic import ConfigDict, Field, field_validator

from api.deps import CurrentKey, Pool, SettingsDep, own_job
from api.errors import ApiError
from api.schemas import error_responses
from infra.db import feedback as feedback_db
from infra.job_document import JobDocument
from infra.results import WireModel
from infra.text import squash_controls

router = APIRouter(prefix="/v1/jobs", tags=["feedback"])

COMMENT_MAX_CHARS = 2_000
JobId = Annotated[str, Path(min_length=1, max_length=64, description="The id returned by POST /v1/questions")]


class FeedbackRequest(WireModel):
    model_config = ConfigDict(extra="forbid", strict=True,
                              json_schema_extra={"examples": [{"rating": "down", "comment": "missed the 2024 post"}]})

    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=COMMENT_MAX_CHARS)

    @field_validator("comment")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        text = squash_controls(value) if value is not None else None
        return text or None


@router.post("/{job_id}/feedback", response_model=JobDocument, summary="Rate a job",
             responses=error_responses(401, 404, 409, 422))
async def rate_job(job_id: JobId, body: FeedbackRequest, key: CurrentKey, pool: Pool,
                   settings: SettingsDep) -> JobDocument:
    """Rate an ended job up or down, with an optional comment. Sending it again replaces the
    rating. Returns the job document with its `feedback`. Another key's job is a 404."""
    if not (await own_job(pool, key, job_id)).status.is_final:
        raise ApiError(409, "job_not_finished", f"job {job_id} has not ended yet; rate it once it has", {"jobId": job_id})
    async with pool.acquire() as conn:
        job = await feedback_db.rate_job(conn, job_id, api_key_id=key.id, rating=body.rating, comment=body.comment)
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id} for this key")
    return JobDocument.from_row(job, base_url=settings.public_base_url)
