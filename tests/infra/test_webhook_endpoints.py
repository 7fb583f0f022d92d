"""Endpoint health in the database (migration 0005 and infra/db/webhooks.py): deliveries are filed
per (API key, origin); a failure past the disable window or a 410 disables the endpoint and every
delivery still pending to it; a disabled endpoint's new and claimed deliveries are `disabled`."""

from __future__ import annotations

import asyncpg

from infra.db import webhooks as webhooks_db
from infra.db.api_keys import create_key
from infra.db.jobs import cancel_job, create_job


async def _delivery(conn: asyncpg.Connection, key_id: str, url: str) -> webhooks_db.Delivery:
    job, _ = await create_job(conn, api_key_id=key_id, question="q", answer_language=None, page_size=None,
                              webhook_url=url, idempotency_key=None, request_hash="h", lease_s=60)
    _, finished = await cancel_job(conn, job.id, api_key_id=key_id)
    assert finished is not None and finished.delivery_id is not None
    delivery = await webhooks_db.get_delivery(conn, finished.delivery_id, api_key_id=None)
    assert delivery is not None
    return delivery


async def _fail(conn: asyncpg.Connection, d: webhooks_db.Delivery, *, code: int = 503,
                outcome: webhooks_db.AttemptOutcome = "retry") -> webhooks_db.AttemptOutcome:
    return await webhooks_db.finish_attempt(
        conn, d.id, attempt=1, outcome=outcome, status_code=code, error=f"HTTP {code}", latency_ms=1.0,
        retry_in_s=0.0, endpoint_id=d.endpoint_id, endpoint_result="gone" if code == 410 else "failed",
        disable_after_s=60.0,
    )


async def test_deliveries_are_filed_per_key_and_origin(db: asyncpg.Pool) -> None:
    async with db.acquire() as conn:
        key, other = (await create_key(conn, "ep")).key, (await create_key(conn, "ep")).key
        a = await _delivery(conn, key.id, "https://User:pw@Hooks.Example.com:8443/a")
        b = await _delivery(conn, key.id, "https://hooks.example.com:8443/b?x=1")
        c = await _delivery(conn, key.id, "https://hooks.example.com:9443/a")
        d = await _delivery(conn, other.id, "https://hooks.example.com:8443/a")
        assert a.endpoint_id == b.endpoint_id and len({a.endpoint_id, c.endpoint_id, d.endpoint_id}) == 3
        [first, second] = await webhooks_db.list_endpoints(conn, api_key_id=key.id)
        assert (first.origin, second.origin) == ("https://hooks.example.com:8443", "https://hooks.example.com:9443")


async def test_failing_past_the_window_disables_the_endpoint_and_its_pending_deliveries(db: asyncpg.Pool) -> None:
    async with db.acquire() as conn:
        key = (await create_key(conn, "ep")).key
        url = "https://down.example.com/hook"
        current, waiting = await _delivery(conn, key.id, url), await _delivery(conn, key.id, url)
        assert await _fail(conn, current) == "retry"  # the streak starts; not disabled yet
        [endpoint] = await webhooks_db.list_endpoints(conn, api_key_id=key.id)
        assert endpoint.consecutive_failures == 1 and endpoint.disabled_at is None
        await conn.execute("UPDATE webhook_endpoints SET failing_since = now() - interval '61 seconds' WHERE id = $1",
                           endpoint.id)
        assert await _fail(conn, current) == "disabled"  # failing for longer than the window
        [endpoint] = await webhooks_db.list_endpoints(conn, api_key_id=key.id)
        assert endpoint.disabled_at is not None and "failing since" in (endpoint.disabled_reason or "")
        after = await webhooks_db.get_delivery(conn, waiting.id, api_key_id=None)
        assert after is not None and after.status == "disabled" and after.last_error == webhooks_db.DISABLED_ERROR
        new = await _delivery(conn, key.id, url + "?again")  # a new job: recorded, not queued
        assert new.status == "disabled" and new.attempts == 0
        # Enabling forgets the streak; a success afterwards records the last success.
        enabled = await webhooks_db.enable_endpoint(conn, endpoint.id, api_key_id=key.id)
        assert enabled is not None and enabled.disabled_at is None and enabled.consecutive_failures == 0
        assert await webhooks_db.redeliver(conn, new.id) and not await webhooks_db.redeliver(conn, new.id)
        claimed = await webhooks_db.claim_delivery(conn, new.id, hold_s=30)
        assert claimed is not None and claimed.round_attempts == 1
        await webhooks_db.finish_attempt(conn, new.id, attempt=1, outcome="delivered", status_code=200, error=None,
                                         latency_ms=1.0, endpoint_id=new.endpoint_id, endpoint_result="ok")
        [endpoint] = await webhooks_db.list_endpoints(conn, api_key_id=key.id)
        assert endpoint.last_success_at is not None and endpoint.failing_since is None


async def test_a_410_disables_at_once_and_a_claim_skips_a_disabled_endpoint(db: asyncpg.Pool) -> None:
    async with db.acquire() as conn:
        key = (await create_key(conn, "ep")).key
        gone, pending = (await _delivery(conn, key.id, "https://gone.example.com/h"),
                         await _delivery(conn, key.id, "https://gone.example.com/h"))
        assert await _fail(conn, gone, code=410, outcome="dead") == "dead"  # the 410 itself is a dead letter
        [endpoint] = await webhooks_db.list_endpoints(conn, api_key_id=key.id)
        assert endpoint.disabled_reason == "the receiver answered 410 Gone"
        # A delivery that was pending when it was disabled (its row changed to disabled already):
        # queue it by hand as a stale message would find it, and the claim still refuses it.
        await conn.execute("UPDATE webhook_deliveries SET status = 'pending' WHERE id = $1", pending.id)
        assert await webhooks_db.claim_delivery(conn, pending.id, hold_s=30) is None
        after = await webhooks_db.get_delivery(conn, pending.id, api_key_id=None)
        assert after is not None and after.status == "disabled" and after.attempts == 0
