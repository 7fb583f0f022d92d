"""Webhooks end to end: a real worker POSTs Standard Webhooks events to a receiver on loopback,
retries a failing one on its schedule, then dead-letters it; deliveries are listed and redelivered
(endpoints, secrets and the address policy: tests/api/test_webhook_endpoints.py).

Every delivery a test receives is verified with both `standardwebhooks` and `svix`, and a tampered
id, timestamp or body fails both. The jobs here end by cancellation (a final status like any
other), so no router is involved: the stack's worker consumes only `webhooks` and `maintenance`.
Its retry schedule (0.2 s, 0.2 s, 1.5 s) and endpoint disable window (4 s) are shortened through
settings (production: 5 s ... 24 h, and 3 days). The receivers listen on loopback, which the
stack allows (`TURNOUT_WEBHOOK_ALLOW_PRIVATE=true`, tests/conftest.py); the tests that prove the
address policy use a worker runtime with it off."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import httpx
import pytest

from infra import webhook_signing
from infra.db.api_keys import IssuedKey
from tests.api.support import (
    WebhookReceiver,
    issue_key,
    query,
    stack_settings,
    wait_until,
    webhook_receiver,
)
from tests.api.webhook_stack import HookStack, delivery_of, finish_by_cancel, verify_both
from workers._runtime import Runtime


def test_receiver_gets_the_signed_job_document(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(200) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")
        event = verify_both(hook_key.key.webhook_secret, hook)
        assert hook.headers["Content-Type"] == "application/json"
        assert abs(int(hook.headers["webhook-timestamp"]) - time.time()) < 60
        assert event["type"] == "job.cancelled"
        polled = c.get(f"/v1/jobs/{job_id}").json()
        assert event["data"] == polled  # exactly what polling returns
        assert datetime.fromisoformat(event["timestamp"]) == datetime.fromisoformat(polled["finishedAt"])
        # The old, unsigned-id headers are gone (replaced by the Standard Webhooks ones).
        assert not {k.lower() for k in hook.headers} & {"turnout-signature", "turnout-delivery", "turnout-timestamp"}
        # Another key's secret does not verify.
        with pytest.raises(webhook_signing.SignatureError):
            webhook_signing.verify(issue_key(hooks.settings).key.webhook_secret, hook.headers, hook.body)

        delivery = wait_until(lambda: _delivered(c, job_id), timeout=10, what="the delivery row")
        assert hook.delivery == str(delivery["id"])  # webhook-id is the delivery id
        detail = c.get(f"/v1/webhooks/deliveries/{delivery['id']}").json()
        assert detail["status"] == "delivered" and detail["attempts"] == 1
        assert [(a["attempt"], a["statusCode"]) for a in detail["history"]] == [(1, 200)]


def _delivered(c: httpx.Client, job_id: str) -> dict[str, object] | None:
    items = c.get("/v1/webhooks/deliveries", params={"status": "delivered"}).json()["items"]
    return next((d for d in items if d["jobId"] == job_id), None)


def test_failing_receiver_gets_retries_then_a_dead_letter(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(503) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = finish_by_cancel(c, receiver.url)

        def dead() -> dict[str, object] | None:
            items = c.get("/v1/webhooks/dead-letters").json()["items"]
            return next((d for d in items if d["jobId"] == job_id), None)

        letter = wait_until(dead, timeout=30, what="the dead letter")
        attempts = int(str(letter["attempts"]))
        assert attempts == 4, letter  # the first attempt and the schedule's three retries
        assert letter["lastStatusCode"] == 503 and letter["lastError"] == "HTTP 503"
        hooks_received = receiver.for_job(job_id)
        assert len(hooks_received) == attempts  # one POST per recorded attempt
        for hook in hooks_received:  # each attempt is signed afresh, under the same webhook-id
            verify_both(hook_key.key.webhook_secret, hook)
        assert {h.delivery for h in hooks_received} == {str(letter["id"])}
        gaps = [b.at - a.at for a, b in zip(hooks_received, hooks_received[1:], strict=False)]
        assert gaps[0] >= 0.2 and gaps[2] >= 1.5, gaps  # the schedule: 0.2 s, 0.2 s, 1.5 s (+ jitter)
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
        job_id = finish_by_cancel(c, receiver.url)

        def dead() -> dict[str, object] | None:
            items = c.get("/v1/webhooks/deliveries", params={"status": "dead"}).json()["items"]
            return next((d for d in items if d["jobId"] == job_id), None)

        letter = wait_until(dead, timeout=20, what="the dead letter")
        assert letter["attempts"] == 1 and letter["lastStatusCode"] == 410
        assert len(receiver.for_job(job_id)) == 1
        # 410 Gone disables the endpoint at once: the next job records `disabled`, nothing is sent.
        [endpoint] = [e for e in c.get("/v1/webhooks/endpoints").json()["items"] if e["origin"] in receiver.url]
        assert endpoint["state"] == "disabled" and "410" in endpoint["disabledReason"]
        assert endpoint["consecutiveFailures"] == 1 and endpoint["lastSuccessAt"] is None
        later = finish_by_cancel(c, receiver.url)
        [row] = c.get("/v1/webhooks/deliveries", params={"status": "disabled"}).json()["items"]
        assert row["jobId"] == later and row["attempts"] == 0 and "endpoint disabled" in row["lastError"]
        time.sleep(1.0)
        assert receiver.for_job(later) == []


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
        first, second = finish_by_cancel(c, receiver.url), finish_by_cancel(c, receiver.url)
        page1 = c.get("/v1/webhooks/deliveries", params={"limit": 1}).json()
        assert [d["jobId"] for d in page1["items"]] == [second] and page1["nextBefore"] is not None
        page2 = c.get("/v1/webhooks/deliveries", params={"limit": 1, "before": page1["nextBefore"]}).json()
        assert [d["jobId"] for d in page2["items"]] == [first]
        page3 = c.get("/v1/webhooks/deliveries", params={"limit": 1, "before": page2["nextBefore"]}).json()
        assert page3 == {"items": [], "nextBefore": None}
        bad = c.get("/v1/webhooks/deliveries", params={"status": "lost"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


def test_retry_after_is_honoured_within_the_schedule(hooks: HookStack, hook_key: IssuedKey) -> None:
    """429 with `Retry-After: 1` waits 1 s instead of the schedule's 0.2 s (the longest step, 1.5 s,
    is the cap)."""
    receiver = WebhookReceiver(respond=lambda n: (429, 0.0) if n == 0 else (200, 0.0),
                               response_headers={"Retry-After": "1"}).start()
    try:
        with hooks.api.client(hook_key.token) as c:
            job_id = finish_by_cancel(c, receiver.url)
            first, second = wait_until(lambda: receiver.for_job(job_id)[1:] and receiver.for_job(job_id),
                                       timeout=20, what="the retry")
            assert second.at - first.at >= 1.0, second.at - first.at
            assert first.delivery == second.delivery
            verify_both(hook_key.key.webhook_secret, second)
    finally:
        receiver.stop()


def test_redeliver_sends_the_same_delivery_again_and_is_audited(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(200) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = finish_by_cancel(c, receiver.url)
        wait_until(lambda: _delivered(c, job_id), timeout=20, what="the delivery")
        delivery_id = delivery_of(c, job_id)["id"]
        answer = c.post(f"/v1/webhooks/deliveries/{delivery_id}/redeliver")
        assert answer.status_code == 202, answer.text
        first, again = wait_until(lambda: receiver.for_job(job_id)[1:] and receiver.for_job(job_id),
                                  timeout=20, what="the redelivery")
        assert first.delivery == again.delivery == str(delivery_id)  # the same webhook-id
        assert verify_both(hook_key.key.webhook_secret, again)["data"]["id"] == job_id
        detail = wait_until(lambda: (d := c.get(f"/v1/webhooks/deliveries/{delivery_id}").json())["status"]
                            == "delivered" and d, timeout=10, what="delivered again")
        assert [a["attempt"] for a in detail["history"]] == [1, 2]
        # Scoped: another key gets a 404, and nothing is sent.
        with hooks.api.client(issue_key(hooks.settings).token) as other:
            assert other.post(f"/v1/webhooks/deliveries/{delivery_id}/redeliver").status_code == 404
        actions = query(hooks.settings, "SELECT action, target, affected FROM webhook_actions WHERE api_key_id = $1",
                        hook_key.key.id)
        assert [(a["action"], a["affected"]) for a in actions] == [("redeliver", 1)]
        time.sleep(0.5)
        assert len(receiver.for_job(job_id)) == 2


async def test_redeliver_of_a_pending_delivery_changes_nothing(hooks: HookStack, hook_key: IssuedKey) -> None:
    """Natural idempotency: a pending delivery (here: its job cancelled in the database, so no
    message was sent) is left as it is by a redeliver; no message is sent for it."""
    from infra.db.jobs import cancel_job
    from infra.db.pool import create_pool

    with webhook_receiver(200) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = c.post("/v1/questions", json={"question": "x", "webhookUrl": receiver.url}).json()["id"]
        pool = await create_pool(hooks.settings.database_url, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                _, finished = await cancel_job(conn, job_id, api_key_id=hook_key.key.id)
        finally:
            await pool.close()
        assert finished is not None and finished.delivery_id is not None
        for _ in range(2):
            answer = await asyncio.to_thread(c.post, f"/v1/webhooks/deliveries/{finished.delivery_id}/redeliver")
            assert answer.status_code == 202 and answer.json()["status"] == "pending"
            assert answer.json()["attempts"] == 0
        await asyncio.sleep(1.0)
        assert receiver.for_job(job_id) == []  # no message: only the sweeper would send it
    actions = await asyncio.to_thread(query, hooks.settings, "SELECT action, affected FROM webhook_actions "
                                      "WHERE api_key_id = $1", hook_key.key.id)
    assert [(a["action"], a["affected"]) for a in actions] == [("redeliver", 0), ("redeliver", 0)]
