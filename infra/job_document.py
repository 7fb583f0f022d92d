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
    "usage": {"llmCalls": 1, "inputTokens": 812, "outputTokens": 31, "totalTokens": 843, "costUsd": 0.0001404},
}


class JobLinks(WireModel):
    self: str
    events: str
    pages: str = Field(description="URL template; replace {n} with a page number")
    cancel: str
    conversation: str | None = Field(None, description="The conversation this job belongs to (its chain of jobs)")
    feedback: str | None = Field(None, description="POST a rating of this job here")


class JobFeedback(WireModel):
    rating: Literal["up", "down"]
    comment: str | None = None
    rated_at: datetime


class JobError(WireModel):
    code: str = Field(description="Stable machine-readable reason, e.g. limit_max_rounds, llm_unavailable")
    message: str
    details: dict[str, Any] | None = Field(
        default=None,
        description="More about some codes: `budget_exceeded` has `period` (day|month), `unit` (usd|tokens), "
        "`limit`, `spent`, `needed` and `resetAt` (when the period rolls over, UTC)",
    )


class JobFields(WireModel):
    """What a job document and a listed job share: everything but the result."""

    id: str
    status: JobStatus
    question: str
    answer_language: Language | None
    language: Language | None = Field(None, description="The client's default articles' language, if it passed one")
    page_size: int | None
    webhook_url: str | None
    source: Literal["http", "mcp"] = Field("http", description="http: POST /v1/questions; mcp: an MCP tool call")
    attempts: int = Field(description="How many times a worker started this job")
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    usage: Usage = Field(description="LLM calls and tokens spent on this job")
    error: JobError | None = Field(description="Present when status is failed")
    retry_of: str | None = Field(None, description="The job this one retries (POST /v1/jobs/{id}/retry)")
    retries: list[str] = Field(default_factory=list, description="This job's retries, oldest first")
    conversation_id: str | None = Field(
        None, description="The conversation (its first job's id); pass it, or this job's id as previousJobId, "
        "with a follow-up question")
    previous_job_id: str | None = Field(None, description="The job this follow-up continues (None: a first question)")
    feedback: JobFeedback | None = Field(None, description="The rating given to this job, if any")
    cancel_requested: bool = Field(
        False, description="A cancel was asked for while the job ran; it ends `cancelled` at its next safe point "
        "(or with the outcome it reached first)",
    )
    priority: Literal["interactive", "batch"] = Field(
        "interactive", description="batch work yields to interactive work (docs/api.md \"Fair shares and priorities\")")
    parked: bool = Field(
        False, description="Queued, waiting for a slot: its key has TURNOUT_JOBS_PER_KEY_IN_FLIGHT jobs in flight; "
        "it is sent to a worker when one of them ends")
    links: JobLinks

    @staticmethod
    def fields_of(job: JobRow, base_url: str | None) -> dict[str, Any]:
        """`base_url` (settings.public_base_url) makes the links absolute; relative without it."""
        root = (base_url or "").rstrip("/")
        path = f"{root}/v1/jobs/{job.id}"
        conversation = job.conversation_id or job.id
        feedback = (JobFeedback(rating=job.feedback_rating, comment=job.feedback_comment,  # type: ignore[arg-type]
                                rated_at=job.feedback_at) if job.feedback_rating and job.feedback_at else None)
        return {
            "id": job.id, "status": job.status, "question": job.question,
            "answer_language": job.answer_language, "language": job.language,  # checked on the way in
            "page_size": job.page_size, "webhook_url": job.webhook_url, "source": job.source,
            "attempts": job.attempts, "created_at": job.created_at, "updated_at": job.updated_at,
            "started_at": job.started_at, "finished_at": job.finished_at,
            "usage": Usage.model_validate(job.usage or {}),
            "error": JobError.model_validate(job.error) if job.error else None,
            "retry_of": job.retry_of, "retries": list(job.retries),
            "conversation_id": conversation, "previous_job_id": job.previous_job_id, "feedback": feedback,
            "cancel_requested": job.cancel_requested_at is not None,
            "priority": job.priority.value, "parked": job.parked,
            "links": JobLinks(self=path, events=f"{path}/events", pages=f"{path}/pages/{{n}}", cancel=path,
                              conversation=f"{root}/v1/conversations/{conversation}", feedback=f"{path}/feedback"),
        }


class JobDocument(JobFields):
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
                    "source": "http",
                    "attempts": 1,
                    "createdAt": "2025-01-01T12:00:00Z",
                    "updatedAt": "2025-01-01T12:00:02Z",
                    "startedAt": "2025-01-01T12:00:00Z",
                    "finishedAt": "2025-01-01T12:00:02Z",
                    "result": SEARCH_RESULT_EXAMPLE,
                    "usage": {"llmCalls": 1, "inputTokens": 812, "outputTokens": 31, "totalTokens": 843, "costUsd": 0.0001404},
                    "error": None,
                    "retryOf": None,
                    "retries": [],
                    "cancelRequested": False,
                    "priority": "interactive",
                    "parked": False,
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

    result: QuestionResult | None = Field(description="Present when status is succeeded")

    @classmethod
    def from_row(cls, job: JobRow, *, base_url: str | None = None) -> JobDocument:
        """`base_url` (settings.public_base_url) makes the links absolute; relative without it."""
        return cls(**cls.fields_of(job, base_url), result=job.result)


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
