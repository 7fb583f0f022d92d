"""Why a routing job ended without a result (contract: `RoutingFailed.code`)."""

from __future__ import annotations

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


class RoutingFailed(Exception):
    """The job must end `failed`; `code` names the limit or failure, `usage` what was spent."""

    def __init__(self, code: str, message: str, usage: Usage | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.usage = usage or Usage()
