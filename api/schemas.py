"""Request and response documents of the job API (camelCase on the wire, with OpenAPI examples).

`JobDocument` is also the webhook payload: a receiver gets exactly what `GET /v1/jobs/{id}`
returns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from infra.db.jobs import JobRow
from infra.db.webhooks import Attempt, Delivery, DeliveryStatus
from infra.pages import PageSource
from infra.results import Language, QuestionResult, Usage, WireModel
from infra.status import JobStatus

_SEARCH_RESULT_EXAMPLE: dict[str, Any] = {
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


class QuestionRequest(WireModel):
    """A question for the router. Unknown fields are rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"question": "Find articles about Docker from last year"},
                {
                    "question": "Что писали о безопасности Ruby в немецких статьях?",
                    "answerLanguage": "ru",
                    "pageSize": 10,
                    "webhookUrl": "https://hooks.example.com/turnout",
                },
            ]
        },
    )

    question: str = Field(min_length=1, description="Free text in any language; at most TURNOUT_LIMIT_QUESTION_MAX_CHARS")
    answer_language: Language | None = Field(None, description="Language of the answer; default: the question's")
    language: Language | None = Field(
        None,
        description="The articles' language by default (e.g. the UI locale); default: the question's. "
        "A language the question names ('German articles') or 'in all languages' still wins",
    )
    page_size: int | None = Field(None, ge=1, description="Search page size (1..TURNOUT_LIMIT_PAGE_SIZE_MAX)")
    webhook_url: str | None = Field(
        None, max_length=2048, description="Receives the final job document (signed); public http(s) URLs only"
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


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

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
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
                    "result": _SEARCH_RESULT_EXAMPLE,
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


class PageDocument(WireModel):
    """Page n of a search or combined result. Everything but `articles` and `search.page` is the
    job's result unchanged (a combined answer and its sources included); no LLM is called."""

    job_id: str
    page: int
    source: PageSource = Field(description="cache: from the page cache; search: searched now with the stored filters")
    result: QuestionResult


class AttemptDocument(WireModel):
    attempt: int
    status_code: int | None
    error: str | None
    latency_ms: float | None
    created_at: datetime

    @classmethod
    def from_attempt(cls, a: Attempt) -> AttemptDocument:
        return cls(attempt=a.attempt, status_code=a.status_code, error=a.error, latency_ms=a.latency_ms,
                   created_at=a.created_at)


class DeliveryDocument(WireModel):
    """One job's webhook delivery. `status = dead` is a dead letter: retries ran out."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "id": 17,
                    "jobId": "job_q8Vd2Vt3rXyJ3Y0aHq2m1w",
                    "url": "https://hooks.example.com/turnout",
                    "status": "dead",
                    "attempts": 25,
                    "nextAttemptAt": "2025-01-02T12:00:00Z",
                    "lastStatusCode": 503,
                    "lastError": "HTTP 503",
                    "createdAt": "2025-01-01T12:00:02Z",
                    "deliveredAt": None,
                    "history": None,
                }
            ]
        },
    )

    id: int
    job_id: str
    url: str
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None
    history: list[AttemptDocument] | None = Field(None, description="Every attempt (single-delivery view only)")

    @classmethod
    def from_delivery(cls, d: Delivery, attempts: list[Attempt] | None = None) -> DeliveryDocument:
        return cls(
            id=d.id, job_id=d.job_id, url=d.url, status=d.status, attempts=d.attempts,
            next_attempt_at=d.next_attempt_at, last_status_code=d.last_status_code, last_error=d.last_error,
            created_at=d.created_at, delivered_at=d.delivered_at,
            history=[AttemptDocument.from_attempt(a) for a in attempts] if attempts is not None else None,
        )


class DeliveryList(WireModel):
    items: list[DeliveryDocument]
    next_before: int | None = Field(description="Pass as `before` for the next (older) page; null at the end")


class ErrorBody(WireModel):
    code: str
    message: str
    details: Any = None


class ErrorDocument(WireModel):
    """Every error: one shape."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"error": {"code": "not_found", "message": "no job job_x for this key"}}]},
    )

    error: ErrorBody


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries for the given error statuses (and 422, which any route with
    parameters can return), all in the one error shape."""
    text = {
        401: "Missing or unknown API key",
        403: "The route needs an admin key",
        404: "No such job for this key",
        409: "The job's state does not allow this",
        413: "Request body too large",
        422: "Invalid request",
        429: "Too many submissions; see Retry-After",
        503: "A required service is unavailable",
    }
    responses: dict[int | str, dict[str, Any]] = {
        s: {"model": ErrorDocument, "description": text.get(s, "Error")} for s in (*statuses, 422)
    }
    if 429 in statuses:
        responses[429]["headers"] = {
            "Retry-After": {"description": "Seconds until a submission is accepted again", "schema": {"type": "integer"}}
        }
    return responses


WebhookStatusFilter = Literal["pending", "delivered", "dead"]
