"""Jobs end to end: the real API over HTTP, the real workers (router, search, rag), Postgres,
Redis, the scripted LLM. Each result type's full lifecycle; LLM-free pages; live SSE; the webhook
of a succeeded job (cancelling a running job: tests/api/test_cancel_running.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from infra import webhook_signing
from infra.db.api_keys import IssuedKey
from infra.results import NormalizedSearch
from infra.settings import Settings
from retrieval.search import search_articles
from tests.api.support import (
    ApiServer,
    index_ruby_articles,
    query,
    wait_for_job,
    wait_until,
    webhook_receiver,
)
from tests.support.llm_server import Delay, ScriptedLLM, Text, ToolCall, answer_from_passage
from tests.support.services import WorkerGroup

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


@dataclass
class EventRecorder:
    """Reads a job's SSE stream in a thread, from submission until the stream ends."""

    client: httpx.Client
    job_id: str
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    error: BaseException | None = None  # what stopped the reader early, raised by join()
    _thread: threading.Thread | None = None

    def start(self) -> EventRecorder:
        def read() -> None:
            import json

            try:
                with self.client.stream("GET", f"/v1/jobs/{self.job_id}/events", timeout=60) as response:
                    assert response.status_code == 200
                    block: dict[str, str] = {}
                    for line in response.iter_lines():
                        if line == "":
                            if "event" in block:
                                self.events.append((int(block["id"]), block["event"], json.loads(block["data"])))
                            block = {}
                        elif not line.startswith(":"):
                            name, _, value = line.partition(": ")
                            block[name] = value
            except BaseException as exc:  # a dead reader's partial events must not pass for the stream
                self.error = exc

        self._thread = threading.Thread(target=read, daemon=True)
        self._thread.start()
        return self

    def join(self) -> list[str]:
        assert self._thread is not None
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the event stream did not end after the final status"
        if self.error is not None:
            raise AssertionError(f"the event reader failed after {len(self.events)} events") from self.error
        return [kind for _, kind, _ in self.events]


def test_long_poll_answers_with_the_finished_job(client: httpx.Client, llm: ScriptedLLM) -> None:
    # The LLM takes a second: the job is still running when the long poll starts.
    llm.script(Delay(1.0, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))
    job_id = _submit(client, question="ruby news")
    response = client.get(f"/v1/jobs/{job_id}", params={"waitS": 30}, timeout=60)
    assert response.status_code == 200
    doc = response.json()
    assert doc["status"] == "succeeded" and doc["result"]["resultType"] == "SearchResult", doc
    assert doc == client.get(f"/v1/jobs/{job_id}").json()  # the same document a plain GET returns


def test_prefer_wait_answers_the_submission_with_the_finished_job(client: httpx.Client, llm: ScriptedLLM) -> None:
    llm.script(Delay(0.5, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))
    question = {"question": "ruby news, answered while the client waits"}  # not in the decision cache
    response = client.post("/v1/questions", json=question,
                           headers={"Prefer": "respond-async, wait=30", "Idempotency-Key": "prefer-wait-1"}, timeout=60)
    assert response.status_code == 200, response.text  # waited for, and ended: its outcome
    assert response.headers["Preference-Applied"] == "wait=30"
    doc = response.json()
    assert doc["status"] == "succeeded" and doc["result"]["resultType"] == "SearchResult", doc
    assert response.headers["Location"] == doc["links"]["self"]
    assert doc == client.get(f"/v1/jobs/{doc['id']}").json()
    # A replay with the same preference answers at once: the job has ended.
    replay = client.post("/v1/questions", json=question,
                         headers={"Prefer": "wait=30", "Idempotency-Key": "prefer-wait-1"})
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json() == doc
    assert len(llm.chat_requests) == 1


