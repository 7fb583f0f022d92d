"""Webhook endpoints end to end: a secret rotates with an overlap in which both secrets sign, an
endpoint failing past its window is disabled and recovered (every missed job delivered once), and
a connection goes only to the address that was checked (DNS rebinding). The stack: `hooks` in
tests/api/conftest.py (tests/api/webhook_stack.py)."""

from __future__ import annotations

import asyncio
import base64
import socket
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from infra import webhook_signing
from infra.db.api_keys import IssuedKey
from tests.api.support import WebhookReceiver, issue_key, query, stack_settings, wait_until, webhook_receiver
from tests.api.webhook_stack import DISABLE_AFTER_S, HookStack, delivery_of, finish_by_cancel, verify_both
from workers._runtime import Runtime


def test_secret_rotation_signs_with_both_secrets_during_the_overlap(hooks: HookStack) -> None:
    """A key from before Standard Webhooks (its secret is not base64: the string's bytes are the
    key) rotates to a Standard Webhooks secret; during the overlap both sign every delivery."""
    key = issue_key(hooks.settings, "rotate")
    assert webhook_signing.is_standard(key.key.webhook_secret)  # new keys get a Standard Webhooks secret
    assert len(base64.b64decode(key.key.webhook_secret.removeprefix("whsec_"))) == 32
    legacy = "whsec_" + "Zm9v-_" * 7 + "x"  # what keys were issued with before (token_urlsafe)
    query(hooks.settings, "UPDATE api_keys SET webhook_secret = $2 WHERE id = $1", key.key.id, legacy)
    with webhook_receiver(200) as receiver, hooks.api.client(key.token) as c:
        before = finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(before), timeout=20, what="the webhook")
        verify_both(legacy.encode(), hook)  # until it rotates, a legacy key signs with its bytes
        rotation = c.post("/v1/webhooks/secret/rotate")
        assert rotation.status_code == 200, rotation.text
        new = rotation.json()["secret"]
        assert new != legacy and webhook_signing.is_standard(new)
        until = datetime.fromisoformat(rotation.json()["previousValidUntil"])
        assert timedelta(hours=23) < until - datetime.now(UTC) <= timedelta(hours=24)
        job_id = finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")
        assert len(hook.headers["webhook-signature"].split(" ")) == 2
        verify_both(new, hook)  # a receiver that switched already
        verify_both(legacy.encode(), hook)  # a receiver still on the previous secret
        # Past the overlap only the new secret signs.
        query(hooks.settings, "UPDATE api_keys SET webhook_secret_previous_until = now() WHERE id = $1", key.key.id)
        last = finish_by_cancel(c, receiver.url)
        [hook] = wait_until(lambda: receiver.for_job(last), timeout=20, what="the webhook")
        assert len(hook.headers["webhook-signature"].split(" ")) == 1
        verify_both(new, hook)
    [action] = query(hooks.settings, "SELECT action FROM webhook_actions WHERE api_key_id = $1", key.key.id)
    assert action["action"] == "rotate_secret"


