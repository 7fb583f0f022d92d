"""Webhook receivers that hang (longer than TURNOUT_WEBHOOK_TIMEOUT_S, 1.5 s in the drill) or
answer 500: every attempt is recorded, the delivery ends delivered (the receiver recovered) or
dead-lettered (after the last step of TURNOUT_WEBHOOK_RETRY_SCHEDULE_S, 4 retries in the drill), and each job has exactly one
delivery row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.api.support import WebhookReceiver, query
from tests.proof.conftest import (
    WEBHOOK_TIMEOUT_S,
    DrillStack,
    TaggedLLM,
    assert_final_once,
    submit,
    wait_final,
)
from tests.support.llm_server import ToolCall

pytestmark = pytest.mark.slow


def _attempts(stack: DrillStack, job_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    [delivery] = query(stack.settings, "SELECT id, status, attempts, last_status_code, last_error, created_at "
                       "FROM webhook_deliveries WHERE job_id = $1", job_id)
    attempts = query(stack.settings, "SELECT attempt, status_code, error, created_at FROM webhook_attempts "
                     "WHERE delivery_id = $1 ORDER BY attempt", delivery["id"])
    return delivery, attempts


def test_hanging_and_failing_receivers(drill_stack: DrillStack, tagged: TaggedLLM,
                                       hooks: Callable[..., WebhookReceiver]) -> None:
    tagged.on("hook", lambda n, body: ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    hangs_once = hooks(lambda n: (200, WEBHOOK_TIMEOUT_S + 2.0) if n == 0 else (200, 0.0))
    fails_always = hooks(lambda n: (500, 0.0))
    hangs_always = hooks(lambda n: (200, WEBHOOK_TIMEOUT_S + 2.0))
    with drill_stack.client("hooks") as c:
        jobs = {
            "hangs_once": submit(c, "find ruby news [drill:hook] 1", hangs_once.url),
            "fails_always": submit(c, "find ruby news [drill:hook] 2", fails_always.url),
            "hangs_always": submit(c, "find ruby news [drill:hook] 3", hangs_always.url),
        }
        docs = wait_final(c, list(jobs.values()))
    assert_final_once(drill_stack.settings, docs, webhook=True)  # also waits until no delivery is pending
    assert {d["status"] for d in docs.values()} == {"succeeded"}

    # A receiver that hung once: attempt 1 timed out (recorded), attempt 2 delivered.
    delivery, attempts = _attempts(drill_stack, jobs["hangs_once"])
    assert delivery["status"] == "delivered" and delivery["attempts"] == 2, delivery
    assert attempts[0]["status_code"] is None and "Timeout" in attempts[0]["error"], attempts
    assert attempts[1]["status_code"] == 200 and attempts[1]["error"] is None
    assert len(hangs_once.for_job(jobs["hangs_once"])) == 2
    assert len({h.delivery for h in hangs_once.for_job(jobs["hangs_once"])}) == 1  # same webhook-id

    # Receivers that never recover: retried with back-off, then dead-lettered once too old.
    for name, receiver, code, error in (("fails_always", fails_always, 500, "HTTP 500"),
                                        ("hangs_always", hangs_always, None, "Timeout")):
        delivery, attempts = _attempts(drill_stack, jobs[name])
        assert delivery["status"] == "dead", (name, delivery)
        assert len(attempts) == delivery["attempts"] >= 2, (name, attempts)
        assert [a["attempt"] for a in attempts] == list(range(1, len(attempts) + 1))
        assert all(a["status_code"] == code and error in a["error"] for a in attempts), (name, attempts)
        assert len(receiver.for_job(jobs[name])) == len(attempts)  # every POST is an audited attempt
