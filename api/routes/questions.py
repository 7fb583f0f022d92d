"""`POST /v1/questions`: accept a question as a durable job (row first, then the message)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
from typing import Annotated

from fastapi import APIRouter, Header, Request, Response

from api.deps import CurrentKey, JobEvents, Pool, Redis, SettingsDep, own_job
from api.errors import ApiError
from api.long_poll import WAIT_MAX_S, preferred_wait, until_final, watch_until_final
from api.ratelimit import Limiter
from api.schemas import QuestionRequest, error_responses
from api.visibility import visible_job
from infra.db import jobs as jobs_db
from infra.job_document import JobDocument
from infra.settings import Settings
from infra.ssrf import UnsafeTarget, check_target
from workers.dispatch import Producer, send_run_job

router = APIRouter(prefix="/v1", tags=["jobs"])

IDEMPOTENCY_KEY_MAX = 255
REPLAY_HEADER = "Idempotent-Replayed"


def get_producer(request: Request) -> Producer:
    """The app's message producer (built in the lifespan, from this API's settings)."""
    producer: Producer = request.app.state.turnout.producer
    return producer


def request_hash(body: QuestionRequest) -> str:
    data = body.model_dump(mode="json", by_alias=True)
    if data.get("language") is None:  # absent as before the field existed: stored hashes stay valid
        data.pop("language", None)
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
        **error_responses(400, 401, 409, 413, 422, 429, 503),
    },
)
async def submit_question(
    body: QuestionRequest,
    request: Request,
    response: Response,
    key: CurrentKey,
    pool: Pool,
    redis: Redis,
    settings: SettingsDep,
    limiter: Limiter,
    job_events: JobEvents,
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
    _check_limits(body, settings)
    if body.webhook_url is not None:
        await _check_webhook(body.webhook_url, settings)
    digest = request_hash(body)
    wait_s = preferred_wait(prefer)

    async def replay(existing: jobs_db.JobRow) -> JobDocument:
        _check_replay(existing, digest, response)
        if wait_s and not existing.status.is_final:
            existing = await watch_until_final(
                job_events, existing.id, lambda: own_job(pool, key, existing.id), wait_s=wait_s
            )
        # A replay may come long after the job ended: its result is shown as visible now.
        return _document(await visible_job(pool, redis, settings, existing), response, settings, wait_s)

    if idempotency_key is not None:
        async with pool.acquire() as conn:
            existing = await jobs_db.find_by_idempotency_key(conn, key.id, idempotency_key)
        if existing is not None:  # a replay costs no submission
            return await replay(existing)
    await limiter.hit(key.id)
    async with pool.acquire() as conn:
        job, created = await jobs_db.create_job(
            conn, api_key_id=key.id, question=body.question, answer_language=body.answer_language,
            page_size=body.page_size, webhook_url=body.webhook_url, idempotency_key=idempotency_key,
            request_hash=digest, lease_s=settings.job_lease_s, language=body.language,
        )
    if not created:  # a concurrent request with the same key won the insert
        return await replay(job)
    # Watched before the message is sent, so the job's end cannot come before the watch.
    with job_events.watch(job.id, final_only=True) if wait_s else contextlib.nullcontext() as watch:
        # After the row is committed; if this send fails the sweeper sends it once the lease passes.
        submitted = {"question": job.question, "answerLanguage": job.answer_language, "pageSize": job.page_size,
                     "language": job.language}
        await asyncio.to_thread(
            functools.partial(send_run_job, get_producer(request), settings, job.id, submitted=submitted)
        )
        if watch is not None:
            job = await until_final(watch, lambda: own_job(pool, key, job.id), job_events, wait_s=wait_s or 0, job=job)
            job = await visible_job(pool, redis, settings, job)
    return _document(job, response, settings, wait_s)
