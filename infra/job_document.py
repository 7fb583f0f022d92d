"""The job document (SPEC §8): what `GET /v1/jobs/{id}` returns, and the webhook payload (a
receiver gets exactly that). A shared contract of the API and the webhook worker."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from infra.db.jobs import JobRow
from infra.results import Language, QuestionResult, Usage, WireModel
from infra.status import JobStatus

SEARCH_RESULT_EXAMPLE: dict[str, Any] = {
    "resultType": "SearchResult",
    "status": "answered",
    "answer": None,
    "answerLanguage": "en",
    "answerKind": None,
    "sources": [],
    "articles": {
        "items": [
            {
                "id": "c6eec0d14bb9fb8e",
                "articleId": "2001-01-18-stable-snapshot",
                "language": "en",
                "title": "Stable snapshot is available",
                "summary": "A tarball of the latest stable tree.",
                "createdAt": "2001-01-18T00:00:00Z",
                "url": None,
                "slug": "stable-snapshot-is-available",
            }
        ],
        "totalItems": 41,
        "page": 1,
        "pageSize": 20,
        "totalPages": 3,
    },
    "search": {
        "text": "snapshot",
        "language": "en",
        "dateFrom": None,
        "dateTo": None,
        "sort": "newest",
        "page": 1,
        "pageSize": 20,
        "adjustments": [],
    },
    "question": None,
    "coverageLimited": False,
    "routedBy": "llm",
    "tool": "SearchArticles",
    "message": None,
    "usage": {"llmCalls": 1, "inputTokens": 812, "outputTokens": 31, "totalTokens": 843},
}


class JobLinks(WireModel):
    self: str
    events: str
    pages: str = Field(description="URL template; replace {n} with a page number")
    cancel: str


class JobError(WireModel):
    code: str = Field(description="Stable machine-readable reason, e.g. limit_max_rounds, llm_unavailable")
    message: str


class JobDocument(WireModel):
    """A job: its state, and when it is done its result (SPEC §8) or its error."""

    model_config = ConfigDict(  # camelCase, extra="forbid": from WireModel
        json_schema_extra={
            "examples": [
                {
                    "id": "job_q8Vd2Vt3rXyJ3Y0aHq2m1w",
                    "status": "succeeded",
                    "question": "snapshot releases in English",
                    "answerLanguage": None,
                    "pageSize": None,
                    "webhookUrl": None,
                    "attempts": 1,
                    "createdAt": "2025-01-01T12:00:00Z",
                    "updatedAt": "2025-01-01T12:00:02Z",
                    "startedAt": "2025-01-01T12:00:00Z",
                    "finishedAt": "2025-01-01T12:00:02Z",
                    "result": SEARCH_RESULT_EXAMPLE,
                    "usage": {"llmCalls": 1, "inputTokens": 812, "outputTokens": 31, "totalTokens": 843},
                    "error": None,
                    "links": {
                        "self": "/v1/jobs/job_q8Vd2Vt3rXyJ3Y0aHq2m1w",
                        "events": "/v1/jobs/job_q8Vd2Vt3rXyJ3Y0aHq2m1w/events",
                        "pages": "/v1/jobs/job_q8Vd2Vt3rXyJ3Y0aHq2m1w/pages/{n}",
                        "cancel": "/v1/jobs/job_q8Vd2Vt3rXyJ3Y0aHq2m1w",
                    },
                }
            ]
        },
    )

    id: str
    status: JobStatus
    question: str
    answer_language: Language | None
    language: Language | None = Field(None, description="The client's default articles' language, if it passed one")
    page_size: int | None
    webhook_url: str | None
    attempts: int = Field(description="How many times a worker started this job")
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: QuestionResult | None = Field(description="Present when status is succeeded")
    usage: Usage = Field(description="LLM calls and tokens spent on this job")
    error: JobError | None = Field(description="Present when status is failed")
    links: JobLinks

    @classmethod
    def from_row(cls, job: JobRow, *, base_url: str | None = None) -> JobDocument:
        """`base_url` (settings.public_base_url) makes the links absolute; relative without it."""
        path = f"{(base_url or '').rstrip('/')}/v1/jobs/{job.id}"
        return cls(
            id=job.id,
            status=job.status,
            question=job.question,
            answer_language=job.answer_language,  # type: ignore[arg-type]  # checked on the way in
            language=job.language,  # type: ignore[arg-type]  # checked on the way in
            page_size=job.page_size,
            webhook_url=job.webhook_url,
            attempts=job.attempts,
            created_at=job.created_at,
            updated_at=job.updated_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            result=QuestionResult.model_validate(job.result) if job.result else None,
            usage=Usage.model_validate(job.usage or {}),
            error=JobError.model_validate(job.error) if job.error else None,
            links=JobLinks(self=path, events=f"{path}/events", pages=f"{path}/pages/{{n}}", cancel=path),
        )


WebhookEventType = Literal["job.succeeded", "job.failed", "job.cancelled"]


class WebhookEvent(WireModel):
    """The body of a webhook (Standard Webhooks envelope): the event type, when it happened (the
    job's end), and the job document exactly as `GET /v1/jobs/{id}` returns it."""

    type: WebhookEventType
    timestamp: datetime
    data: JobDocument

    @classmethod
    def for_job(cls, job: JobRow, *, base_url: str | None = None) -> WebhookEvent:
        kind: WebhookEventType = f"job.{JobStatus(job.status).value}"  # type: ignore[assignment]  # final statuses only
        return cls(type=kind, timestamp=job.finished_at or job.updated_at, data=JobDocument.from_row(job, base_url=base_url))