class _RebindingResolver:
    """getaddrinfo for `host`: loopback until armed, then the public address to the first look only."""

    def __init__(self, host: str, public: str, real: Any) -> None:
        self.host, self.public, self.real = host, public, real
        self.lookups: list[str] = []
        self.armed = False

    def __call__(self, name: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (name.decode() if isinstance(name, bytes) else name) != self.host:  # anyio passes IDNA bytes
            return self.real(name, port, *args, **kwargs)
        answer = self.public if self.armed and not self.lookups else "127.0.0.1"
        if self.armed:
            self.lookups.append(answer)
        return self.real(answer, port, *args, **kwargs)


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
    resolver = _RebindingResolver(host, public, socket.getaddrinfo)
    lookups = resolver.lookups
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
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
            resolver.armed = True
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


def _assert_each_delivered_once_since(
    c: httpx.Client, receiver: WebhookReceiver, posts_before: int, missed: list[str], secret: str
) -> None:
    after = receiver.received[posts_before:]  # every POST since recovery
    assert {h.job_id for h in after} == set(missed)
    for job_id in missed:
        delivered = [h for h in after if h.job_id == job_id]
        assert len(delivered) == 1, (job_id, len(delivered))  # exactly once after recovery
        assert delivered[0].delivery == str(delivery_of(c, job_id)["id"])
        assert verify_both(secret, delivered[0])["data"]["id"] == job_id


def _fail_until_disabled(c: httpx.Client, admin: httpx.Client, receiver: WebhookReceiver,
                         started: datetime) -> tuple[list[str], dict[str, Any], int]:
    """The receiver answers 503: the first job dead-letters, one past the disable window disables
    the endpoint (on /metrics too), three later jobs record `disabled` and send nothing, and
    neither a redelivery nor a recovery sends anything while it is disabled. Returns the missed
    jobs, the endpoint and the receiver's POST count before the later jobs."""
    first = finish_by_cancel(c, receiver.url)
    wait_until(lambda: delivery_of(c, first)["status"] == "dead", timeout=30, what="the first dead letter")
    [endpoint] = c.get("/v1/webhooks/endpoints").json()["items"]
    assert endpoint["state"] == "enabled" and endpoint["consecutiveFailures"] == 4
    failing_since = datetime.fromisoformat(endpoint["failingSince"])
    # Still failing past the window: the next failure disables the endpoint.
    time.sleep(max(0.0, DISABLE_AFTER_S + 0.5 - (datetime.now(UTC) - failing_since).total_seconds()))
    second = finish_by_cancel(c, receiver.url)
    wait_until(lambda: delivery_of(c, second)["status"] == "disabled", timeout=30,
               what="the endpoint to be disabled")
    [endpoint] = c.get("/v1/webhooks/endpoints").json()["items"]
    assert endpoint["state"] == "disabled" and "failing since" in endpoint["disabledReason"]
    assert endpoint["consecutiveFailures"] >= 5 and endpoint["lastSuccessAt"] is None
    metrics = admin.get("/metrics").text
    assert 'turnout_webhook_endpoints{state="disabled"}' in metrics
    assert not any(line.startswith('turnout_webhook_endpoints{state="disabled"} 0') for line in metrics.splitlines())
    # New jobs queue nothing while it is disabled.
    posts_before = len(receiver.received)
    later = [finish_by_cancel(c, receiver.url) for _ in range(3)]
    for job_id in later:
        d = delivery_of(c, job_id)
        assert d["status"] == "disabled" and d["attempts"] == 0, d
    redeliver = c.post(f"/v1/webhooks/deliveries/{delivery_of(c, later[0])['id']}/redeliver")
    assert redeliver.status_code == 409 and redeliver.json()["error"]["code"] == "endpoint_disabled"
    blocked = c.post("/v1/webhooks/recover", json={"since": started.isoformat()})
    assert blocked.status_code == 202 and blocked.json() == {"requeued": [], "skippedDisabled": 5}
    time.sleep(1.0)
    assert len(receiver.received) == posts_before  # nothing was sent for them
    return [first, second, *later], endpoint, posts_before


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
            missed, endpoint, posts_before = _fail_until_disabled(c, admin, receiver, started)
            # The receiver is back: enable, recover.
            down = False
            enabled = c.post(f"/v1/webhooks/endpoints/{endpoint['id']}/enable")
            assert enabled.status_code == 200 and enabled.json()["state"] == "enabled"
            assert enabled.json()["consecutiveFailures"] == 0
            recovered = c.post("/v1/webhooks/recover", json={"since": started.isoformat()})
            assert recovered.status_code == 202, recovered.text
            assert sorted(recovered.json()["requeued"]) == sorted(delivery_of(c, j)["id"] for j in missed)
            again = c.post("/v1/webhooks/recover", json={"since": started.isoformat()})  # idempotent
            assert again.json()["requeued"] == []
            wait_until(lambda: all(delivery_of(c, j)["status"] == "delivered" for j in missed), timeout=30,
                       what="every missed job delivered")
            time.sleep(1.0)  # a duplicate, if any, would arrive now
            _assert_each_delivered_once_since(c, receiver, posts_before, missed, key.key.webhook_secret)
            failed_ids = {h.delivery for h in receiver.received[:posts_before] if h.job_id == missed[0]}
            assert failed_ids == {str(delivery_of(c, missed[0])["id"])}  # same webhook-id as its failed attempts
            [endpoint] = c.get("/v1/webhooks/endpoints").json()["items"]
            assert endpoint["lastSuccessAt"] is not None and endpoint["consecutiveFailures"] == 0
        actions = query(hooks.settings, "SELECT action, affected FROM webhook_actions WHERE api_key_id = $1 ORDER BY id",
                        key.key.id)
        assert [(a["action"], a["affected"]) for a in actions] == [
            ("recover", 0), ("enable", 1), ("recover", len(missed)), ("recover", 0)]
    finally:
        receiver.stop()
