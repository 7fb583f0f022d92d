"""Webhooks end to end: a real worker POSTs Standard Webhooks events to a receiver on loopback,
retries a failing one on its schedule, then dead-letters it; endpoints are disabled and recovered;
connections go only to the checked address.

Every delivery a test receives is verified with both `standardwebhooks` and `svix`, and a tampered
id, timestamp or body fails both. The jobs here end by cancellation (a final status like any
other), so no router is involved: the stack's worker consumes only `webhooks` and `maintenance`.
Its retry schedule (0.2 s, 0.2 s, 1.5 s) and endpoint disable window (4 s) are shortened through
settings (production: 5 s ... 24 h, and 3 days). The receivers listen on loopback, which the
stack allows (`TURNOUT_WEBHOOK_ALLOW_PRIVATE=true`, tests/conftest.py); the tests that prove the
address policy use a worker runtime with it off."""

from __future__ import annotations

import asyncio
import base64
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook as StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError as StandardError
from svix.webhooks import Webhook as SvixWebhook
from svix.webhooks import WebhookVerificationError as SvixError

from infra import webhook_signing
from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import (
    ApiServer,
    ReceivedHook,
    WebhookReceiver,
    issue_key,
    query,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_until,
    webhook_receiver,
)
from tests.support.services import WorkerProcess
from workers._runtime import Runtime

SCHEDULE = "[0.2, 0.2, 1.5]"  # 4 attempts, then the dead letter
DISABLE_AFTER_S = 4.0
RETRY_ENV = {"TURNOUT_WEBHOOK_RETRY_SCHEDULE_S": SCHEDULE, "TURNOUT_WEBHOOK_TIMEOUT_S": "3",
             "TURNOUT_WEBHOOK_ENDPOINT_DISABLE_AFTER_S": str(DISABLE_AFTER_S)}


