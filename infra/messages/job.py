"""The `run_job` message's body (`submitted`): the question as the job's row holds it, so the
runner routes while it claims the job (workers/tasks/jobs.py). Sent by the API (HTTP and MCP
alike, api/submission.py); a message without it (the sweeper's, a retry's) makes the runner
read the row first."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from infra.conversation import PreviousTurn
from infra.db.jobs import JobRow
from infra.results import Language, WireModel


class ToolCall(WireModel):
    """The call an MCP host's model chose (`jobs.tool_call`): the gateway checks and runs it, no LLM."""

    tool: str
    arguments: dict[str, Any]


class JobMessage(WireModel):
    """What `run_job` routes. Unknown fields are ignored: a newer sender's message still runs on an
    older runner during a deploy (before this model, HTTP sent no `toolCall` and MCP no `language`:
    both parse)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    question: str
    answer_language: Language | None = None
    page_size: int | None = None
    language: Language | None = None  # the articles' language by default (the client's)
    tool_call: ToolCall | None = None
    previous: PreviousTurn | None = None  # the turn a follow-up continues

    @classmethod
    def for_job(cls, job: JobRow, previous: PreviousTurn | None) -> JobMessage:
        # The row's columns of the same names (validated: a language the row holds is one of ours).
        return cls.model_validate(job, from_attributes=True).model_copy(update={"previous": previous})
