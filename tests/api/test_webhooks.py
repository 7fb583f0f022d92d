"""Webhooks end to end: a real worker POSTs signed job documents to a receiver on loopback,
retries a failing one with back-off, then dead-letters it; the API lists the dead letters.

The jobs here end by cancellation (a final status like any other), so no router is involved:
the stack's worker consumes only `webhooks` and `maintenance`. Its retry schedule is shortened
through settings (the production default spreads retries over 24 hours)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from infra import webhook_signing
from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    WebhookReceiver,
    issue_key,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_until,
    webhook_receiver,
)
from tests.support.services import WorkerProcess
from workers._runtime import Runtime

RETRY_ENV = {"TURNOUT_WEBHOOK_RETRY_BASE_S": "0.2", "TURNOUT_WEBHOOK_RETRY_MAX_S": "0.4",
             "TURNOUT_WEBHOOK_MAX_AGE_S": "2.5", "TURNOUT_WEBHOOK_TIMEOUT_S": "3"}


@dataclass
class HookStack:
    settings: Settings
    api: ApiServer
    worker: WorkerProcess


@pytest.fixture(scope="module")
def hooks(settings: Settings) -> Iterator[HookStack]:
    with throwaway_database("hooks") as dsn:
        stack = stack_settings(settings, database_url=dsn, redis_prefix=settings.redis_prefix + "hooks:")
        worker = start_worker(stack, "webhooks,maintenance", beat=False, env=RETRY_ENV)
        api = ApiServer(stack).start()
        try:
            yield HookStack(stack, api, worker)
        finally:
            api.stop()
            worker.stop()


@pytest.fixture
def hook_key(hooks: HookStack) -> IssuedKey:
    return issue_key(hooks.settings, "hooks")


def _finish_by_cancel(c: httpx.Client, url: str) -> str:
    submitted = c.post("/v1/questions", json={"question": "notify me", "webhookUrl": url})
    assert submitted.status_code == 202, submitted.text
    job_id: str = submitted.json()["id"]
    assert c.delete(f"/v1/jobs/{job_id}").status_code == 200
    return job_id


def test_receiver_gets_the_signed_job_document(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(200) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = _finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")
        timestamp = webhook_signing.verify(hook_key.key.webhook_secret, hook.headers, hook.body)
        assert abs(int(hook.headers["Turnout-Timestamp"]) - timestamp) == 0
        assert hook.headers["Content-Type"] == "application/json"
        assert hook.json() == c.get(f"/v1/jobs/{job_id}").json()  # exactly what polling returns
        assert hook.json()["status"] == "cancelled"
        # A tampered body or another key's secret does not verify.
        with pytest.raises(webhook_signing.SignatureError):
            webhook_signing.verify(hook_key.key.webhook_secret, hook.headers, hook.body.replace(b"cancelled", b"succeeded"))
        with pytest.raises(webhook_signing.SignatureError):
            webhook_signing.verify(issue_key(hooks.settings).key.webhook_secret, hook.headers, hook.body)

        delivery = wait_until(lambda: _delivered(c, job_id), timeout=10, what="the delivery row")
        detail = c.get(f"/v1/webhooks/deliveries/{delivery['id']}").json()
        assert detail["status"] == "delivered" and detail["attempts"] == 1
        assert [(a["attempt"], a["statusCode"]) for a in detail["history"]] == [(1, 200)]


def _delivered(c: httpx.Client, job_id: str) -> dict[str, object] | None:
    items = c.get("/v1/webhooks/deliveries", params={"status": "delivered"}).json()["items"]
    return next((d for d in items if d["jobId"] == job_id), None)


def test_failing_receiver_gets_retries_then_a_dead_letter(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(503) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = _finish_by_cancel(c, receiver.url)

        def dead() -> dict[str, object] | None:
            items = c.get("/v1/webhooks/dead-letters").json()["items"]
            return next((d for d in items if d["jobId"] == job_id), None)

        letter = wait_until(dead, timeout=30, what="the dead letter")
        attempts = int(str(letter["attempts"]))
        assert attempts >= 3, letter  # retried with back-off, not given up at once
        assert letter["lastStatusCode"] == 503 and letter["lastError"] == "HTTP 503"
        hooks_received = receiver.for_job(job_id)
        assert len(hooks_received) == attempts  # one POST per recorded attempt
        for hook in hooks_received:  # each attempt is signed afresh
            webhook_signing.verify(hook_key.key.webhook_secret, hook.headers, hook.body)
        history = c.get(f"/v1/webhooks/deliveries/{letter['id']}").json()["history"]
        assert [a["attempt"] for a in history] == list(range(1, attempts + 1))
        assert {a["statusCode"] for a in history} == {503}
        times = [h.at for h in hooks_received]
        assert times == sorted(times)
        # Another key sees none of it; an admin key sees it.
        with hooks.api.client(issue_key(hooks.settings).token) as other:
            assert other.get("/v1/webhooks/dead-letters").json()["items"] == []
            assert other.get(f"/v1/webhooks/deliveries/{letter['id']}").status_code == 404
        with hooks.api.client(issue_key(hooks.settings, admin=True).token) as admin:
            assert any(d["jobId"] == job_id for d in admin.get("/v1/webhooks/dead-letters").json()["items"])


def test_a_permanent_refusal_is_not_retried(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(410) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = _finish_by_cancel(c, receiver.url)

        def dead() -> dict[str, object] | None:
            items = c.get("/v1/webhooks/deliveries", params={"status": "dead"}).json()["items"]
            return next((d for d in items if d["jobId"] == job_id), None)

        letter = wait_until(dead, timeout=20, what="the dead letter")
        assert letter["attempts"] == 1 and letter["lastStatusCode"] == 410
        assert len(receiver.for_job(job_id)) == 1


async def test_delivery_rechecks_the_target(hooks: HookStack, hook_key: IssuedKey) -> None:
    """Accepted at submission (private targets allowed there), refused at delivery by a worker
    that does not allow them: DNS may have changed in between. Nothing is sent."""
    from workers.tasks.webhooks import deliver_once

    receiver = WebhookReceiver().start()
    try:
        with hooks.api.client(hook_key.token) as c:
            submitted = c.post("/v1/questions", json={"question": "x", "webhookUrl": receiver.url})
            job_id = submitted.json()["id"]
            # Cancel in the database, so the stack's (permissive) worker gets no message.
            strict = stack_settings(hooks.settings, webhook_allow_private=False)
            rt = Runtime(settings=strict, loop=asyncio.get_running_loop())
            try:
                pool = await rt.pool()
                from infra.db.jobs import cancel_job

                async with pool.acquire() as conn:
                    _, finished = await cancel_job(conn, job_id, api_key_id=hook_key.key.id)
                assert finished is not None and finished.delivery_id is not None
                assert await deliver_once(rt, finished.delivery_id) == "dead"
            finally:
                await rt.aclose()
            detail = c.get(f"/v1/webhooks/deliveries/{finished.delivery_id}").json()
        assert detail["status"] == "dead" and "target refused" in detail["lastError"]
        assert "127.0.0.1" in detail["lastError"] and "loopback" in detail["lastError"]
        assert receiver.received == []
    finally:
        receiver.stop()


def test_delivery_listing_pages_newest_first(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(200) as receiver, hooks.api.client(hook_key.token) as c:
        first, second = _finish_by_cancel(c, receiver.url), _finish_by_cancel(c, receiver.url)
        page1 = c.get("/v1/webhooks/deliveries", params={"limit": 1}).json()
        assert [d["jobId"] for d in page1["items"]] == [second] and page1["nextBefore"] is not None
        page2 = c.get("/v1/webhooks/deliveries", params={"limit": 1, "before": page1["nextBefore"]}).json()
        assert [d["jobId"] for d in page2["items"]] == [first]
        page3 = c.get("/v1/webhooks/deliveries", params={"limit": 1, "before": page2["nextBefore"]}).json()
        assert page3 == {"items": [], "nextBefore": None}
        bad = c.get("/v1/webhooks/deliveries", params={"status": "lost"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
