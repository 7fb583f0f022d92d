"""Cancelling a running job end to end (issue 27): the real API, workers, Postgres, Redis and the
scripted LLM (slow, or streaming slowly). A cancel at each safe point -- an LLM round in flight, a
later round after a completed one, a streamed answer -- ends the job `cancelled` with one final
event and one `job.cancelled` webhook; a cancel racing the job's success leaves one end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from infra.settings import Settings
from tests.api.support import index_ruby_articles, query, wait_for_job, wait_until, webhook_receiver
from tests.support.llm_server import Delay, ScriptedLLM, ToolCall, answer_from_passage
from tests.support.services import WorkerGroup

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")

SLOW_S = 25.0  # an LLM call this slow would outlast the test's patience: only an abort ends it in time


def _submit(client: httpx.Client, **body: Any) -> str:
    response = client.post("/v1/questions", json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def _finals(settings: Settings, job_id: str) -> list[str]:
    return [r["kind"] for r in query(
        settings, "SELECT kind FROM job_events WHERE job_id = $1 AND kind IN ('succeeded', 'failed', 'cancelled')",
        job_id)]


def _cancel_running(client: httpx.Client, job_id: str) -> dict[str, Any]:
    response = client.delete(f"/v1/jobs/{job_id}")
    assert response.status_code == 202, response.text
    doc: dict[str, Any] = response.json()
    assert doc["status"] == "running" and doc["cancelRequested"] is True
    return doc


def test_cancel_aborts_an_llm_call_in_flight(client: httpx.Client, llm: ScriptedLLM, settings: Settings) -> None:
    llm.script(Delay(SLOW_S, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))
    with webhook_receiver(200) as receiver:
        job_id = _submit(client, question="ruby posts, the slow model", webhookUrl=receiver.url)
        wait_until(lambda: llm.chat_requests, timeout=30, what="the LLM call")
        started = time.monotonic()
        _cancel_running(client, job_id)
        doc = wait_for_job(client, job_id, timeout=15)
        took = time.monotonic() - started
        hooks = wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")
        time.sleep(0.5)  # a second delivery would arrive by now
        hooks = receiver.for_job(job_id)
    assert doc["status"] == "cancelled", doc
    assert took < SLOW_S / 2, took  # the call was aborted, not waited out
    assert doc["cancelRequested"] is True and doc["result"] is None
    assert doc["usage"]["llmCalls"] == 0  # the aborted call returned nothing
    assert _finals(settings, job_id) == ["cancelled"]
    assert [h.json()["type"] for h in hooks] == ["job.cancelled"]


def test_cancel_after_a_round_keeps_its_usage(client: httpx.Client, llm: ScriptedLLM, settings: Settings) -> None:
    # Round 1 is rejected by the gateway (an unknown sort); round 2 hangs until the cancel stops it.
    llm.script(ToolCall("SearchArticles", {"text": "ruby", "sort": "sideways"}, prompt_tokens=300,
                        completion_tokens=25),
               Delay(SLOW_S, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))
    job_id = _submit(client, question="ruby posts sorted sideways, slowly")
    wait_until(lambda: len(llm.chat_requests) >= 2, timeout=30, what="the second LLM round")
    _cancel_running(client, job_id)
    doc = wait_for_job(client, job_id, timeout=15)
    assert doc["status"] == "cancelled", doc
    assert doc["usage"] == {"llmCalls": 1, "inputTokens": 300, "outputTokens": 25, "totalTokens": 325,
                            "costUsd": 0.00006}  # (300 x 0.15 + 25 x 0.60) / 1M: the default price table
    assert _finals(settings, job_id) == ["cancelled"]
    audit = query(settings, "SELECT kind FROM audit_events WHERE job_id = $1 AND kind = 'llm_round'", job_id)
    assert len(audit) == 1  # the first round's audit row was written before the end


@pytest.fixture(scope="module")
def indexed_articles(celery_worker: WorkerGroup, settings: Settings, shared_corpus: Any) -> Iterator[list[str]]:
    yield index_ruby_articles(settings)


def test_cancel_stops_a_streamed_answer_between_chunks(
    client: httpx.Client, llm: ScriptedLLM, indexed_articles: list[str], settings: Settings
) -> None:
    llm.script(ToolCall("AskArticles", {"question": "Which Ruby release is the newest one?", "language": "en"}))
    # A long answer, a word every 0.1 s: it would stream for well over a minute.
    llm.on_chat(lambda body: answer_from_passage(body, repeat=60, chunk_delay_s=0.1))
    job_id = _submit(client, question="Which Ruby release is the newest one?")

    def deltas() -> int:
        return len(query(settings, "SELECT id FROM job_events WHERE job_id = $1 AND kind = 'answer_delta'", job_id))

    wait_until(lambda: deltas() >= 2, timeout=60, what="the answer streaming")
    _cancel_running(client, job_id)
    doc = wait_for_job(client, job_id, timeout=15)
    assert doc["status"] == "cancelled", doc
    written = deltas()
    time.sleep(1.5)  # an answer still streaming would write a delta every ~0.1-0.5 s
    assert deltas() == written
    rows = query(settings, "SELECT kind FROM job_events WHERE job_id = $1 ORDER BY id", job_id)
    assert rows[-1]["kind"] == "cancelled" and _finals(settings, job_id) == ["cancelled"]


@pytest.mark.parametrize("cancel_after_s", [0.15, 0.3, 0.45])
def test_cancel_racing_success_leaves_one_end(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings, cancel_after_s: float
) -> None:
    llm.script(Delay(0.3, ToolCall("SearchArticles", {"text": "security", "language": "en"})))
    with webhook_receiver(200) as receiver:
        job_id = _submit(client, question=f"security advisories, race {cancel_after_s}", webhookUrl=receiver.url)
        wait_for_job(client, job_id, until=lambda d: d["status"] != "queued", timeout=30)
        time.sleep(cancel_after_s)
        answer = client.delete(f"/v1/jobs/{job_id}")
        doc = wait_for_job(client, job_id, timeout=30)
        wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")
        time.sleep(0.5)
        hooks = receiver.for_job(job_id)
    assert answer.status_code in (202, 409), answer.text
    assert doc["status"] in ("succeeded", "cancelled"), doc
    if answer.status_code == 409:  # it had ended first
        assert doc["status"] == "succeeded"
    assert _finals(settings, job_id) == [doc["status"]]
    assert [h.json()["type"] for h in hooks] == [f"job.{doc['status']}"]
