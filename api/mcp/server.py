"""Turnout's tools over MCP (the official `mcp` SDK's server): every tool call is a durable job.

MCP is one more caller of the router's gateway. `SearchArticles`, `AskArticles` and
`SearchAndAskArticles` are listed from the router's registry (the same JSON Schemas the LLM
sees); the host's model chose the call, so the job carries it (`jobs.tool_call`) and the runner
hands it to the gateway instead of asking Turnout's LLM. `AskTurnout` is a plain question job
(Turnout's own router picks the tool). A call waits for its job up to a bound (as `Prefer:
wait`); a job still running then is answered with its id and links, to be read later as the
resource `turnout://jobs/{id}`. Pages are `turnout://jobs/{id}/pages/{n}` (no LLM).

On protocol 2025-11-25 a call may ask for a task instead (`task` in its params): the job is
submitted the same way and answered at once as a task whose id is the job id; `tasks/get`,
`tasks/result`, `tasks/cancel` (as `DELETE /v1/jobs/{id}`: a running job at its next safe point) and `tasks/list` read
the key's MCP jobs (the mapping: api/mcp/tasks.py). 2026-07-28 clients have no tasks (the SDK has
no tasks extension) and get the bounded wait.

The low-level `mcp.server.Server` is used, not `MCPServer`: MCPServer derives a tool's input
schema from a Python signature and validates the arguments itself, where these tools must
publish the registry's schemas and leave validation (and its `ERROR: …` text) to the gateway.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types import methods as mcp_methods

from api.errors import ApiError
from api.long_poll import watch_until_final
from api.mcp import tasks
from api.mcp.submission import (
    ASK_TURNOUT,
    ASK_TURNOUT_DESCRIPTION,
    ASK_TURNOUT_SCHEMA,
    SOURCE,
    Submission,
    ask_turnout_submission,
)
from api.routes.jobs import job_page
from api.state import AppState
from api.submission import submit
from api.visibility import visible_job
from infra.db import job_cancel
from infra.db import jobs as jobs_db
from infra.db.job_events import JobEvent, last_event
from infra.job_document import JobDocument
from infra.messages.job import ToolCall
from infra.results import QuestionResult
from infra.status import JobStatus, ResultStatus
from infra.text import squash_controls
from router.errors import TOOL_REJECTED
from router.tools import ToolRegistry, default_registry
from workers.dispatch import send_webhook
from workers.fair_shares import after_ended

SERVER_NAME = "turnout"
JOB_URI = "turnout://jobs/{id}"
PAGE_URI = "turnout://jobs/{id}/pages/{n}"
_JOB_URI = re.compile(r"^turnout://jobs/(?P<id>[A-Za-z0-9_-]{1,64})$")
_PAGE_URI = re.compile(r"^turnout://jobs/(?P<id>[A-Za-z0-9_-]{1,64})/pages/(?P<n>[0-9]{1,6})$")
# A resource that is not there (unknown id, another key's job, no such page): JSON-RPC "invalid params".
RESOURCE_NOT_FOUND = types.INVALID_PARAMS
JSON_MIME = "application/json"
_CLIENT_MAX = 200  # characters of "name/version" kept

# Read-only, closed world: a call reads Turnout's own collection and changes nothing.
ANNOTATIONS = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def result_schema() -> dict[str, Any]:
    """The output schema of every tool: the result document (`QuestionResult`, as on the wire)."""
    schema: dict[str, Any] = QuestionResult.model_json_schema(by_alias=True, mode="serialization")
    return schema


def tool_list(registry: ToolRegistry) -> list[types.Tool]:
    output = result_schema()
    tools = [
        types.Tool(
            name=spec.name, description=spec.description, input_schema=spec.parameters,
            output_schema=output, annotations=ANNOTATIONS, execution=tasks.TASK_EXECUTION,
        )
        for spec in registry.specs
    ]
    tools.append(types.Tool(
        name=ASK_TURNOUT, description=ASK_TURNOUT_DESCRIPTION, input_schema=ASK_TURNOUT_SCHEMA,
        output_schema=output, annotations=ANNOTATIONS, execution=tasks.TASK_EXECUTION,
    ))
    return tools


@dataclass(frozen=True)
class Caller:
    """Who calls: the API key's id and the MCP client's "name/version"."""

    key_id: str
    client: str | None


def client_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The client's `name/version`. A handshake-era client over stateless HTTP names itself only in
    its `initialize` request (a request of its own), so its calls fall back to the `User-Agent`."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    if info is not None:
        return f"{info.name}/{info.version}"[:_CLIENT_MAX]
    headers = getattr(ctx.request, "headers", None)
    agent = headers.get("user-agent") if headers is not None else None
    return str(agent)[:_CLIENT_MAX] if agent else None


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _first_block(result: types.CallToolResult) -> str:
    block = result.content[0]
    return block.text if isinstance(block, types.TextContent) else "ERROR: the call was refused"


def _error(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=_text(text), is_error=True, _meta=meta)


def summary(result: QuestionResult) -> str:
    """The short text beside the structured result."""
    if result.answer:
        return result.answer
    if result.articles is not None and result.articles.items:
        page = result.articles
        titles = "; ".join(item.title for item in page.items[:5])
        return f"{page.total_items} article(s), page {page.page} of {page.total_pages}: {titles}"
    return result.message or result.status.value


def _first_text(arguments: dict[str, Any]) -> str:
    """What the job's `question` column holds for a call the host chose (its text, for reading)."""
    for name in ("question", "text"):
        value = arguments.get(name)
        if isinstance(value, str):
            return squash_controls(value)
    return ""


