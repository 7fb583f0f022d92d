"""Helpers of the MCP tests: a client over streamable HTTP, one tool call or resource read per
session, and what a tool result carries."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.api.support import ApiServer

CLIENT_INFO = types.Implementation(name="test-host", version="9.1")
ROOT = Path(__file__).resolve().parents[2]  # the checkout: `turnout mcp` runs from it


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


def call_tool(api: ApiServer, token: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def go() -> types.CallToolResult:
        async with mcp_http(api, token) as client:
            result = await client.call_tool(name, arguments)
            assert isinstance(result, types.CallToolResult)
            return result

    return asyncio.run(go())


def read_json(api: ApiServer, token: str, uri: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with mcp_http(api, token) as client:
            result = await client.read_resource(uri)
            content = result.contents[0]
            assert isinstance(content, types.TextResourceContents) and content.mime_type == "application/json"
            body: dict[str, Any] = json.loads(content.text)
            return body

    return asyncio.run(go())


def read_error(api: ApiServer, token: str, uri: str) -> MCPError:
    """The JSON-RPC error a resource read gets (caught inside the client's task group)."""

    async def go() -> MCPError:
        async with mcp_http(api, token) as client:
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                return exc
        raise AssertionError(f"reading {uri} succeeded")

    return asyncio.run(go())


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def job_id_of(result: types.CallToolResult) -> str:
    assert result.meta is not None
    job_id: str = result.meta["turnout/jobId"]
    return job_id
