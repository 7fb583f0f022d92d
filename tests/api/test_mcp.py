"""Turnout over MCP, end to end through the SDK's own client: streamable HTTP at /mcp on the real
API (uvicorn), and stdio through `turnout mcp` as a subprocess. Real workers, Postgres, Redis,
Qdrant; only the LLM is scripted."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from router.gateway import CallValidator, Rejection
from router.language import detect_language
from router.tools import default_registry
from tests.api.support import ApiServer, index_ruby_articles, issue_key, query, settings_env, stack_settings
from tests.support.llm_server import ScriptedLLM, ToolCall, answer_from_passage
from tests.support.services import WorkerGroup

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")

CLIENT_INFO = types.Implementation(name="test-host", version="9.1")
ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def mcp_http(api: ApiServer, token: str | None, *, mode: str = "auto", agent: str | None = None
                   ) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if agent:
        headers["User-Agent"] = agent
    async with httpx2.AsyncClient(headers=headers, timeout=90) as http:
        transport = streamable_http_client(f"{api.base_url}/mcp", http_client=http)
        async with Client(transport, client_info=CLIENT_INFO, read_timeout_seconds=90, mode=mode) as client:
            yield client


def _call(api: ApiServer, token: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def go() -> types.CallToolResult:
        async with mcp_http(api, token) as client:
            result = await client.call_tool(name, arguments)
            assert isinstance(result, types.CallToolResult)
            return result

    return asyncio.run(go())


def _read(api: ApiServer, token: str, uri: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with mcp_http(api, token) as client:
            result = await client.read_resource(uri)
            content = result.contents[0]
            assert isinstance(content, types.TextResourceContents) and content.mime_type == "application/json"
            body: dict[str, Any] = json.loads(content.text)
            return body

    return asyncio.run(go())


def _read_error(api: ApiServer, token: str, uri: str) -> MCPError:
    """The JSON-RPC error a resource read gets (caught inside the client's task group)."""

    async def go() -> MCPError:
        async with mcp_http(api, token) as client:
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                return exc
        raise AssertionError(f"reading {uri} succeeded")

    return asyncio.run(go())


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _job_id(result: types.CallToolResult) -> str:
    assert result.meta is not None
    job_id: str = result.meta["turnout/jobId"]
    return job_id


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
    result = _call(api, key.token, "SearchArticles", {"text": "ruby", "language": "en", "pageSize": 3})
    assert result.is_error is False, _text(result)
    doc = result.structured_content
    assert doc is not None and doc["resultType"] == "SearchResult" and doc["routedBy"] == "caller"
    assert doc["tool"] == "SearchArticles" and doc["articles"]["items"] and doc["search"]["pageSize"] == 3
    assert doc["articles"]["items"][0]["title"] in _text(result)
    assert llm.chat_requests == []
    job_id = _job_id(result)
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
    ask = _call(api, key.token, "AskArticles", {"question": "How do I upgrade Ruby safely?", "language": "en"})
    assert ask.is_error is False, _text(ask)
    assert ask.structured_content is not None
    assert ask.structured_content["resultType"] == "AnswerResult"
    written = answer_from_passage(llm.chat_requests[0]).content
    assert ask.structured_content["answer"] == _text(ask) == written
    assert ask.structured_content["sources"] and len(llm.chat_requests) == 1  # the RAG answer, no routing
    assert "tools" not in llm.chat_requests[0]

    llm.reset()
    llm.on_chat(lambda body: answer_from_passage(body, prompt_tokens=900, completion_tokens=40))
    combined = _call(api, key.token, "SearchAndAskArticles",
                     {"text": "ruby", "language": "en", "question": "What was released?"})
    assert combined.is_error is False, _text(combined)
    doc = combined.structured_content
    assert doc is not None and doc["resultType"] == "CombinedResult" and doc["routedBy"] == "caller"
    assert {s["articleId"] for s in doc["sources"]} <= {i["id"] for i in doc["articles"]["items"]}
    assert len(llm.chat_requests) == 1


def test_ask_turnout_runs_turnouts_own_router(api: ApiServer, key: IssuedKey, llm: ScriptedLLM) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    result = _call(api, key.token, "AskTurnout", {"question": "ruby news via the MCP router", "answerLanguage": "en"})
    assert result.is_error is False, _text(result)
    assert result.structured_content is not None
    assert result.structured_content["routedBy"] == "llm" and result.structured_content["tool"] == "SearchArticles"
    assert len(llm.chat_requests) == 1 and llm.chat_requests[0]["tools"]  # Turnout's LLM chose


def test_ask_turnout_follow_ups_change_filters_without_the_llm(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    first = _call(api, key.token, "AskTurnout", {"question": "ruby news via the MCP router"})
    llm.fail_every_call("a filter-only follow-up must not call the LLM")
    calls = len(llm.requests)
    follow = _call(api, key.token, "AskTurnout", {"question": "nur auf Deutsch", "previousJobId": _job_id(first)})
    assert follow.is_error is False, _text(follow)
    assert follow.structured_content is not None
    content = follow.structured_content
    assert (content["routedBy"], content["search"]["language"], content["usage"]["llmCalls"]) == ("followup", "de", 0)
    assert len(llm.requests) == calls
    stranger = issue_key(settings, "stranger")
    refused = _call(api, stranger.token, "AskTurnout", {"question": "page 2", "previousJobId": _job_id(first)})
    assert refused.is_error is True and "no job" in _text(refused)


def test_invalid_call_returns_the_gateways_error_for_the_hosts_model(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.fail_every_call("a rejected call runs nothing")
    arguments = {"text": "ruby", "language": "fr"}
    result = _call(api, key.token, "SearchArticles", arguments)
    assert result.is_error is True and result.structured_content is None
    # Exactly what the gateway tells Turnout's own LLM for the same call.
    validator = CallValidator(default_registry(), settings.limits, today=datetime.now(UTC).date(),
                              question="ruby", user_language=detect_language("ruby"))
    expected = validator.validate("SearchArticles", arguments)
    assert isinstance(expected, Rejection)
    assert _text(result) == expected.message and _text(result).startswith("ERROR: SearchArticles:")
    audit = query(settings, "SELECT kind, error, source FROM audit_events WHERE job_id = $1 ORDER BY id",
                  _job_id(result))
    assert audit[0]["kind"] == "tool_rejected" and audit[0]["error"] == expected.reason
    assert audit[0]["source"] == "mcp"

    extra = _call(api, key.token, "AskArticles", {"question": "q", "colour": "red"})
    assert extra.is_error is True and _text(extra).startswith("ERROR: AskArticles: unknown argument 'colour'")
    unknown = _call(api, key.token, "DeleteArticles", {})
    assert unknown.is_error is True and _text(unknown).startswith("ERROR: unknown tool 'DeleteArticles'")
    assert llm.chat_requests == []


# ---- resources ----
def test_job_and_page_resources_need_no_llm(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM
) -> None:
    first = _call(api, key.token, "SearchArticles", {"text": "ruby", "language": "en", "pageSize": 2})
    assert first.structured_content is not None
    assert first.structured_content["articles"]["totalPages"] >= 2
    job_id = _job_id(first)
    llm.reset()
    llm.fail_every_call("pages must not call the LLM")
    job = _read(api, key.token, f"turnout://jobs/{job_id}")
    assert job["id"] == job_id and job["status"] == "succeeded" and job["result"] == first.structured_content
    page = _read(api, key.token, f"turnout://jobs/{job_id}/pages/2")
    assert page["page"] == 2 and page["jobId"] == job_id
    first_ids = {i["id"] for i in first.structured_content["articles"]["items"]}
    assert page["result"]["articles"]["page"] == 2 and page["result"]["articles"]["items"]
    assert not first_ids & {i["id"] for i in page["result"]["articles"]["items"]}
    assert llm.chat_requests == []

    error = _read_error(api, key.token, f"turnout://jobs/{job_id}/pages/9999")
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
    mine = _job_id(_call(api, key.token, "SearchArticles", {"text": "ruby"}))
    other = issue_key(settings, "other")
    for uri in (f"turnout://jobs/{mine}", f"turnout://jobs/{mine}/pages/1"):
        assert _read_error(api, other.token, uri).message == f"no job {mine} for this key"
    assert _read(api, key.token, f"turnout://jobs/{mine}")["id"] == mine


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
        result = _call(api, key.token, "SearchArticles", {"text": "ruby", "language": "en", "pageSize": 50})
        assert result.structured_content is not None and result.structured_content["articles"]["items"]
        returned = {i["id"] for i in result.structured_content["articles"]["items"]}
        assert not returned & set(ruby)
        assert not set(ruby) & set(_text(result).split())
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
    result = _call(idle_mcp, key.token, "SearchArticles", {"text": "ruby"})
    job_id = _job_id(result)
    assert result.is_error is True
    assert _text(result).startswith(f"PENDING: job {job_id} is still queued (last step: queued) after 1s")
    assert result.meta is not None and result.meta["turnout/status"] == "queued"
    assert result.meta["turnout/lastEvent"]["kind"] == "queued"
    assert result.meta["turnout/links"]["self"] == f"/v1/jobs/{job_id}"
    job = _read(idle_mcp, key.token, f"turnout://jobs/{job_id}")
    assert job["status"] == "queued"
    with idle_mcp.client(key.token) as http:  # the same job over the HTTP API, cancelled there
        assert http.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"
        assert http.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    assert _read(idle_mcp, key.token, f"turnout://jobs/{job_id}")["status"] == "cancelled"


def test_mcp_submissions_share_the_keys_limit(idle_mcp: ApiServer, settings: Settings) -> None:
    limited = stack_settings(settings, redis_prefix=settings.redis_prefix + "mcpidle:", job_lease_s=86_400.0,
                             mcp_wait_s=0.0, limits__submissions_per_minute=2)
    server = ApiServer(limited).start()
    try:
        key = issue_key(settings, "limited")
        with server.client(key.token) as http:
            assert http.post("/v1/questions", json={"question": "one over http"}).status_code == 202
        assert _call(server, key.token, "SearchArticles", {"text": "two"}).meta is not None
        third = _call(server, key.token, "SearchArticles", {"text": "three"})
        assert third.is_error is True and _text(third).startswith("ERROR: at most 2 submissions per minute")
    finally:
        server.stop()


# ---- ops ----
def test_ops_figures_split_jobs_by_source(api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings) -> None:
    llm.fail_every_call()
    _call(api, key.token, "SearchArticles", {"text": "ruby"})
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


# ---- stdio ----
def test_stdio_server_for_a_local_host(key: IssuedKey, llm: ScriptedLLM, settings: Settings) -> None:
    llm.fail_every_call()
    env = {**os.environ, **settings_env(settings), "TURNOUT_API_KEY": key.token}
    params = StdioServerParameters(command=sys.executable, args=["-m", "turnout", "mcp"], env=env, cwd=ROOT)

    async def go() -> tuple[list[types.Tool], types.CallToolResult, types.CallToolResult, dict[str, Any]]:
        async with Client(params, client_info=CLIENT_INFO, read_timeout_seconds=90) as client:
            tools = (await client.list_tools()).tools
            ok = await client.call_tool("SearchArticles", {"text": "ruby", "language": "en", "pageSize": 2})
            bad = await client.call_tool("SearchArticles", {"text": "ruby", "sort": "random"})
            assert isinstance(ok, types.CallToolResult) and isinstance(bad, types.CallToolResult)
            page = await client.read_resource(f"turnout://jobs/{_job_id(ok)}/pages/2")
            content = page.contents[0]
            assert isinstance(content, types.TextResourceContents)
            return tools, ok, bad, json.loads(content.text)

    tools, ok, bad, page = asyncio.run(go())
    registry = default_registry()
    assert {t.name: t.input_schema for t in tools if t.name != "AskTurnout"} == {
        s.name: s.parameters for s in registry.specs}
    assert ok.is_error is False and ok.structured_content is not None
    assert ok.structured_content["resultType"] == "SearchResult"
    assert bad.is_error is True and _text(bad).startswith("ERROR: SearchArticles:")
    assert page["page"] == 2 and page["result"]["articles"]["page"] == 2
    [job] = query(settings, "SELECT source, client, api_key_id FROM jobs WHERE id = $1", _job_id(ok))
    assert job == {"source": "mcp", "client": "test-host/9.1", "api_key_id": key.key.id}
    assert llm.chat_requests == []


def test_stdio_refuses_to_start_without_a_valid_key(settings: Settings) -> None:
    import subprocess

    for token in ("", "tk_unknown.secret"):
        env = {**os.environ, **settings_env(settings), "TURNOUT_API_KEY": token}
        proc = subprocess.run([sys.executable, "-m", "turnout", "mcp"], env=env, cwd=ROOT, capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert proc.returncode != 0
        assert "TURNOUT_API_KEY" in proc.stderr, proc.stderr


def test_a_running_job_reports_its_last_step_then_its_result(
    key: IssuedKey, llm: ScriptedLLM, settings: Settings, celery_worker: WorkerGroup
) -> None:
    from tests.support.llm_server import Delay

    quick = ApiServer(stack_settings(settings, mcp_wait_s=1.0)).start()  # the session's workers run its jobs
    try:
        llm.script(Delay(4.0, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))
        result = _call(quick, key.token, "AskTurnout", {"question": "ruby news, slowly routed"})
        job_id = _job_id(result)
        assert result.is_error is True and result.meta is not None
        status, step = result.meta["turnout/status"], result.meta["turnout/lastEvent"]["kind"]
        # Claimed within the second unless the machine is very busy; the LLM holds it 4 s after that.
        assert (status, step) in {("running", "running"), ("running", "routing"), ("queued", "queued")}, result.meta
        assert f"still {status} (last step: {step})" in _text(result)
        deadline = time.monotonic() + 60
        while (job := _read(quick, key.token, f"turnout://jobs/{job_id}"))["status"] != "succeeded":
            assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
            time.sleep(0.3)
        assert job["result"]["resultType"] == "SearchResult" and job["result"]["routedBy"] == "llm"
    finally:
        quick.stop()


def test_handshake_era_clients_work_too(api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings) -> None:
    """Hosts on the 2025 protocol (initialize handshake) against the stateless endpoint."""
    llm.fail_every_call()

    async def go() -> tuple[str, list[types.Tool], types.CallToolResult]:
        async with mcp_http(api, key.token, mode="legacy", agent="legacy-host/1.0") as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("SearchArticles", {"text": "ruby", "language": "en"})
            assert isinstance(result, types.CallToolResult)
            return client.protocol_version, tools, result

    version, tools, result = asyncio.run(go())
    assert not version.startswith("2026")
    assert [t.name for t in tools] == [*default_registry().names, "AskTurnout"]
    assert result.is_error is False and result.structured_content is not None
    [job] = query(settings, "SELECT source, client FROM jobs WHERE id = $1", _job_id(result))
    # Its name came with `initialize` only (another request): the call is known by its User-Agent.
    assert job["source"] == "mcp" and job["client"] == "legacy-host/1.0"


HOSTILE: list[tuple[str, dict[str, Any]]] = [
    ("SearchArticles", {"text": "nul\x00byte", "includeHidden": True}),
    ("SearchArticles", {"text": "ruby", "pageSize": 10_000, "page": -5}),
    ("SearchArticles", {"text": "'; DROP TABLE localizations; --", "language": "en\" OR \"1\"=\"1"}),
    ("AskArticles", {"question": "\x00", "answerLanguage": "klingon"}),
    ("SearchAndAskArticles", {"question": "Vergleich", "scope": ["*"], "pageSize": 500}),
    ("AskTurnout", {"question": "nul\x00 in a question"}),
]


def test_hostile_arguments_get_an_answer_never_a_crash(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.on_chat(lambda body: ToolCall("SearchArticles", {"text": "ruby", "language": "en"}))
    validator = CallValidator(default_registry(), settings.limits, today=datetime.now(UTC).date(),
                              question="x", user_language="en")
    for name, arguments in HOSTILE:
        result = _call(api, key.token, name, arguments)
        verdict = validator.validate(name, arguments) if name != "AskTurnout" else None
        if isinstance(verdict, Rejection):  # the gateway saw exactly what was sent (NULs included)
            assert _text(result) == verdict.message, (name, arguments)
        if result.is_error:
            assert _text(result).startswith("ERROR: "), (name, arguments, _text(result))
        else:
            assert result.structured_content is not None
            items = (result.structured_content.get("articles") or {}).get("items", [])
            assert len(items) <= settings.limits.page_size_max


def test_a_job_resent_without_its_message_runs_the_stored_call(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    """The sweeper's path: no submitted copy in the message, the runner reads the call from the job's
    row, exactly as sent (a NUL included: jsonb could not hold it)."""
    from infra.db import jobs as jobs_db
    from infra.db.pool import create_pool
    from workers.app import create_celery
    from workers.dispatch import send_run_job

    llm.fail_every_call("the stored call runs without Turnout's LLM")
    calls: dict[str, dict[str, Any]] = {
        "rejected": {"tool": "AskArticles", "arguments": {"question": "\x00\x00", "language": "en"}},
        "ran": {"tool": "SearchArticles", "arguments": {"text": "ruby\x00", "language": "en", "pageSize": 2}},
    }

    async def create() -> dict[str, str]:
        pool = await create_pool(settings.database_url, min_size=1, max_size=1)
        try:
            ids = {}
            async with pool.acquire() as conn:
                for name, call in calls.items():
                    job, _ = await jobs_db.create_job(
                        conn, api_key_id=key.key.id, question="stored call", answer_language=None, page_size=None,
                        webhook_url=None, idempotency_key=None, request_hash=name, lease_s=60, source="mcp",
                        tool_call=call,
                    )
                    assert job.tool_call == call
                    ids[name] = job.id
            return ids
        finally:
            await pool.close()

    ids = asyncio.run(create())
    producer = create_celery(settings)
    try:
        for job_id in ids.values():
            assert send_run_job(producer, settings, job_id)  # no `submitted`
    finally:
        producer.close()
    with api.client(key.token) as http:
        from tests.api.support import wait_for_job

        rejected, ran = wait_for_job(http, ids["rejected"]), wait_for_job(http, ids["ran"])
    validator = CallValidator(default_registry(), settings.limits, today=datetime.now(UTC).date(),
                              question="stored call", user_language="en")
    verdict = validator.validate("AskArticles", calls["rejected"]["arguments"])
    assert isinstance(verdict, Rejection)
    assert rejected["status"] == "failed" and rejected["error"] == {"code": "tool_rejected", "message": verdict.message,
                                                            "details": None}
    assert ran["status"] == "succeeded" and ran["result"]["routedBy"] == "caller"
    assert ran["result"]["search"]["text"] == "ruby" and ran["result"]["search"]["pageSize"] == 2
    assert llm.chat_requests == []
