"""Request and response documents of the job API (camelCase on the wire, with OpenAPI examples).

The job document itself (`JobDocument`, also the webhook payload) is a shared contract:
infra/job_document.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from infra.db.webhooks import Attempt, Delivery, DeliveryStatus, Endpoint, RecoverableStatus
from infra.pages import PageSource
from infra.results import Language, QuestionResult, WireModel


class QuestionRequest(WireModel):
    """A question for the router. Unknown fields are rejected, and so is a value of another JSON
    type (`"pageSize": "5"` or `true` is a 422, not a 5 or a 1)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
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
    previous_job_id: str | None = Field(
        None, min_length=1, max_length=64,
        description="A follow-up: the job (of this key) it continues; filter-only changes run with no LLM call",
    )
    conversation_id: str | None = Field(
        None, min_length=1, max_length=64,
        description="A follow-up of the newest job of this conversation (every job returns its conversationId)",
    )
    priority: Literal["interactive", "batch"] = Field(
        "interactive",
        description="batch: work nobody waits for; it yields to interactive jobs on the router queue and "
        "among this key's jobs waiting for a slot (docs/api.md \"Fair shares and priorities\")",
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


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


class EndpointDocument(WireModel):
    """A webhook endpoint: one API key's webhooks to one origin, and how it is doing."""

    id: int
    origin: str = Field(description="scheme://host[:port] of the webhook URLs it covers")
    state: Literal["enabled", "disabled"]
    consecutive_failures: int
    failing_since: datetime | None = Field(description="First failure of the current streak")
    last_failure_at: datetime | None
    last_success_at: datetime | None
    disabled_at: datetime | None
    disabled_reason: str | None
    created_at: datetime

    @classmethod
    def from_endpoint(cls, e: Endpoint) -> EndpointDocument:
        return cls(
            id=e.id, origin=e.origin, state="disabled" if e.disabled_at else "enabled",
            consecutive_failures=e.consecutive_failures, failing_since=e.failing_since,
            last_failure_at=e.last_failure_at, last_success_at=e.last_success_at, disabled_at=e.disabled_at,
            disabled_reason=e.disabled_reason, created_at=e.created_at,
        )


class EndpointList(WireModel):
    items: list[EndpointDocument]


class RecoverRequest(WireModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid",
        json_schema_extra={"examples": [{"since": "2025-01-01T00:00:00Z", "status": "dead"}]},
    )

    since: datetime = Field(description="Deliveries created at or after this time (ISO 8601 with a zone)")
    status: RecoverableStatus | None = Field(None, description="dead or disabled; both when omitted")

    @field_validator("since")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("since needs a time zone (e.g. 2025-01-01T00:00:00Z)")
        return value


class RecoverResult(WireModel):
    requeued: list[int] = Field(description="Delivery ids queued again (each keeps its webhook-id)")
    skipped_disabled: int = Field(description="Matching deliveries left alone: their endpoint is still disabled")


class SecretRotation(WireModel):
    secret: str = Field(description="The new webhook secret (whsec_ + base64 of 32 bytes); shown once")
    previous_valid_until: datetime = Field(description="Until then every delivery carries a second signature "
                                           "made with the previous secret")


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
        400: "Unparsable request: a body that cannot be decoded (not UTF-8), or a Content-Length that is not a number",
        401: "Missing or unknown API key",
        403: "The route needs an admin key",
        404: "No such job for this key",
        409: "The job's state does not allow this",
        413: "Request body too large",
        422: "Invalid request",
        429: "Too many submissions (`rate_limited`), or the key's daily or monthly budget is spent "
             "(`budget_exceeded`: `details.resetAt` says when it resets); see Retry-After",
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


WebhookStatusFilter = Literal["pending", "delivered", "dead", "disabled"]
