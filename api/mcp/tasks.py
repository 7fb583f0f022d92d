"""MCP tasks (protocol 2025-11-25) over Turnout's jobs: a task is a job, its id the job id.

Tasks are defined by the handshake-era protocol 2025-11-25 and left the core spec in 2026-07-28 (to
go on as an extension the SDK has no identifier or types for). The SDK (`mcp` 2.3) ships the
2025-11-25 task types but dispatches no `tasks/*` method and validates a `tools/call` result only
as a `CallToolResult`, so this module supplies what the server needs on the SDK's own hooks:
- `TaskServer`: the low-level `Server`, advertising the `tasks` capability on handshake-era
  connections (the 2026 discover result has no such field);
- `job_task`: the job → `Task` mapping (status, message, times);
- the `tasks/list` cursor.
The handlers themselves are `TurnoutMCP`'s (api/mcp/server.py), as for tools and resources.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.lowlevel import NotificationOptions
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from infra.db.job_events import JobEvent
from infra.db.jobs import JobRow
from infra.results import QuestionResult
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


def task_status(job: JobRow) -> types.TaskStatus:
    """queued/running → working; a final job → how its tool result reads: `failed` when the call
    failed (the job failed, or it succeeded with a failed result document, both `isError`)."""
    if not job.status.is_final:
        return "working"
    if job.status is JobStatus.CANCELLED:
        return "cancelled"
    if job.status is JobStatus.FAILED:
        return "failed"
    if job.result is not None and QuestionResult.model_validate(job.result).status is ResultStatus.FAILED:
        return "failed"
    return "completed"


def _message(job: JobRow, progress: JobEvent | None) -> str:
    if not job.status.is_final:
        return f"{job.status.value} (last step: {progress.kind})" if progress is not None else job.status.value
    if job.status is JobStatus.FAILED:
        error = job.error or {}
        return str(error.get("message") or error.get("code") or "the job failed")
    return job.status.value


def job_task(job: JobRow, progress: JobEvent | None) -> types.Task:
    """The task a job is. `ttl` is null: jobs are kept (no retention limit), whatever was asked."""
    updated = job.updated_at if progress is None else max(job.updated_at, progress.created_at)
    status = task_status(job)
    return types.Task(
        task_id=job.id, status=status, status_message=_message(job, progress),
        created_at=job.created_at.isoformat(), last_updated_at=updated.isoformat(), ttl=None,
        poll_interval=POLL_INTERVAL_MS if status == "working" else None,
    )


def encode_cursor(job: JobRow) -> str:
    raw = json.dumps([job.created_at.isoformat(), job.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str] | None:
    """The (created_at, id) a cursor names; None when it is not one of ours."""
    try:
        created, job_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return datetime.fromisoformat(created), str(job_id)
    except (ValueError, TypeError, binascii.Error):
        return None


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
