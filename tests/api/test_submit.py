"""Submitting, reading and cancelling jobs over HTTP, without running them (the idle API's
messages go to a queue prefix no worker consumes)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, query, stack_settings


def _error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body["error"])


def test_submission_is_stored_queued_with_links(idle_client: httpx.Client, settings: Settings, key: IssuedKey) -> None:
    response = idle_client.post("/v1/questions", json={"question": "docker releases", "answerLanguage": "en",
                                                       "pageSize": 5})
    assert response.status_code == 202, response.text
    doc = response.json()
    job_id = doc["id"]
    assert doc["status"] == "queued" and doc["result"] is None and doc["error"] is None
    assert doc["links"]["self"] == f"/v1/jobs/{job_id}" == response.headers["location"]
    assert doc["links"]["events"] == f"/v1/jobs/{job_id}/events"
    assert doc["links"]["pages"] == f"/v1/jobs/{job_id}/pages/{{n}}"
    assert len(job_id) >= 20  # 128 random bits
    [row] = query(settings, "SELECT status, api_key_id, question, answer_language, page_size FROM jobs WHERE id = $1",
                  job_id)
    assert row == {"status": "queued", "api_key_id": key.key.id, "question": "docker releases",
                   "answer_language": "en", "page_size": 5}
    events = query(settings, "SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id", job_id)
    assert [e["kind"] for e in events] == ["queued"]
    polled = idle_client.get(f"/v1/jobs/{job_id}")
    assert polled.status_code == 200 and polled.json()["createdAt"] == doc["createdAt"]


def test_every_job_route_needs_a_key(idle_api: ApiServer, idle_client: httpx.Client) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "x"}).json()["id"]
    with idle_api.client() as anonymous, idle_api.client("tk_nothing.wrong") as forged:
        for c in (anonymous, forged):
            _error(c.post("/v1/questions", json={"question": "x"}), 401, "unauthorized")
            _error(c.get(f"/v1/jobs/{job_id}"), 401, "unauthorized")
            _error(c.delete(f"/v1/jobs/{job_id}"), 401, "unauthorized")
            _error(c.get(f"/v1/jobs/{job_id}/pages/2"), 401, "unauthorized")
            _error(c.get(f"/v1/jobs/{job_id}/events"), 401, "unauthorized")
            _error(c.get("/v1/webhooks/dead-letters"), 401, "unauthorized")


def test_a_revoked_key_is_refused_at_once(idle_api: ApiServer, settings: Settings) -> None:
    from typer.testing import CliRunner

    from turnout.keys_cli import keys_app

    issued = issue_key(settings, "to-revoke")
    with idle_api.client(issued.token) as client:
        job_id = client.post("/v1/questions", json={"question": "x"}).json()["id"]
        assert client.get(f"/v1/jobs/{job_id}").status_code == 200
        outcome = CliRunner().invoke(keys_app, ["revoke", issued.key.id])  # the test process's database
        assert outcome.exit_code == 0, outcome.output
        _error(client.get(f"/v1/jobs/{job_id}"), 401, "unauthorized")
        _error(client.post("/v1/questions", json={"question": "x"}), 401, "unauthorized")


def test_prefer_wait_on_a_job_that_does_not_end_answers_202_after_the_wait(idle_client: httpx.Client) -> None:
    response = idle_client.post("/v1/questions", json={"question": "nobody runs this"}, headers={"Prefer": "wait=1"})
    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert response.headers["Preference-Applied"] == "wait=1"
    # Without a wait it can use, the preference is ignored (RFC 7240): an immediate 202.
    ignored = idle_client.post("/v1/questions", json={"question": "x"}, headers={"Prefer": "wait=soon"})
    assert ignored.status_code == 202 and "Preference-Applied" not in ignored.headers


@pytest.mark.parametrize(("prefer", "wait"), [
    ("wait=10", 10.0), ("respond-async, wait=5", 5.0), ("WAIT = 7", 7.0), ("wait=999", 30.0),
    ("wait=2;x=y", 2.0), ("wait=-1", None), ("wait=1.5", None), ("handling=strict", None), ("", None), (None, None),
])
def test_prefer_wait_parsing(prefer: str | None, wait: float | None) -> None:
    from api.long_poll import preferred_wait

    assert preferred_wait(prefer) == wait


def test_long_poll_of_a_job_that_does_not_end_answers_after_the_wait(idle_client: httpx.Client) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "nobody runs this"}).json()["id"]
    response = idle_client.get(f"/v1/jobs/{job_id}", params={"waitS": 0.5})
    assert response.status_code == 200 and response.json()["status"] == "queued"
    # Cancelling it is its end: a waiting reader is answered with the final state.
    assert idle_client.delete(f"/v1/jobs/{job_id}").status_code == 200
    assert idle_client.get(f"/v1/jobs/{job_id}", params={"waitS": 10}).json()["status"] == "cancelled"


@pytest.mark.parametrize("wait", ["-1", "31", "soon"])
def test_long_poll_wait_out_of_range_is_a_422(idle_client: httpx.Client, wait: str) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "x"}).json()["id"]
    error = _error(idle_client.get(f"/v1/jobs/{job_id}", params={"waitS": wait}), 422, "invalid_request")
    assert "waitS" in str(error["message"])


def test_long_poll_of_another_keys_job_is_a_404(idle_api: ApiServer, idle_client: httpx.Client,
                                                settings: Settings) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "mine"}).json()["id"]
    with idle_api.client(issue_key(settings, "other").token) as other:
        _error(other.get(f"/v1/jobs/{job_id}", params={"waitS": 5}), 404, "not_found")


def test_another_keys_job_does_not_exist(idle_api: ApiServer, idle_client: httpx.Client, settings: Settings) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "mine"}).json()["id"]
    with idle_api.client(issue_key(settings, "other").token) as other:
        _error(other.get(f"/v1/jobs/{job_id}"), 404, "not_found")
        _error(other.delete(f"/v1/jobs/{job_id}"), 404, "not_found")
        _error(other.get(f"/v1/jobs/{job_id}/events"), 404, "not_found")
        _error(other.get(f"/v1/jobs/{job_id}/pages/1"), 404, "not_found")
        _error(other.get("/v1/jobs/job_doesnotexist"), 404, "not_found")
    assert idle_client.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"  # untouched


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": ""}, "question"),
        ({"question": "   \n "}, "question"),
        ({}, "question"),
        ({"question": "x", "answerLanguage": "fr"}, "answerLanguage"),
        ({"question": "x", "pageSize": 0}, "pageSize"),
        ({"question": "x", "pageSize": "many"}, "pageSize"),
        ({"question": "x", "unexpected": 1}, "unexpected"),
        ({"question": 42}, "question"),
    ],
)
def test_bad_requests_are_422_naming_the_field(idle_client: httpx.Client, body: dict[str, object], field: str) -> None:
    error = _error(idle_client.post("/v1/questions", json=body), 422, "invalid_request")
    assert field in str(error["message"]) + json.dumps(error.get("details"))


def test_limits_are_clear_errors_never_500(idle_client: httpx.Client, settings: Settings) -> None:
    limits = settings.limits
    long_question = "q" * (limits.question_max_chars + 1)
    error = _error(idle_client.post("/v1/questions", json={"question": long_question}), 422, "question_too_long")
    assert str(limits.question_max_chars) in str(error["message"])
    assert idle_client.post("/v1/questions", json={"question": "q" * limits.question_max_chars}).status_code == 202

    error = _error(idle_client.post("/v1/questions", json={"question": "x", "pageSize": limits.page_size_max + 1}),
                   422, "invalid_request")
    assert "pageSize" in str(error["message"])

    huge = json.dumps({"question": "x" * (limits.request_max_bytes + 10)})
    error = _error(idle_client.post("/v1/questions", content=huge, headers={"Content-Type": "application/json"}),
                   413, "payload_too_large")
    assert str(limits.request_max_bytes) in str(error["message"])

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams
        for _ in range(limits.request_max_bytes // 1000 + 2):
            yield b" " * 1000

    streamed = idle_client.post("/v1/questions", content=chunks(), headers={"Content-Type": "application/json"})
    _error(streamed, 413, "payload_too_large")

    _error(idle_client.post("/v1/questions", content=b"{not json", headers={"Content-Type": "application/json"}),
           422, "invalid_request")


def test_idempotency_same_body_same_job_other_body_409(idle_client: httpx.Client, settings: Settings) -> None:
    body = {"question": "Was gab es Neues zu Ruby?", "answerLanguage": "de"}
    first = idle_client.post("/v1/questions", json=body, headers={"Idempotency-Key": "order-42"})
    assert first.status_code == 202
    # Same content, other key order and spacing: the same request.
    replay = idle_client.post(
        "/v1/questions", content=' {"answerLanguage": "de",  "question": "Was gab es Neues zu Ruby?"}',
        headers={"Idempotency-Key": "order-42", "Content-Type": "application/json"},
    )
    assert replay.status_code == 202 and replay.json()["id"] == first.json()["id"]
    assert replay.headers["idempotent-replayed"] == "true"

    conflict = idle_client.post("/v1/questions", json={**body, "answerLanguage": "en"},
                                headers={"Idempotency-Key": "order-42"})
    error = _error(conflict, 409, "idempotency_key_reused")
    assert error["details"] == {"jobId": first.json()["id"]}

    other_key = idle_client.post("/v1/questions", json=body, headers={"Idempotency-Key": "order-43"})
    no_key = idle_client.post("/v1/questions", json=body)
    ids = {first.json()["id"], other_key.json()["id"], no_key.json()["id"]}
    assert len(ids) == 3
    rows = query(settings, "SELECT count(*) AS n FROM jobs WHERE idempotency_key = 'order-42'")
    assert rows == [{"n": 1}]
    _error(idle_client.post("/v1/questions", json=body, headers={"Idempotency-Key": "x" * 256}), 422, "invalid_request")


def test_idempotency_keys_are_per_api_key(idle_api: ApiServer, idle_client: httpx.Client, settings: Settings) -> None:
    body = {"question": "shared key name"}
    mine = idle_client.post("/v1/questions", json=body, headers={"Idempotency-Key": "k1"}).json()["id"]
    with idle_api.client(issue_key(settings, "other").token) as other:
        theirs = other.post("/v1/questions", json=body, headers={"Idempotency-Key": "k1"})
    assert theirs.status_code == 202 and theirs.json()["id"] != mine


def test_cancel_a_queued_job_then_409(idle_client: httpx.Client, settings: Settings) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "cancel me"}).json()["id"]
    cancelled = idle_client.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["finishedAt"] is not None
    assert idle_client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    error = _error(idle_client.delete(f"/v1/jobs/{job_id}"), 409, "job_not_cancellable")
    assert "cancelled" in str(error["message"])
    events = query(settings, "SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id", job_id)
    assert [e["kind"] for e in events] == ["queued", "cancelled"]
    _error(idle_client.get(f"/v1/jobs/{job_id}/pages/1"), 409, "job_not_succeeded")


def test_events_of_a_cancelled_job_stream_in_order_and_end(idle_client: httpx.Client) -> None:
    job_id = idle_client.post("/v1/questions", json={"question": "stream me"}).json()["id"]
    idle_client.delete(f"/v1/jobs/{job_id}")
    with idle_client.stream("GET", f"/v1/jobs/{job_id}/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())  # returns: the stream ends after the final status
    events = [block for block in text.split("\r\n\r\n") if block.strip() and not block.startswith(":")]
    kinds = [next(line[7:] for line in e.splitlines() if line.startswith("event: ")) for e in events]
    assert kinds == ["queued", "cancelled"]
    first_id = next(line[4:] for line in events[0].splitlines() if line.startswith("id: "))
    with idle_client.stream("GET", f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": first_id}) as resumed:
        rest = "".join(resumed.iter_text())
    assert "event: cancelled" in rest and "event: queued" not in rest


def test_submissions_are_rate_limited_per_key(settings: Settings) -> None:
    limited = stack_settings(settings, redis_prefix=settings.redis_prefix + "limited:", job_lease_s=86_400.0,
                             limits__submissions_per_minute=2)
    server = ApiServer(limited).start()
    try:
        key, other = issue_key(settings, "burst"), issue_key(settings, "calm")
        with server.client(key.token) as c, server.client(other.token) as o:
            first = c.post("/v1/questions", json={"question": "one"}, headers={"Idempotency-Key": "a"})
            assert first.status_code == 202
            assert c.post("/v1/questions", json={"question": "two"}).status_code == 202
            refused = c.post("/v1/questions", json={"question": "three"})
            error = _error(refused, 429, "rate_limited")
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert error["details"] == {"limitPerMinute": 2, "retryAfterS": int(refused.headers["retry-after"])}
            # A replay returns the stored job and costs nothing; another key has its own budget.
            replay = c.post("/v1/questions", json={"question": "one"}, headers={"Idempotency-Key": "a"})
            assert replay.status_code == 202 and replay.json()["id"] == first.json()["id"]
            assert o.post("/v1/questions", json={"question": "other key"}).status_code == 202
        rows = query(settings, "SELECT count(*) AS n FROM jobs WHERE api_key_id = $1", key.key.id)
        assert rows == [{"n": 2}]  # the refused submission stored nothing
    finally:
        server.stop()
        query(settings, "UPDATE jobs SET status = 'cancelled' WHERE status = 'queued' AND api_key_id IN ($1, $2)",
              key.key.id, other.key.id)


@pytest.fixture(scope="module")
def strict_api(settings: Settings) -> Iterator[ApiServer]:
    """An API that refuses private webhook targets (the session's test config allows them)."""
    strict = stack_settings(settings, redis_prefix=settings.redis_prefix + "strict:", webhook_allow_private=False,
                            job_lease_s=86_400.0)
    server = ApiServer(strict).start()
    yield server
    server.stop()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://2130706433/hook",  # 127.0.0.1 as one number
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://224.0.0.1/hook",
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "http:///nohost",
    ],
)
def test_webhook_targets_refused_at_submission(strict_api: ApiServer, settings: Settings, url: str) -> None:
    with strict_api.client(issue_key(settings, "ssrf").token) as c:
        error = _error(c.post("/v1/questions", json={"question": "x", "webhookUrl": url}), 422, "webhook_url_refused")
        assert str(error["message"]).startswith("webhookUrl: ")