def _submit(client: httpx.Client, **body: Any) -> str:
    response = client.post("/v1/questions", json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def _search(settings: Settings, filters: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        from infra.db.pool import create_pool

        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            return (await search_articles(pool, NormalizedSearch.model_validate(filters))).wire()
        finally:
            await pool.close()

    return asyncio.run(go())


def test_search_result_lifecycle_with_llm_free_pages(
    api: ApiServer, client: httpx.Client, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "ruby release", "language": "en"},
                        prompt_tokens=700, completion_tokens=25))
    with webhook_receiver(200) as receiver:
        job_id = _submit(client, question="Ruby releases, in English please", pageSize=5, webhookUrl=receiver.url)
        recorder = EventRecorder(client, job_id).start()
        doc = wait_for_job(client, job_id)
        kinds = recorder.join()
        hooks = wait_until(lambda: receiver.for_job(job_id), timeout=20, what="the webhook")

    assert doc["status"] == "succeeded", doc
    result = doc["result"]
    assert result["resultType"] == "SearchResult" and result["status"] == "answered"
    assert result["search"]["text"] and result["search"]["language"] == "en" and result["search"]["page"] == 1
    articles = result["articles"]
    assert articles["pageSize"] == 5 and len(articles["items"]) == 5 and articles["totalPages"] >= 3
    assert all(item["language"] == "en" for item in articles["items"])
    # priced by the default table (gpt-4o-mini: $0.15 in, $0.60 out per 1M tokens)
    assert doc["usage"] == {"llmCalls": 1, "inputTokens": 700, "outputTokens": 25, "totalTokens": 725,
                            "costUsd": 0.00012}
    assert doc["error"] is None and doc["attempts"] == 1
    assert doc["createdAt"] <= doc["startedAt"] <= doc["finishedAt"]

    # Live SSE, in order, ending with the final status.
    assert kinds[:3] == ["queued", "running", "routing"] and kinds[-1] == "succeeded"
    assert kinds.index("llm_round") < kinds.index("tool_started") < kinds.index("tool_finished")
    ids = [event_id for event_id, _, _ in recorder.events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert recorder.events[-1][2]["data"] == {"resultType": "SearchResult", "status": "answered"}

    # The webhook: one signed delivery of exactly the polled document.
    [hook] = hooks
    webhook_signing.verify(key.key.webhook_secret, hook.headers, hook.body)
    assert hook.json()["data"] == client.get(f"/v1/jobs/{job_id}").json()
    assert hook.json()["type"] == "job.succeeded"

    # Pages 2..N with an LLM that fails any call: zero LLM calls, proven.
    llm.reset()
    llm.fail_every_call("pages must not call the LLM")
    _assert_pages_come_from_search_then_cache(client, settings, job_id, result)
    assert llm.chat_requests == [] and llm.requests == []
    assert client.get(f"/v1/jobs/{job_id}").json()["usage"] == doc["usage"]
    audit = query(settings, "SELECT kind FROM audit_events WHERE job_id = $1 AND kind = 'llm_round'", job_id)
    assert len(audit) == 1  # only the routing round, none for pages


def _assert_pages_come_from_search_then_cache(
    client: httpx.Client, settings: Settings, job_id: str, result: dict[str, Any]
) -> None:
    """Pages 2..N: first from the search (each its own articles), again from the cache; out of range refused."""
    articles = result["articles"]
    total_pages = articles["totalPages"]
    seen_ids = {item["id"] for item in articles["items"]}
    first = client.get(f"/v1/jobs/{job_id}/pages/1").json()
    assert first["source"] == "cache" and first["result"]["articles"] == articles  # cached by the runner
    for n in range(2, min(total_pages, 4) + 1):
        page = client.get(f"/v1/jobs/{job_id}/pages/{n}")
        assert page.status_code == 200, page.text
        body = page.json()
        assert body["source"] == "search" and body["page"] == n
        assert body["result"]["search"] == {**result["search"], "page": n}
        assert body["result"]["articles"] == _search(settings, body["result"]["search"])
        items = body["result"]["articles"]["items"]
        assert len(items) == 5 and not seen_ids & {i["id"] for i in items}
        seen_ids |= {i["id"] for i in items}
        again = client.get(f"/v1/jobs/{job_id}/pages/{n}").json()
        assert again["source"] == "cache" and again["result"] == body["result"]
    last = client.get(f"/v1/jobs/{job_id}/pages/{total_pages}").json()
    assert 1 <= len(last["result"]["articles"]["items"]) <= 5
    beyond = client.get(f"/v1/jobs/{job_id}/pages/{total_pages + 1}")
    assert beyond.status_code == 404 and beyond.json()["error"]["code"] == "page_out_of_range"
    assert client.get(f"/v1/jobs/{job_id}/pages/0").status_code == 422


def test_combined_result_keeps_its_answer_on_every_page(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings, indexed_articles: list[str]
) -> None:
    llm.script(
        ToolCall("SearchAndAskArticles", {"text": "ruby", "language": "en", "question": "What was released?"}),
        Text("Several Ruby versions were released [1].", prompt_tokens=900, completion_tokens=40),
    )
    job_id = _submit(client, question="Find Ruby news and tell me what was released", pageSize=3)
    doc = wait_for_job(client, job_id)
    assert doc["status"] == "succeeded", doc
    result = doc["result"]
    assert result["resultType"] == "CombinedResult", result
    assert result["status"] == "answered" and result["answer"] == "Several Ruby versions were released [1]."
    assert result["sources"] and set(s["articleId"] for s in result["sources"]) <= {
        i["id"] for i in result["articles"]["items"]}  # answered from exactly the page's articles
    assert result["articles"]["totalPages"] >= 2
    assert doc["usage"]["llmCalls"] == len(llm.chat_requests) >= 1

    llm.reset()
    llm.fail_every_call("pages must not call the LLM")
    for n in range(1, min(result["articles"]["totalPages"], 3) + 1):
        body = client.get(f"/v1/jobs/{job_id}/pages/{n}").json()
        page_result = body["result"]
        for unchanged in ("answer", "sources", "answerKind", "answerLanguage", "status", "coverageLimited",
                          "question", "usage", "routedBy", "tool"):
            assert page_result[unchanged] == result[unchanged], unchanged
        assert page_result["articles"]["page"] == n
    assert llm.chat_requests == []


def test_answer_result_lifecycle_has_no_pages(
    client: httpx.Client, llm: ScriptedLLM, indexed_articles: list[str], settings: Settings
) -> None:
    llm.script(ToolCall("AskArticles", {"question": "How do I upgrade Ruby safely?", "language": "en"}))
    # An answer the answer check accepts: passage [1]'s first sentence, cited.
    llm.on_chat(lambda body: answer_from_passage(body, prompt_tokens=800, completion_tokens=30))
    job_id = _submit(client, question="How do I upgrade Ruby safely?")
    doc = wait_for_job(client, job_id)
    assert doc["status"] == "succeeded", doc
    result = doc["result"]
    assert result["resultType"] == "AnswerResult" and result["articles"] is None and result["search"] is None
    written = answer_from_passage(llm.chat_requests[-1]).content
    assert result["status"] == "answered" and result["answer"] == written and result["answerKind"] == "llm"
    # The session's vector store also holds other suites' articles: what must hold is that every
    # source is a visible English article.
    cited = {s["articleId"] for s in result["sources"]}
    visible_en = {r["id"] for r in query(
        settings, "SELECT id FROM localizations WHERE id = ANY($1) AND language = 'en' AND published AND NOT hidden",
        list(cited),
    )}
    assert cited and cited == visible_en, (cited, visible_en)
    usage = doc["usage"]
    assert usage["llmCalls"] >= 2  # the routing round and the answer
    # Both calls priced (router and answer model are gpt-4o-mini here: $0.15 / $0.60 per 1M tokens).
    assert usage["costUsd"] == pytest.approx((usage["inputTokens"] * 0.15 + usage["outputTokens"] * 0.60) / 1e6)
    assert usage["inputTokens"] >= 920  # the answer's 800 prompt tokens are in it
    refused = client.get(f"/v1/jobs/{job_id}/pages/2")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_paginated"


def test_failed_job_has_a_clear_error(client: httpx.Client, llm: ScriptedLLM) -> None:
    # Four different invalid calls: the router gives up when the rounds run out.
    llm.script(*(ToolCall("SearchArticles", {"text": "ruby", "sort": order}) for order in ("a", "b", "c", "d")))
    job_id = _submit(client, question="ruby ruby ruby, tell me something, anything at all")
    doc = wait_for_job(client, job_id)
    assert doc["status"] == "failed", doc
    assert doc["result"] is None
    assert doc["error"]["code"] == "limit_max_rounds" and doc["error"]["message"]
    assert doc["usage"]["llmCalls"] == 4
    events = client.get(f"/v1/jobs/{job_id}/events")
    assert events.text.rstrip().split("\r\n\r\n")[-1].count("event: failed") == 1


@pytest.fixture(scope="module")
def indexed_articles(celery_worker: WorkerGroup, settings: Settings, shared_corpus: Any) -> Iterator[list[str]]:
    yield index_ruby_articles(settings)


def test_more_jobs_than_worker_threads_all_finish(client: httpx.Client, llm: ScriptedLLM) -> None:
    """Jobs wait for search tasks served by the same worker: they must never take every thread
    (the runner keeps one free), or they would wait for searches no thread is left to run."""
    llm.on_chat(lambda body: Delay(0.5, ToolCall("SearchArticles", {"text": "security", "language": "en"})))
    job_ids = [_submit(client, question=f"security advisories, batch question {i}") for i in range(8)]
    docs = [wait_for_job(client, job_id, timeout=60) for job_id in job_ids]
    assert [d["status"] for d in docs] == ["succeeded"] * 8, [d["error"] for d in docs]
    assert all(d["attempts"] == 1 for d in docs)


def _read_sse(client: httpx.Client, job_id: str, *, last_event_id: str | None = None,
              stop_at: str | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """The job's SSE events (id, kind, data) until the stream ends or the first `stop_at` event."""
    import json

    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    events: list[tuple[int, str, dict[str, Any]]] = []
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers, timeout=60) as response:
        assert response.status_code == 200
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "":
                if "event" in block:
                    events.append((int(block["id"]), block["event"], json.loads(block["data"])))
                    if block["event"] == stop_at:
                        break
                block = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                block[name] = value
    return events


def test_answer_deltas_stream_before_the_end_and_resume_without_loss(
    client: httpx.Client, llm: ScriptedLLM, indexed_articles: list[str], settings: Settings
) -> None:
    llm.script(ToolCall("AskArticles", {"question": "Which Ruby release should I upgrade to?", "language": "en"}))
    # An answer drawn from its passages (the answer check accepts it), long enough to stream in many deltas.
    llm.on_chat(lambda body: answer_from_passage(body, repeat=6, chunk_delay_s=0.05))
    # A question of its own: another test's routing decision for the same question would be cached.
    job_id = _submit(client, question="Which Ruby release should I upgrade to?")
    first = _read_sse(client, job_id, stop_at="answer_delta")  # then the client drops
    assert first[-1][1] == "answer_delta"
    rest = _read_sse(client, job_id, last_event_id=str(first[-1][0]))
    events = first + rest
    ids = [e[0] for e in events]
    assert ids == sorted(set(ids))  # no duplicate, in order
    kinds = [e[1] for e in events]
    assert kinds[-1] == "succeeded" and kinds.count("answer_delta") > 3
    assert max(i for i, k, _ in events if k == "answer_delta") < ids[-1]  # deltas came before the end
    doc = wait_for_job(client, job_id)
    assert doc["result"]["answerKind"] == "llm", (doc["result"].get("message"), query(
        settings, "SELECT error FROM audit_events WHERE job_id = $1", job_id))
    streamed = "".join(d["data"]["text"] for _, k, d in events if k == "answer_delta")
    assert streamed == doc["result"]["answer"] and doc["result"]["answer"].count("[1].") == 6
    # Nothing was lost in the reconnect: the stream holds every delta event the job wrote.
    stored = [r["id"] for r in query(
        settings, "SELECT id FROM job_events WHERE job_id = $1 AND kind = 'answer_delta' ORDER BY id", job_id)]
    assert stored == [i for i, k, _ in events if k == "answer_delta"]