@dataclass
class TurnoutMCP:
    """The MCP server's handlers over one API state (pool, Redis, job listener)."""

    state: AppState
    caller: Callable[[ServerRequestContext[Any, Any]], Caller]  # raises MCPError when unauthenticated
    wait_s: float
    registry: ToolRegistry = field(default_factory=default_registry)

    def build(self) -> Server[Any]:
        server = tasks.TaskServer(
            SERVER_NAME,
            version="0.1.0",
            instructions=(
                "Search, answer from or ask about Turnout's articles. Every call is a durable job: a call "
                f"still running after {self.wait_s:g}s returns its job id; read {JOB_URI} later for the result."
                " On protocol 2025-11-25 a call may run as a task (its id is the job id)."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
        )
        # Tasks (2025-11-25): the SDK dispatches no `tasks/*` method and sieves a `tools/call`
        # result into a CallToolResult, so a task-augmented call is answered by a middleware (it
        # owns its result) and the four task methods are added as request handlers.
        server.middleware.append(self._task_calls)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get_task)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self._task_result)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._cancel_task)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list_tasks)
        return server

    # ---- tools ----
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(self.registry))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Submit the call's job and wait for it up to the bound (as `Prefer: wait`)."""
        job = await self._submit(self.caller(ctx), self._submission(params), wait_s=self.wait_s)
        if isinstance(job, types.CallToolResult):
            return job
        return self._outcome(job, None if job.status.is_final else await self._progress(job))

    def _submission(self, params: types.CallToolRequestParams) -> Submission | types.CallToolResult:
        """What a call submits, or the `ERROR: …` result for a call no job is made for."""
        arguments = dict(params.arguments or {})
        if params.name == ASK_TURNOUT:
            return self._ask_turnout(arguments)
        if self.registry.get(params.name) is None:
            # As the gateway says it to its own LLM: the name is the host's model's mistake.
            return _error(f"ERROR: unknown tool {params.name!r}; available tools: "
                          f"{', '.join([*self.registry.names, ASK_TURNOUT])}")
        return Submission(question=_first_text(arguments), answer_language=None,
                          tool_call=ToolCall(tool=params.name, arguments=arguments))

    def _ask_turnout(self, arguments: dict[str, Any]) -> Submission | types.CallToolResult:
        checked = ask_turnout_submission(arguments, self.state.settings.limits)
        return _error(checked) if isinstance(checked, str) else checked

    async def _submit(
        self, caller: Caller, call: Submission | types.CallToolResult, *, wait_s: float | None
    ) -> jobs_db.JobRow | types.CallToolResult:
        """The call's job, submitted as POST /v1/questions submits one (api/submission.py); a refusal
        (the key's limit, a follow-up of a job this key does not have) is the call's `ERROR: …`."""
        if isinstance(call, types.CallToolResult):
            return call
        try:
            submitted = await submit(self.state, caller.key_id, call.new_job(caller.client), wait_s=wait_s)
        except ApiError as exc:
            # The key's limit, its spent budget or a store out of reach (429, 503) is no argument's
            # fault; a refused follow-up (the job it continues) is named with the tool, as its other
            # checks are. The code and details ride in the result's _meta, as over HTTP.
            of_call = exc.status not in (429, 503)
            text = f"ERROR: {ASK_TURNOUT}: {exc.message}" if of_call else f"ERROR: {exc.message}"
            return _error(text, {"turnout/error": {"code": exc.code, "details": exc.details}})
        return submitted.job

    async def _progress(self, job: jobs_db.JobRow) -> JobEvent | None:
        async with self.state.pool.acquire() as conn:
            return await last_event(conn, job.id)

    def _outcome(self, job: jobs_db.JobRow, progress: JobEvent | None) -> types.CallToolResult:
        meta = self._job_meta(job)
        if job.status is JobStatus.SUCCEEDED and (result := job.result) is not None:
            return types.CallToolResult(
                content=_text(summary(result)), structured_content=result.wire(), _meta=meta,
                # A refusal is the router's answer, not a failed call.
                is_error=False if result.status is not ResultStatus.FAILED else True,
            )
        if job.status is JobStatus.FAILED:
            error = job.error or {}
            message = str(error.get("message", "the job failed"))
            if error.get("code") == TOOL_REJECTED:  # the gateway's own words, `ERROR: …`
                return _error(message, meta)
            return _error(f"ERROR: job {job.id} failed ({error.get('code')}): {message}", meta)
        if job.status is JobStatus.CANCELLED:
            return _error(f"ERROR: job {job.id} was cancelled", meta)
        # Still queued or running: not an error of the call, but no result to validate yet.
        step = f" (last step: {progress.kind})" if progress is not None else ""
        if progress is not None:
            meta["turnout/lastEvent"] = {"kind": progress.kind, "data": progress.data,
                                         "at": progress.created_at.isoformat()}
        return _error(
            f"PENDING: job {job.id} is still {job.status.value}{step} after {self.wait_s:g}s; do not call the "
            f"tool again — read the resource turnout://jobs/{job.id} for its status and result.",
            meta,
        )

    # ---- tasks (2025-11-25; api/mcp/tasks.py) ----
    async def _task_calls(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A task-augmented `tools/call` (params carry `task`) on a handshake-era connection: the job
        is submitted exactly as for a plain call, and its task is answered at once. Any other
        request goes on down the SDK's chain."""
        raw = ctx.params
        if (ctx.method != "tools/call" or not isinstance(raw, Mapping) or raw.get("task") is None
                or not tasks.serves_tasks(ctx.protocol_version)):
            return await call_next(ctx)
        # The checks the SDK makes before its handler (this middleware answers in its place).
        mcp_methods.validate_client_request("tools/call", ctx.protocol_version, raw)
        params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        job = await self._submit(self.caller(ctx), self._submission(params), wait_s=None)
        if isinstance(job, types.CallToolResult):  # no job was made: a request error, not a task
            raise MCPError(types.INVALID_PARAMS, _first_block(job))
        created = types.CreateTaskResult(task=tasks.job_task(job, None), _meta=self._job_meta(job))
        body = tasks.wire(created)
        # The SDK's own client (and any that reads every tools/call answer as a CallToolResult)
        # requires `content`; a Result may carry extra keys, so the task is named in text too.
        body["content"] = [block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in _text(
            f"TASK: job {job.id} is {job.status.value}; poll tasks/get, read tasks/result when it is done.")]
        return body

    async def _get_task(self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
                        ) -> dict[str, Any]:
        job = await self._own_task(self.caller(ctx), ctx, params.task_id)
        task = tasks.job_task(job, None if job.status.is_final else await self._progress(job))
        return tasks.wire(types.GetTaskResult(**task.model_dump()))

    async def _task_result(self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
                           ) -> types.CallToolResult:
        """The CallToolResult the plain call would have returned. The spec blocks until the task
        ends; this waits up to the bound, then answers an error naming the task's status."""
        caller = self.caller(ctx)
        job = await self._own_task(caller, ctx, params.task_id)
        if not job.status.is_final:
            job = await watch_until_final(self.state.job_events, job.id, lambda: self._own_job(caller, job.id),
                                          wait_s=self.wait_s)
        if not job.status.is_final:
            raise MCPError(types.INVALID_PARAMS,
                           f"task {job.id} is still working ({job.status.value}) after {self.wait_s:g}s; "
                           "poll tasks/get and ask again", {"taskId": job.id, "status": "working"})
        result = self._outcome(job, None)
        result.meta = {**(result.meta or {}), tasks.RELATED_TASK_META: {"taskId": job.id}}
        return result

    async def _cancel_task(self, ctx: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
                           ) -> dict[str, Any]:
        """Cancel the job as `DELETE /v1/jobs/{id}` does: a queued job at once, a running one at its
        runner's next safe point (the task answers `working` until then, with the request recorded)."""
        caller = self.caller(ctx)
        job = await self._own_task(caller, ctx, params.task_id)
        async with self.state.pool.acquire() as conn:
            outcome, finished, running = await job_cancel.request_cancel(conn, job.id, api_key_id=caller.key_id)
        if outcome == "not_found":
            raise MCPError(RESOURCE_NOT_FOUND, f"no task {job.id} for this key")
        if running is not None:
            return tasks.wire(types.CancelTaskResult(**tasks.job_task(running, None).model_dump()))
        if finished is None:  # the spec's answer for a task in a terminal status
            status = JobStatus(outcome)
            raise MCPError(types.INVALID_PARAMS,
                           f"task {job.id} is already {tasks.task_status(await self._own_job(caller, job.id))}; "
                           "it cannot be cancelled", {"taskId": job.id, "jobStatus": status.value})
        if finished.delivery_id is not None:
            await asyncio.to_thread(send_webhook, self.state.producer, self.state.settings, finished.delivery_id)
        await after_ended(self.state.pool, self.state.producer, self.state.settings, [finished.job])
        return tasks.wire(types.CancelTaskResult(**tasks.job_task(finished.job, None).model_dump()))

    async def _list_tasks(self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
                          ) -> dict[str, Any]:
        """The key's MCP jobs, newest first, a page at a time."""
        caller = self.caller(ctx)
        self._require_tasks(ctx)
        async with self.state.pool.acquire() as conn:
            listed = await tasks.list_page(conn, caller.key_id, params.cursor, source=SOURCE)
        if listed is None:
            raise MCPError(types.INVALID_PARAMS, "invalid cursor")
        return tasks.wire(listed)

    def _require_tasks(self, ctx: ServerRequestContext[Any, Any]) -> None:
        if not tasks.serves_tasks(ctx.protocol_version):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", ctx.method)

    async def _own_task(self, caller: Caller, ctx: ServerRequestContext[Any, Any], task_id: str) -> jobs_db.JobRow:
        """The key's MCP job of that id; any other (another key's, an HTTP job) is no task."""
        self._require_tasks(ctx)
        async with self.state.pool.acquire() as conn:
            job = await jobs_db.get_job(conn, task_id, api_key_id=caller.key_id)
        if job is None or job.source != SOURCE:
            raise MCPError(RESOURCE_NOT_FOUND, f"no task {task_id} for this key")
        return await self._visible(job)

    # ---- resources ----
    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])  # jobs are per key and many: reached by template

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=JOB_URI, name="job", mime_type=JSON_MIME,
                                   description="A job: status, timestamps, usage, result or error"),
            types.ResourceTemplate(uri_template=PAGE_URI, name="job page", mime_type=JSON_MIME,
                                   description="Page n of a search or combined result (no LLM call)"),
        ])

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        caller = self.caller(ctx)
        uri = str(params.uri)
        if (match := _JOB_URI.match(uri)) is not None:
            job = await self._own_job(caller, match["id"])
            body = JobDocument.from_row(job, base_url=self.state.settings.public_base_url).wire()
        elif (match := _PAGE_URI.match(uri)) is not None:
            job = await self._own_job(caller, match["id"])
            state = self.state
            try:
                page = await job_page(state.pool, state.redis, state.settings, job, max(1, int(match["n"])))
            except ApiError as exc:
                raise MCPError(RESOURCE_NOT_FOUND, exc.message, {"code": exc.code, **(exc.details or {})}) from exc
            body = page.wire()
        else:
            raise MCPError(RESOURCE_NOT_FOUND, f"unknown resource {uri!r}; use {JOB_URI} or {PAGE_URI}")
        text = json.dumps(body, ensure_ascii=False, default=str)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=JSON_MIME, text=text)])

    # ---- helpers ----
    def _job_meta(self, job: jobs_db.JobRow) -> dict[str, Any]:
        document = JobDocument.from_row(job, base_url=self.state.settings.public_base_url)
        return {"turnout/jobId": job.id, "turnout/status": job.status.value,
                "turnout/links": document.links.model_dump(by_alias=True)}

    async def _own_job(self, caller: Caller, job_id: str) -> jobs_db.JobRow:
        async with self.state.pool.acquire() as conn:
            job = await jobs_db.get_job(conn, job_id, api_key_id=caller.key_id)
        if job is None:  # another key's job is indistinguishable from no job
            raise MCPError(RESOURCE_NOT_FOUND, f"no job {job_id} for this key")
        return await self._visible(job)

    async def _visible(self, job: jobs_db.JobRow) -> jobs_db.JobRow:
        """Articles hidden since the job ended never reach the caller (as over HTTP)."""
        return await visible_job(self.state.pool, self.state.redis, self.state.settings, job)
