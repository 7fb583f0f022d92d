"""What the webhook tests share: the stack (a real worker on `webhooks` and `maintenance` with a
shortened retry schedule, an API), a receiver's verification with two independent Standard
Webhooks libraries, and jobs that end by cancellation (a final status like any other, so no
router is involved). The stack fixture, `hooks`, is in tests/api/conftest.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook as StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError as StandardError
from svix.webhooks import Webhook as SvixWebhook
from svix.webhooks import WebhookVerificationError as SvixError

from infra.settings import Settings
from tests.api.support import ApiServer, ReceivedHook
from tests.support.services import WorkerProcess

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


def finish_by_cancel(c: httpx.Client, url: str) -> str:
    submitted = c.post("/v1/questions", json={"question": "notify me", "webhookUrl": url})
    assert submitted.status_code == 202, submitted.text
    job_id: str = submitted.json()["id"]
    assert c.delete(f"/v1/jobs/{job_id}").status_code == 200
    return job_id


def delivery_of(c: httpx.Client, job_id: str) -> dict[str, Any]:
    items = c.get("/v1/webhooks/deliveries", params={"limit": 200}).json()["items"]
    return next(d for d in items if d["jobId"] == job_id)
