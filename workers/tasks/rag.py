"""RAG queue: AskArticles (and the second half of SearchAndAskArticles) answered by the vector worker.

An answer whose PostgreSQL connection is cut (its reads come before the LLM call) runs again on
a new one (workers/_db_retry.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import ValidationError

from infra.messages.ask import AskRequest
from infra.settings import get_settings
from infra.validation import first_error
from retrieval.rag import answer_request
from workers import registry
from workers._db_retry import with_db_retries
from workers._runtime import Runtime
from workers.base import run_async, turnout_task
from workers.deps import rag_context

log = logging.getLogger("turnout.rag")


class RagPayloadError(ValueError):
    """The task payload is not a valid AskRequest (a plain ValueError survives Celery's JSON result)."""


@turnout_task(registry.RAG_ANSWER, ignore_result=False, track_started=True)  # see workers/lost_tasks.py
def answer(payload: dict[str, Any]) -> dict[str, Any]:
    """An AskRequest (infra/messages/ask.py) in, its AskOutcome out (both as JSON)."""
    try:
        request = AskRequest.model_validate(payload)
    except ValidationError as exc:
        field, first = first_error(exc, "payload")
        raise RagPayloadError(f"invalid rag payload: {field}: {first['msg']}") from None
    # deadlineS is relative: monotonic clocks are not comparable between processes.
    deadline = time.monotonic() + request.deadline_s if request.deadline_s is not None else None
    limit = get_settings().task_soft_time_limit_s
    if request.deadline_s is not None:
        limit = min(limit, request.deadline_s + 5.0)  # the extractive fallback needs a moment

    async def body(rt: Runtime) -> dict[str, Any]:
        ctx = await rag_context(rt)
        outcome = await with_db_retries(lambda: answer_request(ctx, request, deadline=deadline), log=log,
                                        pool=ctx.pool)
        return outcome.wire()

    return run_async(body, timeout_s=limit)
