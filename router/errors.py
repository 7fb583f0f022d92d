"""Why a routing job ended without a result (contract: `RoutingFailed.code`)."""

from __future__ import annotations

from typing import Any

from infra.results import Usage

# Every code a job can end with. Limits say which limit; the job runner stores {"code", "message"}.
LIMIT_MAX_ROUNDS = "limit_max_rounds"
LIMIT_TOOL_EXECUTIONS = "limit_tool_executions"
LIMIT_TOKENS = "limit_tokens"
LIMIT_DEADLINE = "limit_deadline"
NO_TOOL_CALL = "no_tool_call"
LLM_UNAVAILABLE = "llm_unavailable"
TOOL_FAILED = "tool_failed"
TOOL_REJECTED = "tool_rejected"  # a tool call chosen by the caller (MCP) that the gateway rejected
BUDGET_EXCEEDED = "budget_exceeded"  # the API key's daily or monthly budget has no room for the next LLM call


class RoutingFailed(Exception):
    """The job must end `failed`; `code` names the limit or failure, `usage` what was spent."""

    def __init__(self, code: str, message: str, usage: Usage | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.usage = usage or Usage()
        self.details = details  # the job error's `details` (a budget's period and reset time)
