"""Turnout over MCP beyond the tools' contract: stdio through `turnout mcp` as a subprocess, a
job's progress while it runs, handshake-era clients, hostile arguments and a job resent without
its message. Real workers, Postgres, Redis, Qdrant; only the LLM is scripted."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from router.gateway import CallValidator, Rejection
from router.tools import default_registry
from tests.api.mcp_support import (
    CLIENT_INFO,
    ROOT,
    call_tool,
    job_id_of,
    mcp_http,
    read_json,
    text_of,
)
from tests.api.support import ApiServer, query, settings_env, stack_settings
from tests.support.llm_server import ScriptedLLM, ToolCall
from tests.support.services import WorkerGroup

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


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
            page = await client.read_resource(f"turnout://jobs/{job_id_of(ok)}/pages/2")
            content = page.contents[0]
            assert isinstance(content, types.TextResourceContents)
            return tools, ok, bad, json.loads(content.text)

    tools, ok, bad, page = asyncio.run(go())
    registry = default_registry()
    assert {t.name: t.input_schema for t in tools if t.name != "AskTurnout"} == {
        s.name: s.parameters for s in registry.specs}
    assert ok.is_error is False and ok.structured_content is not None
    assert ok.structured_content["resultType"] == "SearchResult"
    assert bad.is_error is True and text_of(bad).startswith("ERROR: SearchArticles:")
    assert page["page"] == 2 and page["result"]["articles"]["page"] == 2
    [job] = query(settings, "SELECT source, client, api_key_id FROM jobs WHERE id = $1", job_id_of(ok))
    assert job == {"source": "mcp", "client": "test-host/9.1", "api_key_id": key.key.id}
    assert llm.chat_requests == []


def test_stdio_refuses_to_start_without_a_valid_key(settings: Settings) -> None:

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
        result = call_tool(quick, key.token, "AskTurnout", {"question": "ruby news, slowly routed"})
        job_id = job_id_of(result)
        assert result.is_error is True and result.meta is not None
        status, step = result.meta["turnout/status"], result.meta["turnout/lastEvent"]["kind"]
        # Claimed within the second unless the machine is very busy; the LLM holds it 4 s after that.
        assert (status, step) in {("running", "running"), ("running", "routing"), ("queued", "queued")}, result.meta
        assert f"still {status} (last step: {step})" in text_of(result)
        deadline = time.monotonic() + 60
        while (job := read_json(quick, key.token, f"turnout://jobs/{job_id}"))["status"] != "succeeded":
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
    [job] = query(settings, "SELECT source, client FROM jobs WHERE id = $1", job_id_of(result))
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
        result = call_tool(api, key.token, name, arguments)
        verdict = validator.validate(name, arguments) if name != "AskTurnout" else None
        if isinstance(verdict, Rejection):  # the gateway saw exactly what was sent (NULs included)
            assert text_of(result) == verdict.message, (name, arguments)
        if result.is_error:
            assert text_of(result).startswith("ERROR: "), (name, arguments, text_of(result))
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
