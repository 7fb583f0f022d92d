"""Webhooks queue: `turnout.webhooks.deliver(delivery_id)` POSTs a final job event, Standard Webhooks signed.

The body is `{type, timestamp, data}` (`job.succeeded|job.failed|job.cancelled`, data = the job
document), signed per attempt with `webhook-id` = the delivery id (infra/webhook_signing.py). The
connection goes only to the address that was checked (infra/webhook_http.py).

One attempt per message; no worker ever sleeps. A retryable failure (connection error,
timeout, 408/425/429/5xx, a name that does not resolve right now) schedules the next attempt
after the next step of `webhook_retry_schedule_s` plus jitter (a receiver's `Retry-After` may
lengthen it up to the schedule's longest step), as a Celery countdown message, or leaves it to
the sweeper when the delay is longer than a broker message should wait. After the schedule's
last step, or on a permanent failure (another 4xx, a redirect, a refused address), the delivery
is dead-lettered. Every attempt is recorded and counted in its endpoint's health: an endpoint
failing for longer than `webhook_endpoint_disable_after_s`, or answering 410, is disabled.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

import httpx

from infra import webhook_signing
from infra.db import webhooks as webhooks_db
from infra.db.jobs import get_job
from infra.job_document import WebhookEvent
from infra.settings import Settings, get_settings
from infra.ssrf import UnresolvableTarget, UnsafeTarget
from infra.transient import parse_retry_after, retryable_status
from infra.webhook_http import pinned_client
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


def retry_delay(settings: Settings, attempt: int, retry_after_s: float | None = None) -> float | None:
    """Seconds before the retry after failed attempt `attempt` (1-based, within the round): the
    schedule's step plus up to `webhook_retry_jitter` of it; a longer `Retry-After` is honoured
    up to the schedule's longest step. None when the schedule is used up (dead-letter)."""
    schedule = settings.webhook_retry_schedule_s
    if attempt > len(schedule):
        return None
    delay = schedule[attempt - 1] * (1 + random.uniform(0, settings.webhook_retry_jitter))
    if retry_after_s is not None:
        delay = min(max(delay, retry_after_s), max(schedule))
    return delay


async def deliver_once(rt: Runtime, delivery_id: int) -> str:
    settings = rt.settings
    pool = await rt.pool()
    async with pool.acquire() as conn:
        delivery = await webhooks_db.claim_delivery(conn, delivery_id, hold_s=settings.webhook_timeout_s + 30)
        if delivery is None:
            return "skipped"  # delivered, dead, disabled, not due yet, or another worker holds this attempt
        job = await get_job(conn, delivery.job_id)
        secrets = await webhooks_db.signing_secrets(conn, delivery.job_id)
    if job is None or not secrets:
        outcome = AttemptResult(False, False, None, "the job or its API key no longer exists", 0.0)
        return await _record(rt, delivery, outcome, counts_for_endpoint=False)
    body = WebhookEvent.for_job(job, base_url=settings.public_base_url).model_dump_json(by_alias=True)
    outcome = await post_signed(rt, delivery.url, body.encode(), secrets, delivery_id)
    return await _record(rt, delivery, outcome)


async def post_signed(rt: Runtime, url: str, body: bytes, secrets: list[str], delivery_id: int) -> AttemptResult:
    """One signed POST to the checked address of `url` (`secrets`: the current one first)."""
    started = time.perf_counter()

    def elapsed_ms() -> float:
        return (time.perf_counter() - started) * 1000

    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **webhook_signing.sign_headers(secrets, str(delivery_id), body),
    }
    try:
        response = await _client(rt).post(url, content=body, headers=headers)
    except UnresolvableTarget as exc:
        return AttemptResult(False, True, None, str(exc), elapsed_ms())
    except UnsafeTarget as exc:
        return AttemptResult(False, False, None, f"target refused: {exc}", elapsed_ms())
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
        client = pinned_client(timeout_s=rt.settings.webhook_timeout_s, allow_private=rt.settings.webhook_allow_private)
        rt.extras["webhooks.http"] = client
        rt.close_with(client.aclose)
    return client


async def _record(
    rt: Runtime, delivery: webhooks_db.Delivery, result: AttemptResult, *, counts_for_endpoint: bool = True
) -> str:
    settings = rt.settings
    attempt = delivery.attempts
    delay: float | None = 0.0
    if result.delivered:
        outcome: webhooks_db.AttemptOutcome = "delivered"
    elif not result.retryable:
        outcome = "dead"
    else:
        delay = retry_delay(settings, delivery.round_attempts, result.retry_after_s)
        outcome = "retry" if delay is not None else "dead"
    endpoint_result: webhooks_db.EndpointResult | None = None
    if counts_for_endpoint:
        endpoint_result = "ok" if result.delivered else "gone" if result.status_code == 410 else "failed"
    pool = await rt.pool()
    async with pool.acquire() as conn:
        outcome = await webhooks_db.finish_attempt(
            conn, delivery.id, attempt=attempt, outcome=outcome, status_code=result.status_code,
            error=result.error, latency_ms=result.latency_ms,
            retry_in_s=delay if outcome == "retry" and delay is not None else 0.0,
            endpoint_id=delivery.endpoint_id, endpoint_result=endpoint_result,
            disable_after_s=settings.webhook_endpoint_disable_after_s,
        )
    if outcome == "disabled":
        log.warning("webhook endpoint of delivery %d disabled after failing: %s", delivery.id, result.error)
    if outcome == "retry" and delay is not None and delay <= COUNTDOWN_MAX_S:
        send_webhook(process_app(), settings, delivery.id, countdown=delay)
    if outcome == "dead":
        log.warning("webhook delivery %d for job %s dead after %d attempt(s): %s",
                    delivery.id, delivery.job_id, attempt, result.error)
    return outcome