def test_turnout_api_shuts_down_without_waiting_for_long_polls(settings: Settings) -> None:
    """`turnout api` (the CLI's uvicorn) closes a long poll still waiting 5 s into a shutdown,
    instead of waiting for its 30 s."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    from tests.api.support import free_port, settings_env, wait_until
    from tests.support.services import REPO_ROOT

    idle = stack_settings(settings, redis_prefix=settings.redis_prefix + "idle-cli:", job_lease_s=86_400.0)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnout", "api", "--port", str(port)], cwd=REPO_ROOT,
        env={**os.environ, **settings_env(idle)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(f"{base}/v1/jobs/none"), timeout=60, what="the API")  # a 401 is an answer
        token = issue_key(settings, "cli").token
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            job_id = client.post("/v1/questions", json={"question": "nobody runs this"}).json()["id"]
            outcome: list[object] = []

            def long_poll() -> None:
                try:
                    outcome.append(client.get(f"/v1/jobs/{job_id}", params={"waitS": 30}).status_code)
                except httpx.HTTPError as exc:  # closed by the shutdown
                    outcome.append(exc)

            poller = threading.Thread(target=long_poll)
            poller.start()
            time.sleep(1.0)  # the poll is waiting now
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            # uvicorn re-raises the signal once it has shut down: -SIGTERM is a clean exit here.
            assert proc.wait(timeout=25) in (0, -signal.SIGTERM)
            assert time.monotonic() - started < 20  # not the poll's 30 s
            poller.join(timeout=10)
            assert outcome, "the long poll never returned"
    finally:
        if proc.poll() is None:
            proc.kill()
        query(settings, "UPDATE jobs SET status = 'cancelled' WHERE status = 'queued' AND question = 'nobody runs this'")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code < 500
    except httpx.HTTPError:
        return False
