"""`POST /v1/questions`: accept a question as a durable job (the checks of a request here, the
submission itself in api/submission.py, shared with MCP)."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from fastapi import APIRouter, Header, Response

from api.deps import CurrentKey, State, own_job
from api.errors import ApiError
from api.long_poll import WAIT_MAX_S, preferred_wait, watch_until_final
from api.schemas import QuestionRequest, error_responses
from api.state import AppState
from api.submission import NewJob, submit
from api.visibility import visible_job
from infra.db import jobs as jobs_db
from infra.db.api_keys import ApiKey
from infra.job_document import JobDocument
from infra.settings import Settings
from infra.ssrf import UnsafeTarget, check_target
from infra.status import JobPriority

router = APIRouter(prefix="/v1", tags=["jobs"])

IDEMPOTENCY_KEY_MAX = 255
REPLAY_HEADER = "Idempotent-Replayed"


def request_hash(body: QuestionRequest) -> str:
    data = body.model_dump(mode="json", by_alias=True)
    for optional in ("language", "previousJobId", "conversationId"):
        if data.get(optional) is None:  # absent as before the field existed: stored hashes stay valid
            data.pop(optional, None)
    if data.get("priority") == JobPriority.INTERACTIVE.value:  # the default, as before the field existed
        data.pop("priority")
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _check_limits(body: QuestionRequest, settings: Settings) -> None:
    limits = settings.limits
    if len(body.question) > limits.question_max_chars:
        raise ApiError(
            422, "question_too_long",
            f"question: at most {limits.question_max_chars} characters, got {len(body.question)}",
            {"field": "question", "maxChars": limits.question_max_chars, "chars": len(body.question)},
        )
    if body.page_size is not None and body.page_size > limits.page_size_max:
        raise ApiError(
            422, "invalid_request", f"pageSize: at most {limits.page_size_max}, got {body.page_size}",
            {"field": "pageSize", "max": limits.page_size_max},
        )


async def _check_webhook(url: str, settings: Settings) -> None:
    try:
        await check_target(url, allow_private=settings.webhook_allow_private)
    except UnsafeTarget as exc:
        raise ApiError(422, "webhook_url_refused", f"webhookUrl: {exc}", {"field": "webhookUrl"}) from exc


def _check_replay(existing: jobs_db.JobRow, digest: str, response: Response) -> None:
    if existing.request_hash != digest:
        raise ApiError(
            409, "idempotency_key_reused",
            "this Idempotency-Key was already used with a different request body; use a new key",
            {"jobId": existing.id},
        )
    response.headers[REPLAY_HEADER] = "true"


def _new_job(body: QuestionRequest, digest: str, idempotency_key: str | None) -> NewJob:
    return NewJob(
        question=body.question, answer_language=body.answer_language, request_hash=digest,
        page_size=body.page_size, language=body.language, webhook_url=body.webhook_url,
        idempotency_key=idempotency_key, previous_job_id=body.previous_job_id, conversation_id=body.conversation_id,
        priority=JobPriority(body.priority),
    )


async def _replay(
    state: AppState, key: ApiKey, existing: jobs_db.JobRow, digest: str, response: Response, wait_s: float | None
) -> JobDocument:
    """The job an `Idempotency-Key` already made (a replay costs no submission)."""
    _check_replay(existing, digest, response)
    if wait_s and not existing.status.is_final:
        existing = await watch_until_final(
            state.job_events, existing.id, lambda: own_job(state.pool, key, existing.id), wait_s=wait_s
        )
    # A replay may come long after the job ended: its result is shown as visible now.
    shown = await visible_job(state.pool, state.redis, state.settings, existing)
    return _document(shown, response, state.settings, wait_s)


def _document(job: jobs_db.JobRow, response: Response, settings: Settings, wait_s: float | None) -> JobDocument:
    document = JobDocument.from_row(job, base_url=settings.public_base_url)
    response.headers["Location"] = document.links.self
    if wait_s is not None:
        response.headers["Preference-Applied"] = f"wait={wait_s:g}"
        if job.status.is_final:
            response.status_code = 200  # waited, and it is done: the job's outcome, not an acceptance
    return document


@router.post(
    "/questions",
    status_code=202,
    response_model=JobDocument,
    summary="Submit a question (returns a job)",
    responses={
        200: {"model": JobDocument, "description": "With `Prefer: wait=N`: the job ended within the wait"},
        **error_responses(400, 401, 404, 409, 413, 422, 429, 503),
    },
)
async def submit_question(
    body: QuestionRequest,
    response: Response,
    key: CurrentKey,
    state: State,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=IDEMPOTENCY_KEY_MAX,
            pattern=r"^[\x21-\x7e]+$",
            description="Same key + same body returns the same job; the same key with another body is a 409",
        ),
    ] = None,
    prefer: Annotated[
        str | None,
        Header(
            alias="Prefer",
            description=f"`wait=N` (RFC 7240): answer when the job ends, `200` with its outcome, or after N "
            f"seconds (at most {WAIT_MAX_S:g}) `202` as without it. Other preferences are ignored.",
            examples=["wait=20"],
        ),
    ] = None,
) -> JobDocument:
    """Queue a question. The job is stored before it is queued, so an accepted job is never lost.

    Poll `links.self` (`?waitS=` to long-poll), stream `links.events`, pass `webhookUrl` to be
    called when it ends, or send `Prefer: wait=N` to have this answer wait for the end.
    A replayed `Idempotency-Key` returns the original job with `Idempotent-Replayed: true`.
    """
    settings = state.settings
    _check_limits(body, settings)
    if body.webhook_url is not None:
        await _check_webhook(body.webhook_url, settings)
    digest = request_hash(body)
    wait_s = preferred_wait(prefer)
    if idempotency_key is not None:
        async with state.pool.acquire() as conn:
            existing = await jobs_db.find_by_idempotency_key(conn, key.id, idempotency_key)
        if existing is not None:  # a replay costs no submission
            return await _replay(state, key, existing, digest, response, wait_s)
    submitted = await submit(state, key.id, _new_job(body, digest, idempotency_key), wait_s=wait_s,
                             budgets=key.budgets)
    if not submitted.created:  # a concurrent request with the same key won the insert
        return await _replay(state, key, submitted.job, digest, response, wait_s)
    return _document(submitted.job, response, settings, wait_s)
