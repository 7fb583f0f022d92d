"""POST /v1/jobs/{id}/retry and admin bulk retry runs: a new job with the same question and
options, linked both ways, idempotent per original unless forced, the original unchanged."""

from __future__ import annotations

import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, query, wait_for_job
from tests.support.llm_server import ScriptedLLM

OPTIONS = {"answerLanguage": "de", "pageSize": 3, "language": "en"}


def _submit(http: httpx.Client, question: str) -> dict[str, Any]:
    response = http.post("/v1/questions", json={"question": question, **OPTIONS})
    assert response.status_code == 202, response.text
    document: dict[str, Any] = response.json()
    return document


def _fail(settings: Settings, job_id: str) -> None:
    query(settings, "UPDATE jobs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1",
          job_id, {"code": "llm_unavailable", "message": "scripted"})


def test_a_retry_is_a_new_linked_job_idempotent_unless_forced(idle_api: ApiServer, settings: Settings) -> None:
    key = issue_key(settings, "retrier")
    with idle_api.client(key.token) as http:
        original = _submit(http, "retry me please")
        assert http.post(f"/v1/jobs/{original['id']}/retry").status_code == 409  # still queued
        _fail(settings, original["id"])
        before = http.get(f"/v1/jobs/{original['id']}").json()

        first = http.post(f"/v1/jobs/{original['id']}/retry")
        assert first.status_code == 201, first.text
        retry = first.json()
        assert first.headers["Location"].endswith(retry["id"]) and retry["id"] != original["id"]
        assert retry["retryOf"] == original["id"] and retry["status"] == "queued"
        assert {k: retry[k] for k in ("question", *OPTIONS)} == {k: original[k] for k in ("question", *OPTIONS)}

        again = http.post(f"/v1/jobs/{original['id']}/retry")
        assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json()["id"] == retry["id"]
        forced = http.post(f"/v1/jobs/{original['id']}/retry", params={"force": "true"})
        assert forced.status_code == 201 and forced.json()["id"] not in (retry["id"], original["id"])

        after = http.get(f"/v1/jobs/{original['id']}").json()
        assert after["retries"] == [retry["id"], forced.json()["id"]]
        assert {k: v for k, v in after.items() if k != "retries"} == {k: v for k, v in before.items() if k != "retries"}
        events = query(settings, "SELECT kind FROM job_events WHERE job_id = $1", retry["id"])
        assert [e["kind"] for e in events] == ["queued"]


def test_concurrent_retries_of_one_job_make_one_job(idle_api: ApiServer, settings: Settings) -> None:
    key = issue_key(settings, "racer")
    with idle_api.client(key.token) as http:
        original = _submit(http, "raced retry")["id"]
    _fail(settings, original)

    def retry(_: int) -> tuple[int, str]:
        with idle_api.client(key.token) as http:
            response = http.post(f"/v1/jobs/{original}/retry")
            return response.status_code, response.json()["id"]

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(retry, range(8)))
    assert {job_id for _, job_id in outcomes} == {outcomes[0][1]}
    assert sorted(status for status, _ in outcomes) == [200] * 7 + [201]
    assert len(query(settings, "SELECT id FROM jobs WHERE retry_of = $1", original)) == 1


def test_another_keys_job_cannot_be_retried(idle_api: ApiServer, settings: Settings) -> None:
    owner, other = issue_key(settings, "owner"), issue_key(settings, "other")
    with idle_api.client(owner.token) as http:
        job_id = _submit(http, "mine")["id"]
    _fail(settings, job_id)
    with idle_api.client(other.token) as http:
        response = http.post(f"/v1/jobs/{job_id}/retry")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert query(settings, "SELECT retries FROM jobs WHERE id = $1", job_id)[0]["retries"] == []


@pytest.mark.usefixtures("celery_worker", "shared_corpus")
def test_the_retry_runs_like_the_original(api: ApiServer, settings: Settings, llm: ScriptedLLM) -> None:
    llm.fail_every_call()  # the fallback route: deterministic, no model
    key = issue_key(settings, "rerun")
    with api.client(key.token) as http:
        original = wait_for_job(http, _submit(http, "ruby security articles")["id"])
        retry = http.post(f"/v1/jobs/{original['id']}/retry")
        assert retry.status_code == 201
        done = wait_for_job(http, retry.json()["id"])
    assert original["status"] == done["status"] == "succeeded"
    assert done["result"]["tool"] == original["result"]["tool"]
    assert done["result"]["articles"]["pageSize"] == original["result"]["articles"]["pageSize"] == 3


def _run_ended(http: httpx.Client, run: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while run["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, run
        time.sleep(0.2)
        run = http.get(f"/v1/admin/jobs/retry-runs/{run['id']}").json()
    return run


@pytest.mark.usefixtures("celery_worker")
def test_an_admin_retries_by_filter_as_a_tracked_run(api: ApiServer, settings: Settings) -> None:
    word = "bulk" + secrets.token_hex(4)
    key, admin = issue_key(settings, "bulk"), issue_key(settings, "bulk-admin", admin=True)
    with api.client(key.token) as http:
        ids = [_submit(http, f"{word} question {i}")["id"] for i in range(3)]
    # Finished as failed, not run: the run only has to find and retry them (lease of a day: no sweeper).
    query(settings, "UPDATE jobs SET status = 'failed', finished_at = now(), lease_expires_at = now() + interval '1 day' "
          "WHERE id = ANY($1)", ids)
    with api.client(admin.token) as http:
        assert api.client(key.token).post("/v1/admin/jobs/retry-runs", json={"q": word}).status_code == 403
        started = http.post("/v1/admin/jobs/retry-runs", json={"q": word, "status": ["failed"]})
        assert started.status_code == 202, started.text
        run = started.json()
        assert run["total"] == 3 and run["filters"]["q"] == word
        run = _run_ended(http, run)
        assert run["status"] == "succeeded" and run["done"] == 3 and run["skipped"] == 0
        again = http.post("/v1/admin/jobs/retry-runs", json={"q": word, "status": ["failed"]}).json()
        assert again["total"] >= 3  # and their retries, if they have failed meanwhile
        # Ended before the test does: a retry it made afterwards would run in a later test and take that
        # test's scripted replies (seen in a two-process run: a routing call in the MCP stdio test).
        assert _run_ended(http, again)["status"] == "succeeded"
    retries = query(settings, "SELECT retry_of FROM jobs WHERE retry_of = ANY($1)", ids)
    assert sorted(r["retry_of"] for r in retries) == sorted(ids)  # one each, also after the second run


def test_an_mcp_jobs_retry_keeps_its_tool_call_and_source(idle_api: ApiServer, settings: Settings) -> None:
    key = issue_key(settings, "mcp-retry")
    call = {"tool": "SearchArticles", "arguments": {"text": "ruby", "pageSize": 2}}
    job_id = "job_mcp_" + secrets.token_hex(6)
    query(settings, "INSERT INTO jobs (id, api_key_id, status, question, source, client, tool_call, finished_at) "
          "VALUES ($1, $2, 'failed', 'ruby', 'mcp', 'host/1.0', $3, now())", job_id, key.key.id, json.dumps(call))
    with idle_api.client(key.token) as http:
        retry = http.post(f"/v1/jobs/{job_id}/retry")
    assert retry.status_code == 201 and retry.json()["source"] == "mcp"
    row = query(settings, "SELECT source, client, tool_call, retry_of FROM jobs WHERE id = $1", retry.json()["id"])[0]
    assert {**row, "tool_call": json.loads(row["tool_call"])} == {
        "source": "mcp", "client": "host/1.0", "tool_call": call, "retry_of": job_id}
