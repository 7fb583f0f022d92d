"""Turnout's tools and resources over MCP, end to end through the SDK's own client: streamable HTTP
at /mcp on the real API (uvicorn); the stdio transport, older clients and hostile calls are in
test_mcp_transports.py, tasks in test_mcp_tasks.py. Real workers, Postgres, Redis, Qdrant; only the
LLM is scripted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import mcp_types as types
import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from router.gateway import CallValidator, Rejection
from router.language import detect_language
from router.tools import default_registry
from tests.api.mcp_support import (
    call_tool,
    job_id_of,
    mcp_http,
    read_error,
    read_json,
    text_of,
)
from tests.api.support import ApiServer, index_ruby_articles, issue_key, query, stack_settings
from tests.support.llm_server import ScriptedLLM, ToolCall, answer_from_passage
from tests.support.services import WorkerGroup

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


@pytest.fixture(scope="module")
def indexed(celery_worker: WorkerGroup, settings: Settings, shared_corpus: Any) -> list[str]:
    return index_ruby_articles(settings)


# ---- tools ----
def test_tools_are_the_routers_registry_with_read_only_annotations(api: ApiServer, key: IssuedKey) -> None:
    async def go() -> list[types.Tool]:
        async with mcp_http(api, key.token) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(go())}
    registry = default_registry()
    assert list(tools) == [*registry.names, "AskTurnout"]
    for spec in registry.specs:
        assert tools[spec.name].input_schema == spec.parameters  # the very schemas the LLM sees
        assert tools[spec.name].input_schema["additionalProperties"] is False
        assert tools[spec.name].description == spec.description
    assert tools["AskTurnout"].input_schema["additionalProperties"] is False
    assert set(tools["AskTurnout"].input_schema["properties"]) == {"question", "answerLanguage", "previousJobId", "conversationId"}
    for tool in tools.values():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is False
        assert tool.output_schema is not None and "resultType" in tool.output_schema["properties"]


def test_search_runs_the_hosts_call_as_a_job_without_turnouts_llm(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.fail_every_call("the host's model chose the tool: Turnout's LLM is not asked")
    result = call_tool(api, key.token, "SearchArticles", {"text": "ruby", "language": "en", "pageSize": 3})
    assert result.is_error is False, text_of(result)
    doc = result.structured_content
    assert doc is not None and doc["resultType"] == "SearchResult" and doc["routedBy"] == "caller"
    assert doc["tool"] == "SearchArticles" and doc["articles"]["items"] and doc["search"]["pageSize"] == 3
    assert doc["articles"]["items"][0]["title"] in text_of(result)
    assert llm.chat_requests == []
    job_id = job_id_of(result)
    [job] = query(settings, "SELECT source, client, tool_call::jsonb, api_key_id FROM jobs WHERE id = $1", job_id)
    assert job == {"source": "mcp", "client": "test-host/9.1", "api_key_id": key.key.id,
                   "tool_call": {"tool": "SearchArticles", "arguments": {"text": "ruby", "language": "en",
                                                                       "pageSize": 3}}}
    audit = query(settings, "SELECT kind, tool, source, client, normalized_arguments FROM audit_events "
                  "WHERE job_id = $1 ORDER BY id", job_id)
    assert [a["kind"] for a in audit] == ["tool_execution"]
    assert audit[0]["source"] == "mcp" and audit[0]["client"] == "test-host/9.1"
    assert audit[0]["normalized_arguments"]["pageSize"] == 3  # normalized by the gateway


def test_ask_and_combined_calls_only_the_answer_llm(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, indexed: list[str]
) -> None:
    # An answer the answer check accepts: passage [1]'s first sentence, cited.
    llm.on_chat(lambda body: answer_from_passage(body, prompt_tokens=800, completion_tokens=30))
    ask = call_tool(api, key.token, "AskArticles", {"question": "How do I upgrade Ruby safely?", "language": "en"})
    assert ask.is_error is False, text_of(ask)
    assert ask.structured_content is not None
    assert ask.structured_content["resultType"] == "AnswerResult"
    written = answer_from_passage(llm.chat_requests[0]).content
    assert ask.structured_content["answer"] == text_of(ask) == written
    assert ask.structured_content["sources"] and len(llm.chat_requests) == 1  # the RAG answer, no routing
    assert "tools" not in llm.chat_requests[0]

    llm.reset()
    llm.on_chat(lambda body: answer_from_passage(body, prompt_tokens=900, completion_tokens=40))
    combined = call_tool(api, key.token, "SearchAndAskArticles",
                     {"text": "ruby", "language": "en", "question": "What was released?"})
    assert combined.is_error is False, text_of(combined)
    doc = combined.structured_content
    assert doc is not None and doc["resultType"] == "CombinedResult" and doc["routedBy"] == "caller"
    assert {s["articleId"] for s in doc["sources"]} <= {i["id"] for i in doc["articles"]["items"]}
    assert len(llm.chat_requests) == 1


def test_ask_turnout_runs_turnouts_own_router(api: ApiServer, key: IssuedKey, llm: ScriptedLLM) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    result = call_tool(api, key.token, "AskTurnout", {"question": "ruby news via the MCP router", "answerLanguage": "en"})
    assert result.is_error is False, text_of(result)
    assert result.structured_content is not None
    assert result.structured_content["routedBy"] == "llm" and result.structured_content["tool"] == "SearchArticles"
    assert len(llm.chat_requests) == 1 and llm.chat_requests[0]["tools"]  # Turnout's LLM chose


def test_ask_turnout_follow_ups_change_filters_without_the_llm(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    first = call_tool(api, key.token, "AskTurnout", {"question": "ruby news via the MCP router"})
    llm.fail_every_call("a filter-only follow-up must not call the LLM")
    calls = len(llm.requests)
    follow = call_tool(api, key.token, "AskTurnout", {"question": "nur auf Deutsch", "previousJobId": job_id_of(first)})
    assert follow.is_error is False, text_of(follow)
    assert follow.structured_content is not None
    content = follow.structured_content
    assert (content["routedBy"], content["search"]["language"], content["usage"]["llmCalls"]) == ("followup", "de", 0)
    assert len(llm.requests) == calls
    stranger = issue_key(settings, "stranger")
    refused = call_tool(api, stranger.token, "AskTurnout", {"question": "page 2", "previousJobId": job_id_of(first)})
    assert refused.is_error is True and "no job" in text_of(refused)


def test_invalid_call_returns_the_gateways_error_for_the_hosts_model(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.fail_every_call("a rejected call runs nothing")
    arguments = {"text": "ruby", "language": "fr"}
    result = call_tool(api, key.token, "SearchArticles", arguments)
    assert result.is_error is True and result.structured_content is None
    # Exactly what the gateway tells Turnout's own LLM for the same call.
    validator = CallValidator(default_registry(), settings.limits, today=datetime.now(UTC).date(),
                              question="ruby", user_language=detect_language("ruby"))
    expected = validator.validate("SearchArticles", arguments)
    assert isinstance(expected, Rejection)
    assert text_of(result) == expected.message and text_of(result).startswith("ERROR: SearchArticles:")
    audit = query(settings, "SELECT kind, error, source FROM audit_events WHERE job_id = $1 ORDER BY id",
                  job_id_of(result))
    assert audit[0]["kind"] == "tool_rejected" and audit[0]["error"] == expected.reason
    assert audit[0]["source"] == "mcp"

    extra = call_tool(api, key.token, "AskArticles", {"question": "q", "colour": "red"})
    assert extra.is_error is True and text_of(extra).startswith("ERROR: AskArticles: unknown argument 'colour'")
    unknown = call_tool(api, key.token, "DeleteArticles", {})
    assert unknown.is_error is True and text_of(unknown).startswith("ERROR: unknown tool 'DeleteArticles'")
    assert llm.chat_requests == []


# ---- resources ----
def test_job_and_page_resources_need_no_llm(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM
) -> None:
    first = call_tool(api, key.token, "SearchArticles", {"text": "ruby", "language": "en", "pageSize": 2})
    assert first.structured_content is not None
    assert first.structured_content["articles"]["totalPages"] >= 2
    job_id = job_id_of(first)
    llm.reset()
    llm.fail_every_call("pages must not call the LLM")
    job = read_json(api, key.token, f"turnout://jobs/{job_id}")
    assert job["id"] == job_id and job["status"] == "succeeded" and job["result"] == first.structured_content
    page = read_json(api, key.token, f"turnout://jobs/{job_id}/pages/2")
    assert page["page"] == 2 and page["jobId"] == job_id
    first_ids = {i["id"] for i in first.structured_content["articles"]["items"]}
    assert page["result"]["articles"]["page"] == 2 and page["result"]["articles"]["items"]
    assert not first_ids & {i["id"] for i in page["result"]["articles"]["items"]}
    assert llm.chat_requests == []

    error = read_error(api, key.token, f"turnout://jobs/{job_id}/pages/9999")
    assert error.message.startswith("page 9999 does not exist") and error.data["code"] == "page_out_of_range"


def test_refused_without_a_key_and_for_another_keys_job(api: ApiServer, key: IssuedKey, llm: ScriptedLLM,
                                                       settings: Settings) -> None:
    response = httpx.post(f"{api.base_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    bad = httpx.post(f"{api.base_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                     headers={"Accept": "application/json, text/event-stream", "Authorization": "Bearer tk_x.nope"})
    assert bad.status_code == 401

    async def no_key() -> None:
        async with mcp_http(api, None) as client:
            await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as its transport error
        asyncio.run(no_key())

    llm.fail_every_call()
    mine = job_id_of(call_tool(api, key.token, "SearchArticles", {"text": "ruby"}))
    other = issue_key(settings, "other")
    for uri in (f"turnout://jobs/{mine}", f"turnout://jobs/{mine}/pages/1"):
        assert read_error(api, other.token, uri).message == f"no job {mine} for this key"
    assert read_json(api, key.token, f"turnout://jobs/{mine}")["id"] == mine


def test_foreign_origin_and_host_are_refused(api: ApiServer, key: IssuedKey) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {key.token}",
               "Content-Type": "application/json"}
    origin = httpx.post(f"{api.base_url}/mcp", json=body, headers={**headers, "Origin": "http://evil.example"})
    assert origin.status_code == 403
    host = httpx.post(f"{api.base_url}/mcp", json=body, headers={**headers, "Host": "evil.example"})
    assert host.status_code in (403, 421)


def test_hidden_and_unpublished_articles_are_never_returned(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.fail_every_call()
    ruby = [r["id"] for r in query(settings, "SELECT id FROM localizations WHERE language = 'en' AND "
                                   "title ILIKE '%ruby%' AND published AND NOT hidden ORDER BY created_at DESC LIMIT 4")]
    assert len(ruby) == 4
    hidden, unpublished = ruby[:2], ruby[2:]
    query(settings, "UPDATE localizations SET hidden = true WHERE id = ANY($1)", hidden)
    query(settings, "UPDATE localizations SET published = false WHERE id = ANY($1)", unpublished)
    try:
        result = call_tool(api, key.token, "SearchArticles", {"text": "ruby", "language": "en", "pageSize": 50})
        assert result.structured_content is not None and result.structured_content["articles"]["items"]
        returned = {i["id"] for i in result.structured_content["articles"]["items"]}
        assert not returned & set(ruby)
        assert not set(ruby) & set(text_of(result).split())
    finally:
        query(settings, "UPDATE localizations SET hidden = false, published = true WHERE id = ANY($1)", ruby)


# ---- the bounded wait ----
@pytest.fixture(scope="module")
def idle_mcp(settings: Settings) -> Iterator[ApiServer]:
    """An API whose jobs no worker runs, and a 1 s MCP wait: calls come back before their job ends."""
    idle = stack_settings(settings, redis_prefix=settings.redis_prefix + "mcpidle:", job_lease_s=86_400.0,
                          mcp_wait_s=1.0)
    server = ApiServer(idle).start()
    yield server
    server.stop()
    query(settings, "UPDATE jobs SET status = 'cancelled' WHERE status = 'queued' AND lease_expires_at > now() "
          "+ interval '1 hour'")


def test_a_call_still_running_after_the_wait_returns_its_job(idle_mcp: ApiServer, key: IssuedKey) -> None:
    result = call_tool(idle_mcp, key.token, "SearchArticles", {"text": "ruby"})
    job_id = job_id_of(result)
    assert result.is_error is True
    assert text_of(result).startswith(f"PENDING: job {job_id} is still queued (last step: queued) after 1s")
    assert result.meta is not None and result.meta["turnout/status"] == "queued"
    assert result.meta["turnout/lastEvent"]["kind"] == "queued"
    assert result.meta["turnout/links"]["self"] == f"/v1/jobs/{job_id}"
    job = read_json(idle_mcp, key.token, f"turnout://jobs/{job_id}")
    assert job["status"] == "queued"
    with idle_mcp.client(key.token) as http:  # the same job over the HTTP API, cancelled there
        assert http.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"
        assert http.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    assert read_json(idle_mcp, key.token, f"turnout://jobs/{job_id}")["status"] == "cancelled"


def test_mcp_submissions_share_the_keys_limit(idle_mcp: ApiServer, settings: Settings) -> None:
    limited = stack_settings(settings, redis_prefix=settings.redis_prefix + "mcpidle:", job_lease_s=86_400.0,
                             mcp_wait_s=0.0, limits__submissions_per_minute=2)
    server = ApiServer(limited).start()
    try:
        key = issue_key(settings, "limited")
        with server.client(key.token) as http:
            assert http.post("/v1/questions", json={"question": "one over http"}).status_code == 202
        assert call_tool(server, key.token, "SearchArticles", {"text": "two"}).meta is not None
        third = call_tool(server, key.token, "SearchArticles", {"text": "three"})
        assert third.is_error is True and text_of(third).startswith("ERROR: at most 2 submissions per minute")
    finally:
        server.stop()


# ---- ops ----
def test_ops_figures_split_jobs_by_source(api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings) -> None:
    llm.fail_every_call()
    call_tool(api, key.token, "SearchArticles", {"text": "ruby"})
    admin = issue_key(settings, "ops", admin=True)
    with api.client(admin.token) as http:
        response = http.get("/v1/ops/queues")
    assert response.status_code == 200, response.text
    by_source = response.json()["jobs"]["bySource"]
    mcp_total = query(settings, "SELECT count(*) AS n FROM jobs WHERE source = 'mcp'")[0]["n"]
    assert sum(by_source["mcp"].values()) == mcp_total >= 1
    assert response.json()["jobs"]["total"] == sum(n for counts in by_source.values() for n in counts.values())
    with api.client(admin.token) as http:
        metrics = http.get("/metrics").text
    succeeded = by_source["mcp"].get("succeeded", 0)
    assert f'turnout_jobs_by_source{{source="mcp",status="succeeded"}} {float(succeeded)}' in metrics
