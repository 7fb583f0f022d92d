"""MCP tasks (protocol 2025-11-25) over Turnout's jobs: a task is a job, its id the job id.

Tasks are defined by the handshake-era protocol 2025-11-25 and left the core spec in 2026-07-28 (to
go on as an extension the SDK has no identifier or types for). The SDK (`mcp` 2.3) ships the
2025-11-25 task types but dispatches no `tasks/*` method and validates a `tools/call` result only
as a `CallToolResult`, so this module supplies what the server needs on the SDK's own hooks:
- `TaskServer`: the low-level `Server`, advertising the `tasks` capability on handshake-era
  connections (the 2026 discover result has no such field);
- `job_task`: the job → `Task` mapping (status, message, times);
- the `tasks/list` page size (its cursor is `GET /v1/jobs`'s, api/job_query.py).
The handlers themselves are `TurnoutMCP`'s (api/mcp/server.py), as for tools and resources.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import mcp_types as types
from mcp.server import Server
from mcp.server.lowlevel import NotificationOptions
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from api.job_query import decode_cursor, encode_cursor
from infra.db.job_events import JobEvent, last_event
from infra.db.job_list import JobFilter, list_jobs
from infra.db.jobs import JobRow
from infra.results import JobResultSummary
from infra.status import JobStatus, ResultStatus

RELATED_TASK_META = "io.modelcontextprotocol/related-task"
POLL_INTERVAL_MS = 1000  # a job's steps take seconds; polling faster only loads the database
LIST_PAGE = 50
TASKS_CAPABILITY = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability())),
)
# Every tool may run as a task or as a plain call (the bounded wait); tools/list drops the field on 2026.
TASK_EXECUTION = types.ToolExecution(task_support="optional")


def serves_tasks(protocol_version: str) -> bool:
    """Handshake-era connections only: 2026-07-28 removed tasks from the core protocol."""
    return protocol_version not in MODERN_PROTOCOL_VERSIONS


class TaskServer(Server[Any]):
    """The low-level server, with the `tasks` capability on handshake-era connections (the SDK
    derives capabilities from its spec handlers only, and `tasks/*` are not among them)."""

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        if protocol_version is not None and not serves_tasks(protocol_version):
            return capabilities
        return capabilities.model_copy(update={"tasks": TASKS_CAPABILITY})


def task_status(job: JobRow, summary: JobResultSummary | None = None) -> types.TaskStatus:
    """queued/running → working; a final job → how its tool result reads: `failed` when the call
    failed (the job failed, or it succeeded with a failed result document, both `isError`)."""
    if not job.status.is_final:
        return "working"
    if job.status is JobStatus.CANCELLED:
        return "cancelled"
    if job.status is JobStatus.FAILED:
        return "failed"
    # A listed job comes with its result's summary (infra/db/job_list.py), not the document.
    result = summary if summary is not None else job.result
    if result is not None and result.status is ResultStatus.FAILED:
        return "failed"
    return "completed"


def _message(job: JobRow, progress: JobEvent | None) -> str:
    if not job.status.is_final:
        return f"{job.status.value} (last step: {progress.kind})" if progress is not None else job.status.value
    if job.status is JobStatus.FAILED:
        error = job.error or {}
        return str(error.get("message") or error.get("code") or "the job failed")
    return job.status.value


def job_task(job: JobRow, progress: JobEvent | None, summary: JobResultSummary | None = None) -> types.Task:
    """The task a job is. `ttl` is null: a job is kept until retention removes it, which counts from
    when it ends (TURNOUT_JOB_RETENTION_DAYS), not from its creation, so no fixed ttl can be given."""
    updated = job.updated_at if progress is None else max(job.updated_at, progress.created_at)
    status = task_status(job, summary)
    return types.Task(
        task_id=job.id, status=status, status_message=_message(job, progress),
        created_at=job.created_at.isoformat(), last_updated_at=updated.isoformat(), ttl=None,
        poll_interval=POLL_INTERVAL_MS if status == "working" else None,
    )


async def list_page(conn: asyncpg.Connection, key_id: str, cursor: str | None, *, source: str
                    ) -> types.ListTasksResult | None:
    """A `tasks/list` page: the key's MCP jobs, newest first, as `GET /v1/jobs?source=mcp` lists
    them (the same cursor); None for a cursor that is not one."""
    after = None
    if cursor is not None and (after := decode_cursor(cursor)) is None:
        return None
    page = await list_jobs(conn, JobFilter(api_key_id=key_id, source=source), limit=LIST_PAGE + 1, after=after)
    more, page = len(page) > LIST_PAGE, page[:LIST_PAGE]
    listed = [job_task(each.job, None if each.job.status.is_final else await last_event(conn, each.job.id), each.summary)
              for each in page]
    last = page[-1].job if page else None
    cursor = encode_cursor(last.created_at, last.id) if more and last is not None else None
    return types.ListTasksResult(tasks=listed, next_cursor=cursor)


def wire(result: types.Result) -> dict[str, Any]:
    """A task result's wire body. The SDK dumps a handler's model without its null fields, but a
    task's `ttl` is required, null meaning unlimited: it is put back."""
    body = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, types.Task):  # GetTaskResult, CancelTaskResult
        body["ttl"] = result.ttl
    elif isinstance(result, types.CreateTaskResult):
        body["task"]["ttl"] = result.task.ttl
    elif isinstance(result, types.ListTasksResult):
        for task_body, task in zip(body["tasks"], result.tasks, strict=True):
            task_body["ttl"] = task.ttl
    return body