def verify_both(secret: str | bytes, hook: ReceivedHook) -> dict[str, Any]:
    """What a receiver does, with two independent Standard Webhooks verifiers; and a tampered
    id, timestamp or body fails both. Returns the event."""
    event: dict[str, Any] = StandardWebhook(secret).verify(hook.body, hook.headers)
    SvixWebhook(secret).verify(hook.body, hook.headers)
    headers = {k.lower(): v for k, v in hook.headers.items()}
    for tampered_headers, body in (
        ({**headers, "webhook-id": headers["webhook-id"] + "0"}, hook.body),
        ({**headers, "webhook-timestamp": str(int(headers["webhook-timestamp"]) - 1)}, hook.body),
        (headers, hook.body.replace(b'"data"', b'"data" ')),
    ):
        with pytest.raises(StandardError):
            StandardWebhook(secret).verify(body, tampered_headers)
        with pytest.raises(SvixError):
            SvixWebhook(secret).verify(body, tampered_headers)
    return event


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
        job_id = _finish_by_cancel(c, receiver.url)

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
        job_id = _finish_by_cancel(c, receiver.url)

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
        later = _finish_by_cancel(c, receiver.url)
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
        first, second = _finish_by_cancel(c, receiver.url), _finish_by_cancel(c, receiver.url)
        page1 = c.get("/v1/webhooks/deliveries", params={"limit": 1}).json()
        assert [d["jobId"] for d in page1["items"]] == [second] and page1["nextBefore"] is not None
        page2 = c.get("/v1/webhooks/deliveries", params={"limit": 1, "before": page1["nextBefore"]}).json()
        assert [d["jobId"] for d in page2["items"]] == [first]
        page3 = c.get("/v1/webhooks/deliveries", params={"limit": 1, "before": page2["nextBefore"]}).json()
        assert page3 == {"items": [], "nextBefore": None}
        bad = c.get("/v1/webhooks/deliveries", params={"status": "lost"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


def _delivery_of(c: httpx.Client, job_id: str) -> dict[str, Any]:
    items = c.get("/v1/webhooks/deliveries", params={"limit": 200}).json()["items"]
    return next(d for d in items if d["jobId"] == job_id)


def test_retry_after_is_honoured_within_the_schedule(hooks: HookStack, hook_key: IssuedKey) -> None:
    """429 with `Retry-After: 1` waits 1 s instead of the schedule's 0.2 s (the longest step, 1.5 s,
    is the cap)."""
    receiver = WebhookReceiver(respond=lambda n: (429, 0.0) if n == 0 else (200, 0.0),
                               response_headers={"Retry-After": "1"}).start()
    try:
        with hooks.api.client(hook_key.token) as c:
            job_id = _finish_by_cancel(c, receiver.url)
            first, second = wait_until(lambda: receiver.for_job(job_id)[1:] and receiver.for_job(job_id),
                                       timeout=20, what="the retry")
            assert second.at - first.at >= 1.0, second.at - first.at
            assert first.delivery == second.delivery
            verify_both(hook_key.key.webhook_secret, second)
    finally:
        receiver.stop()


def test_redeliver_sends_the_same_delivery_again_and_is_audited(hooks: HookStack, hook_key: IssuedKey) -> None:
    with webhook_receiver(200) as receiver, hooks.api.client(hook_key.token) as c:
        job_id = _finish_by_cancel(c, receiver.url)
        wait_until(lambda: _delivered(c, job_id), timeout=20, what="the delivery")
        delivery_id = _delivery_of(c, job_id)["id"]
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


def test_secret_rotation_signs_with_both_secrets_during_the_overlap(hooks: HookStack) -> None:
    """A key from before Standard Webhooks (its secret is not base64: the string's bytes are the
    key) rotates to a Standard Webhooks secret; during the overlap both sign every delivery."""
    key = issue_key(hooks.settings, "rotate")
    assert webhook_signing.is_standard(key.key.webhook_secret)  # new keys get a Standard Webhooks secret
    assert len(base64.b64decode(key.key.webhook_secret.removeprefix("whsec_"))) == 32
    legacy = "whsec_" + "Zm9v-_" * 7 + "x"  # what keys were issued with before (token_urlsafe)
    query(hooks.settings, "UPDATE api_keys SET webhook_secret = $2 WHERE id = $1", key.key.id, legacy)
    with webhook_receiver(200) as receiver, hooks.api.client(key.token) as c:
        before = _finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(before), timeout=20, what="the webhook")
        verify_both(legacy.encode(), hook)  # until it rotates, a legacy key signs with its bytes
        rotation = c.post("/v1/webhooks/secret/rotate")
        assert rotation.status_code == 200, rotation.text
        new = rotation.json()["secret"]
        assert new != legacy and webhook_signing.is_standard(new)
        until = datetime.fromisoformat(rotation.json()["previousValidUntil"])
        assert timedelta(hours=23) < until - datetime.now(UTC) <= timedelta(hours=24)
        job_id = _finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")
        assert len(hook.headers["webhook-signature"].split(" ")) == 2
        verify_both(new, hook)  # a receiver that switched already
        verify_both(legacy.encode(), hook)  # a receiver still on the previous secret
        # Past the overlap only the new secret signs.
        query(hooks.settings, "UPDATE api_keys SET webhook_secret_previous_until = now() WHERE id = $1", key.key.id)
        last = _finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(last), timeout=20, what="the webhook")
        assert len(hook.headers["webhook-signature"].split(" ")) == 1
        verify_both(new, hook)
    [action] = query(hooks.settings, "SELECT action FROM webhook_actions WHERE api_key_id = $1", key.key.id)
    assert action["action"] == "rotate_secret"


