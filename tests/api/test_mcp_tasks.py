"""MCP tasks over Turnout's jobs (protocol 2025-11-25), through the SDK's own client: a task-augmented
tools/call answers a task whose id is the job id; tasks/get, tasks/result, tasks/cancel and
tasks/list read and cancel the job. Over streamable HTTP (the real API) and over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.mcp_support import CLIENT_INFO, ROOT, mcp_http
from tests.api.support import ApiServer, issue_key, query, settings_env
from tests.support.llm_server import Delay, ScriptedLLM, ToolCall

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")

SEARCH = {"text": "ruby", "language": "en", "pageSize": 2}


def _task_call(name: str, arguments: dict[str, Any]) -> types.CallToolRequest:
    return types.CallToolRequest(params=types.CallToolRequestParams(
        name=name, arguments=arguments, task=types.TaskMetadata(ttl=60_000)))


async def _create(client: Client, name: str, arguments: dict[str, Any]) -> types.Task:
    created = await client.session.send_request(_task_call(name, arguments), types.CreateTaskResult)
    return created.task


async def _get(client: Client, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def _result(client: Client, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CallToolResult)


async def _cancel(client: Client, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CancelTaskResult)


async def _list(client: Client, cursor: str | None = None) -> types.ListTasksResult:
    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
    return await client.session.send_request(types.ListTasksRequest(params=params), types.ListTasksResult)


async def _poll(client: Client, task_id: str, timeout_s: float = 60) -> list[types.GetTaskResult]:
    seen = [await _get(client, task_id)]
    deadline = time.monotonic() + timeout_s
    while seen[-1].status == "working":
        assert time.monotonic() < deadline, seen[-1]
        await asyncio.sleep(0.2)
        seen.append(await _get(client, task_id))
    return seen


def test_a_task_is_the_job_polled_from_working_to_completed(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.script(Delay(3.0, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))

    async def go() -> tuple[types.ServerCapabilities, list[types.Tool], types.Task, list[types.GetTaskResult],
                            types.CallToolResult, types.ListTasksResult]:
        async with mcp_http(api, key.token, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            tools = (await client.list_tools()).tools
            task = await _create(client, "AskTurnout", {"question": "ruby news, as a task"})
            polled = await _poll(client, task.task_id)
            result = await _result(client, task.task_id)
            return client.server_capabilities, tools, task, polled, result, await _list(client)

    capabilities, tools, task, polled, result, listed = asyncio.run(go())
    assert capabilities.tasks is not None and capabilities.tasks.cancel is not None
    assert capabilities.tasks.list is not None and capabilities.tasks.requests is not None
    assert capabilities.tasks.requests.tools is not None and capabilities.tasks.requests.tools.call is not None
    assert {t.name: t.execution.task_support if t.execution else None for t in tools} == {
        t.name: "optional" for t in tools}
    # The task id is the job id: the job row is the key's MCP job.
    [job] = query(settings, "SELECT source, api_key_id, status FROM jobs WHERE id = $1", task.task_id)
    assert job == {"source": "mcp", "api_key_id": key.key.id, "status": "succeeded"}
    assert task.status == "working" and task.ttl is None and task.poll_interval
    assert polled[0].status == "working" and polled[0].status_message is not None
    assert polled[0].status_message.split(" ")[0] in ("queued", "running")
    assert any("last step" in (p.status_message or "") for p in polled if p.status == "working")
    assert polled[-1].status == "completed" and polled[-1].task_id == task.task_id
    assert result.is_error is False and result.structured_content is not None
    assert result.structured_content["resultType"] == "SearchResult"
    assert result.structured_content["routedBy"] == "llm"
    assert result.meta is not None and result.meta["turnout/jobId"] == task.task_id
    assert result.meta["io.modelcontextprotocol/related-task"] == {"taskId": task.task_id}
    assert listed.tasks[0].task_id == task.task_id and listed.tasks[0].status == "completed"


def test_a_rejected_call_as_a_task_fails_with_the_gateways_words(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM
) -> None:
    llm.fail_every_call("a rejected call runs nothing")

    async def go() -> tuple[list[types.GetTaskResult], types.CallToolResult, MCPError]:
        async with mcp_http(api, key.token, mode="legacy") as client:
            task = await _create(client, "SearchArticles", {"text": "ruby", "language": "fr"})
            polled = await _poll(client, task.task_id)
            with pytest.raises(MCPError) as unknown:  # no job is made for an unknown tool: no task either
                await _create(client, "DeleteArticles", {})
            return polled, await _result(client, task.task_id), unknown.value

    polled, result, unknown = asyncio.run(go())
    assert polled[-1].status == "failed"
    assert result.is_error is True and result.content[0].type == "text"
    assert result.content[0].text.startswith("ERROR: SearchArticles:")
    assert polled[-1].status_message == result.content[0].text
    assert unknown.code == types.INVALID_PARAMS and unknown.message.startswith("ERROR: unknown tool 'DeleteArticles'")


def test_a_running_task_is_cancelled_at_its_next_safe_point(api: ApiServer, key: IssuedKey, llm: ScriptedLLM) -> None:
    """tasks/cancel takes DELETE /v1/jobs/{id}'s path: the request is recorded (the task is still
    working), the runner aborts the LLM call in flight and the task ends cancelled."""
    llm.script(Delay(25.0, ToolCall("SearchArticles", {"text": "ruby", "language": "en"})))

    async def go() -> tuple[types.CancelTaskResult, list[types.GetTaskResult], float]:
        async with mcp_http(api, key.token, mode="legacy") as client:
            task = await _create(client, "AskTurnout", {"question": "ruby news, to be cancelled while running"})
            deadline = time.monotonic() + 30
            while not ((await _get(client, task.task_id)).status_message or "").startswith("running"):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            started = time.monotonic()
            answer = await _cancel(client, task.task_id)
            polled = await _poll(client, task.task_id, timeout_s=15)
            return answer, polled, time.monotonic() - started

    answer, polled, took = asyncio.run(go())
    assert answer.status == "working"  # recorded; the runner ends it at its next safe point
    assert polled[-1].status == "cancelled" and took < 12


def test_a_task_cancelled_while_queued_cancels_its_job(idle_api: ApiServer, key: IssuedKey, settings: Settings) -> None:
    other = issue_key(settings, "other-tasks")

    async def foreign(task_id: str) -> list[MCPError]:
        errors = []
        async with mcp_http(idle_api, other.token, mode="legacy") as client:
            for attempt in (_get, _cancel, _result):
                try:
                    await attempt(client, task_id)
                except MCPError as exc:
                    errors.append(exc)
            assert all(t.task_id != task_id for t in (await _list(client)).tasks)
        return errors

    async def go() -> tuple[types.Task, types.GetTaskResult, list[MCPError], types.CancelTaskResult,
                            types.GetTaskResult, MCPError, types.CallToolResult]:
        async with mcp_http(idle_api, key.token, mode="legacy") as client:
            task = await _create(client, "SearchArticles", {"text": "ruby"})
            queued = await _get(client, task.task_id)
            errors = await foreign(task.task_id)
            cancelled = await _cancel(client, task.task_id)
            after = await _get(client, task.task_id)
            with pytest.raises(MCPError) as again:
                await _cancel(client, task.task_id)
            return task, queued, errors, cancelled, after, again.value, await _result(client, task.task_id)

    task, queued, errors, cancelled, after, again, result = asyncio.run(go())
    assert queued.status == "working" and queued.status_message == "queued (last step: queued)"
    # Another key's task does not exist for it (and was not cancelled by it).
    assert [e.message for e in errors] == [f"no task {task.task_id} for this key"] * 3
    assert {e.code for e in errors} == {types.INVALID_PARAMS}
    assert cancelled.status == "cancelled" and cancelled.task_id == task.task_id
    assert after.status == "cancelled"
    assert again.code == types.INVALID_PARAMS and "already cancelled" in again.message  # terminal: the spec's error
    assert result.is_error is True and result.content[0].type == "text"
    with idle_api.client(key.token) as http:  # the same job over the HTTP API
        assert http.get(f"/v1/jobs/{task.task_id}").json()["status"] == "cancelled"


def test_tasks_list_pages_through_the_keys_mcp_jobs_only_as_the_http_list_does(idle_api: ApiServer, settings: Settings) -> None:
    from api.mcp import tasks as mcp_tasks

    lister = issue_key(settings, "lister")
    with idle_api.client(lister.token) as http:  # an HTTP job of the same key is no task
        http_job = http.post("/v1/questions", json={"question": "an http job"}).json()["id"]

    async def go() -> tuple[list[str], list[types.ListTasksResult]]:
        async with mcp_http(idle_api, lister.token, mode="legacy") as client:
            made = [(await _create(client, "SearchArticles", {"text": f"ruby {i}"})).task_id
                    for i in range(mcp_tasks.LIST_PAGE + 2)]
            first = await _list(client)
            assert first.next_cursor is not None
            pages = [first, await _list(client, first.next_cursor)]
            with pytest.raises(MCPError):
                await _get(client, http_job)
            return made, pages

    made, pages = asyncio.run(go())
    assert [len(p.tasks) for p in pages] == [mcp_tasks.LIST_PAGE, 2] and pages[1].next_cursor is None
    assert [t.task_id for p in pages for t in p.tasks] == list(reversed(made))  # newest first, each once
    with idle_api.client(lister.token) as http:  # the same listing as GET /v1/jobs?source=mcp, the same cursors
        listed = http.get("/v1/jobs", params={"source": "mcp", "limit": mcp_tasks.LIST_PAGE}).json()
        rest = http.get("/v1/jobs", params={"source": "mcp", "cursor": pages[0].next_cursor}).json()
    assert [item["id"] for item in listed["items"]] == [t.task_id for t in pages[0].tasks]
    assert listed["nextCursor"] == pages[0].next_cursor
    assert [item["id"] for item in rest["items"]] == [t.task_id for t in pages[1].tasks]
    query(settings, "UPDATE jobs SET status = 'cancelled' WHERE id = ANY($1)", [*made, http_job])


def test_the_same_call_is_a_task_on_2025_11_25_and_the_bounded_wait_on_2026(
    api: ApiServer, key: IssuedKey, llm: ScriptedLLM
) -> None:
    llm.fail_every_call()

    async def go() -> tuple[types.Task, str, types.ServerCapabilities, types.CallToolResult, MCPError]:
        async with mcp_http(api, key.token, mode="legacy") as legacy:
            task = await _create(legacy, "SearchArticles", SEARCH)
        async with mcp_http(api, key.token) as client:
            result = await client.session.send_request(_task_call("SearchArticles", SEARCH), types.CallToolResult)
            with pytest.raises(MCPError) as missing:
                await _get(client, task.task_id)
            return task, client.protocol_version, client.server_capabilities, result, missing.value

    task, version, capabilities, result, missing = asyncio.run(go())
    assert task.task_id.startswith("job_")
    # 2026-07-28 has no tasks in its core protocol: `task` is ignored, the call waits as without it.
    assert version.startswith("2026") and capabilities.tasks is None
    assert result.is_error is False and result.structured_content is not None
    assert result.meta is not None and result.meta["turnout/jobId"] != task.task_id
    assert missing.code == types.METHOD_NOT_FOUND


def test_stdio_task_polled_to_completion(key: IssuedKey, llm: ScriptedLLM, settings: Settings) -> None:
    llm.fail_every_call()
    env = {**os.environ, **settings_env(settings), "TURNOUT_API_KEY": key.token}
    params = StdioServerParameters(command=sys.executable, args=["-m", "turnout", "mcp"], env=env, cwd=ROOT)

    async def go() -> tuple[types.Task, list[types.GetTaskResult], types.CallToolResult]:
        async with Client(params, client_info=CLIENT_INFO, read_timeout_seconds=90, mode="legacy") as client:
            assert client.server_capabilities.tasks is not None
            task = await _create(client, "SearchArticles", SEARCH)
            polled = await _poll(client, task.task_id)
            return task, polled, await _result(client, task.task_id)

    task, polled, result = asyncio.run(go())
    assert polled[-1].status == "completed"
    assert result.structured_content is not None and result.structured_content["resultType"] == "SearchResult"
    [job] = query(settings, "SELECT source, client, api_key_id FROM jobs WHERE id = $1", task.task_id)
    assert job == {"source": "mcp", "client": "test-host/9.1", "api_key_id": key.key.id}
    assert llm.chat_requests == []
