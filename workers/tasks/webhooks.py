"""Webhooks queue: `turnout.webhooks.deliver(delivery_id)` POSTs a final job document, signed.

One attempt per message; no worker ever sleeps. A retryable failure (connection error,
timeout, 408/425/429/5xx, a name that does not resolve right now) schedules the next attempt
with jittered exponential back-off (tenacity's `wait_exponential_jitter` computes the delay)
as a Celery countdown message, or leaves it to the sweeper when the delay is longer than a
broker message should wait. Once the next attempt would start after `webhook_max_age_s`
(24 h) from the first, or the failure is permanent (another 4xx, a redirect, a target that
resolves to a refused address), the delivery is dead-lettered. Every attempt is recorded.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from tenacity import RetryCallState
from tenacity.wait import wait_exponential_jitter

from infra import webhook_signing
from infra.db import webhooks as webhooks_db
from infra.db.jobs import get_job
from infra.job_document import JobDocument
from infra.settings import Settings, get_settings
from infra.ssrf import UnresolvableTarget, UnsafeTarget, check_target
from infra.transient import parse_retry_after, retryable_status
from workers import registry
from workers._runtime import Runtime
from workers.app import process_app
from workers.base import run_async, turnout_task
from workers.dispatch import send_webhook

log = logging.getLogger("turnout.webhooks")

# A countdown message longer than this is not sent: the Redis transport would redeliver it after
# its visibility timeout. The sweeper sends the message once the delivery is due instead.
COUNTDOWN_MAX_S = 300.0
USER_AGENT = "Turnout-Webhooks/1"

def _limit(settings: Settings) -> float:
    return settings.webhook_timeout_s + 20


@dataclass(frozen=True)
class AttemptResult:
    delivered: bool
    retryable: bool
    status_code: int | None
    error: str | None
    latency_ms: float
    retry_after_s: float | None = None


@turnout_task(registry.DELIVER_WEBHOOK, time_limit_s=_limit)
def deliver(delivery_id: int) -> str:
    return run_async(lambda rt: deliver_once(rt, delivery_id), timeout_s=_limit(get_settings()))


def retry_delay(settings: Settings, attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: base·2^(attempt-1) plus up to `base` of jitter, capped."""
    wait = wait_exponential_jitter(
        initial=settings.webhook_retry_base_s, max=settings.webhook_retry_max_s, jitter=settings.webhook_retry_base_s
    )
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    return float(wait(state))


async def deliver_once(rt: Runtime, delivery_id: int) -> str:
    settings = rt.settings
    pool = await rt.pool()
    async with pool.acquire() as conn:
        delivery = await webhooks_db.claim_delivery(conn, delivery_id, hold_s=settings.webhook_timeout_s + 30)
        if delivery is None:
            return "skipped"  # delivered, dead, not due yet, or another worker holds this attempt
        job = await get_job(conn, delivery.job_id)
        secret = await webhooks_db.signing_secret(conn, delivery.job_id)
    if job is None or secret is None:
        outcome = AttemptResult(False, False, None, "the job or its API key no longer exists", 0.0)
    else:
        body = JobDocument.from_row(job, base_url=settings.public_base_url).model_dump_json(by_alias=True)
        outcome = await post_signed(rt, delivery.url, body.encode(), secret, delivery_id)
    return await _record(rt, delivery, outcome)


async def post_signed(rt: Runtime, url: str, body: bytes, secret: str, delivery_id: int) -> AttemptResult:
    settings = rt.settings
    started = time.perf_counter()

    def elapsed_ms() -> float:
        return (time.perf_counter() - started) * 1000

    try:
        await check_target(url, allow_private=settings.webhook_allow_private)
    except UnresolvableTarget as exc:
        return AttemptResult(False, True, None, str(exc), elapsed_ms())
    except UnsafeTarget as exc:
        return AttemptResult(False, False, None, f"target refused: {exc}", elapsed_ms())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Turnout-Delivery": str(delivery_id),
        **webhook_signing.sign_headers(secret, body),
    }
    try:
        response = await _client(rt).post(url, content=body, headers=headers)
    except httpx.TransportError as exc:
        return AttemptResult(False, True, None, f"{type(exc).__name__}: {exc}"[:500], elapsed_ms())
    code = response.status_code
    if 200 <= code < 300:
        return AttemptResult(True, False, code, None, elapsed_ms())
    retryable = retryable_status(code)
    reason = f"HTTP {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
    return AttemptResult(False, retryable, code, reason, elapsed_ms(), parse_retry_after(response.headers.get("retry-after")))


def _client(rt: Runtime) -> httpx.AsyncClient:
    client: httpx.AsyncClient | None = rt.extras.get("webhooks.http")
    if client is None:
        # trust_env=False: no proxy from the environment may relay a request to a refused address.
        client = httpx.AsyncClient(timeout=rt.settings.webhook_timeout_s, follow_redirects=False, trust_env=False)
        rt.extras["webhooks.http"] = client
    return client


async def _record(rt: Runtime, delivery: webhooks_db.Delivery, result: AttemptResult) -> str:
    settings = rt.settings
    attempt = delivery.attempts
    delay = 0.0
    if result.delivered:
        outcome: webhooks_db.AttemptOutcome = "delivered"
    elif not result.retryable:
        outcome = "dead"
    else:
        delay = retry_delay(settings, attempt)
        if result.retry_after_s is not None:
            delay = min(max(delay, result.retry_after_s), settings.webhook_retry_max_s)
        age_s = (datetime.now(UTC) - delivery.created_at).total_seconds()
        outcome = "retry" if age_s + delay <= settings.webhook_max_age_s else "dead"
    pool = await rt.pool()
    async with pool.acquire() as conn:
        await webhooks_db.finish_attempt(
            conn, delivery.id, attempt=attempt, outcome=outcome, status_code=result.status_code,
            error=result.error, latency_ms=result.latency_ms, retry_in_s=delay if outcome == "retry" else 0.0,
        )
    if outcome == "retry" and delay <= COUNTDOWN_MAX_S:
        send_webhook(process_app(), settings, delivery.id, countdown=delay)
    if outcome == "dead":
        log.warning("webhook delivery %d for job %s dead after %d attempt(s): %s",
                    delivery.id, delivery.job_id, attempt, result.error)
    return outcome