async def test_dns_rebinding_never_reaches_a_non_global_address(
    hooks: HookStack, hook_key: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drill: a name that answers a public address to the check and loopback afterwards.
    Each attempt resolves once and connects to what it checked: attempt 1 goes to the public
    address (unreachable from here: a connection error naming it), attempt 2 sees loopback and is
    refused. The receiver listening on loopback gets nothing. (Before connections were pinned,
    httpx's own second lookup got loopback and attempt 1 was delivered.)"""
    from workers.tasks.webhooks import deliver_once

    host, public = "rebind.turnout.test", "93.184.215.14"
    real = socket.getaddrinfo
    lookups: list[str] = []
    armed = False

    def rebinding_resolver(name: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (name.decode() if isinstance(name, bytes) else name) != host:  # anyio passes IDNA bytes
            return real(name, port, *args, **kwargs)
        answer = public if armed and not lookups else "127.0.0.1"  # public to the first look only
        if armed:
            lookups.append(answer)
        return real(answer, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_resolver)
    receiver = WebhookReceiver().start()
    port = receiver.url.split(":")[2].split("/")[0]
    try:
        # A worker runtime with the production address policy (private targets refused), a retry
        # due beyond a countdown message (none is sent: the test runs each attempt itself).
        strict = stack_settings(hooks.settings, webhook_allow_private=False, webhook_timeout_s=2.0,
                                webhook_retry_schedule_s=(3000.0,))
        rt = Runtime(settings=strict, loop=asyncio.get_running_loop())
        try:
            pool = await rt.pool()
            from infra.db.jobs import cancel_job, create_job

            async with pool.acquire() as conn:  # the job as submitted (the name resolved publicly then)
                job, _ = await create_job(
                    conn, api_key_id=hook_key.key.id, question="x", answer_language=None, page_size=None,
                    webhook_url=f"http://{host}:{port}/hook", idempotency_key=None, request_hash="h", lease_s=60)
                _, finished = await cancel_job(conn, job.id, api_key_id=hook_key.key.id)
            assert finished is not None and finished.delivery_id is not None
            armed = True
            assert await deliver_once(rt, finished.delivery_id) == "retry"
            async with pool.acquire() as conn:  # the retry falls due
                await conn.execute("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1",
                                   finished.delivery_id)
            assert await deliver_once(rt, finished.delivery_id) == "dead"
        finally:
            await rt.aclose()
        assert lookups == [public, "127.0.0.1"]  # one lookup per attempt, no second one to connect
        assert receiver.received == []  # nothing ever reached loopback
        with hooks.api.client(hook_key.token) as c:
            detail = (await asyncio.to_thread(c.get, f"/v1/webhooks/deliveries/{finished.delivery_id}")).json()
        first, second = detail["history"]
        assert first["statusCode"] is None and public in first["error"] and host in first["error"]
        assert second["statusCode"] is None and second["error"].startswith("target refused")
        assert "127.0.0.1" in second["error"] and "loopback" in second["error"]
        assert detail["status"] == "dead"
    finally:
        receiver.stop()


def test_outage_disables_the_endpoint_and_recovery_delivers_every_missed_job_once(hooks: HookStack) -> None:
    """The receiver is down (503) for longer than the disable window: the endpoint is disabled,
    later jobs record `disabled` and send nothing; enable + recover delivers every missed job
    exactly once, a dead-lettered one under the webhook-id of its failed attempts."""
    key = issue_key(hooks.settings, "outage")
    down = True
    receiver = WebhookReceiver(respond=lambda n: (503, 0.0) if down else (200, 0.0)).start()
    started = datetime.now(UTC) - timedelta(seconds=1)
    try:
        with hooks.api.client(key.token) as c, hooks.api.client(issue_key(hooks.settings, admin=True).token) as admin:
            first = _finish_by_cancel(c, receiver.url)
            wait_until(lambda: _delivery_of(c, first)["status"] == "dead", timeout=30, what="the first dead letter")
            [endpoint] = c.get("/v1/webhooks/endpoints").json()["items"]
            assert endpoint["state"] == "enabled" and endpoint["consecutiveFailures"] == 4
            failing_since = datetime.fromisoformat(endpoint["failingSince"])
            # Still failing past the window: the next failure disables the endpoint.
            time.sleep(max(0.0, DISABLE_AFTER_S + 0.5 - (datetime.now(UTC) - failing_since).total_seconds()))
            second = _finish_by_cancel(c, receiver.url)
            wait_until(lambda: _delivery_of(c, second)["status"] == "disabled", timeout=30,
                       what="the endpoint to be disabled")
            [endpoint] = c.get("/v1/webhooks/endpoints").json()["items"]
            assert endpoint["state"] == "disabled" and "failing since" in endpoint["disabledReason"]
            assert endpoint["consecutiveFailures"] >= 5 and endpoint["lastSuccessAt"] is None
            metrics = admin.get("/metrics").text
            assert 'turnout_webhook_endpoints{state="disabled"}' in metrics
            assert not any(line.startswith('turnout_webhook_endpoints{state="disabled"} 0')
                           for line in metrics.splitlines())
            # New jobs queue nothing while it is disabled.
            posts_before = len(receiver.received)
            later = [_finish_by_cancel(c, receiver.url) for _ in range(3)]
            for job_id in later:
                d = _delivery_of(c, job_id)
                assert d["status"] == "disabled" and d["attempts"] == 0, d
            redeliver = c.post(f"/v1/webhooks/deliveries/{_delivery_of(c, later[0])['id']}/redeliver")
            assert redeliver.status_code == 409 and redeliver.json()["error"]["code"] == "endpoint_disabled"
            blocked = c.post("/v1/webhooks/recover", json={"since": started.isoformat()})
            assert blocked.status_code == 202 and blocked.json() == {"requeued": [], "skippedDisabled": 5}
            time.sleep(1.0)
            assert len(receiver.received) == posts_before  # nothing was sent for them

            # The receiver is back: enable, recover.
            down = False
            enabled = c.post(f"/v1/webhooks/endpoints/{endpoint['id']}/enable")
            assert enabled.status_code == 200 and enabled.json()["state"] == "enabled"
            assert enabled.json()["consecutiveFailures"] == 0
            missed = [first, second, *later]
            recovered = c.post("/v1/webhooks/recover", json={"since": started.isoformat()})
            assert recovered.status_code == 202, recovered.text
            assert sorted(recovered.json()["requeued"]) == sorted(_delivery_of(c, j)["id"] for j in missed)
            again = c.post("/v1/webhooks/recover", json={"since": started.isoformat()})  # idempotent
            assert again.json()["requeued"] == []
            wait_until(lambda: all(_delivery_of(c, j)["status"] == "delivered" for j in missed), timeout=30,
                       what="every missed job delivered")
            time.sleep(1.0)  # a duplicate, if any, would arrive now
            after = receiver.received[posts_before:]  # every POST since recovery
            assert {h.job_id for h in after} == set(missed)
            for job_id in missed:
                delivered = [h for h in after if h.job_id == job_id]
                assert len(delivered) == 1, (job_id, len(delivered))  # exactly once after recovery
                assert delivered[0].delivery == str(_delivery_of(c, job_id)["id"])
                assert verify_both(key.key.webhook_secret, delivered[0])["data"]["id"] == job_id
            failed_ids = {h.delivery for h in receiver.received[:posts_before] if h.job_id == first}
            assert failed_ids == {str(_delivery_of(c, first)["id"])}  # same webhook-id as its failed attempts
            [endpoint] = c.get("/v1/webhooks/endpoints").json()["items"]
            assert endpoint["lastSuccessAt"] is not None and endpoint["consecutiveFailures"] == 0
        actions = query(hooks.settings, "SELECT action, affected FROM webhook_actions WHERE api_key_id = $1 ORDER BY id",
                        key.key.id)
        assert [(a["action"], a["affected"]) for a in actions] == [
            ("recover", 0), ("enable", 1), ("recover", len(missed)), ("recover", 0)]
    finally:
        receiver.stop()
