"""Search queue: SearchArticles executed by a worker (the router's QueueExecutor sends it).

A search whose PostgreSQL connection is lost (a restart, a terminated backend) runs again on a
new connection, a few times with jittered back-off; if the database stays out of reach the task
fails with `DatabaseUnavailable`, which the job runner treats as the transient failure it is
(the job is re-queued, see workers/tasks/router.py), not as a broken tool.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from tenacity import AsyncRetrying, before_sleep_log, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from infra.db.pool import CONNECTION_ERRORS, DatabaseUnavailable
from infra.results import NormalizedSearch
from infra.settings import get_settings
from infra.status import Queue
from infra.validation import first_error
from retrieval.search import SearchArgumentError, search_articles
from workers._runtime import Runtime
from workers.base import run_async, turnout_task

SEARCH_TIME_LIMIT_S = 30.0  # a search is a few indexed queries; anything slower is a fault
SEARCH_ATTEMPTS = 3  # on a lost connection; the back-off between them stays under 2 s

log = logging.getLogger("turnout.search")


@turnout_task(Queue.SEARCH, "search", time_limit_s=SEARCH_TIME_LIMIT_S, ignore_result=False)
def search(query: dict[str, Any]) -> dict[str, Any]:
    """NormalizedSearch wire dict in, ArticlesPage wire dict out."""
    try:
        normalized = NormalizedSearch.model_validate(query)
    except ValidationError as exc:
        field, first = first_error(exc, "query")
        # A plain ValueError subclass survives Celery's JSON result; pydantic's error does not.
        raise SearchArgumentError(field, f"invalid normalized search: {field}: {first['msg']}") from None
    page_size_max = get_settings().limits.page_size_max
    if normalized.page_size > page_size_max:
        # Callers normalize first; a forged or stale payload must not bypass the page limit.
        raise SearchArgumentError(
            "pageSize", f"pageSize {normalized.page_size} exceeds the maximum {page_size_max}"
        )

    async def body(rt: Runtime) -> dict[str, Any]:
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(CONNECTION_ERRORS),
            stop=stop_after_attempt(SEARCH_ATTEMPTS),
            wait=wait_exponential_jitter(initial=0.2, max=1.0, jitter=0.2),
            before_sleep=before_sleep_log(log, logging.WARNING),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    page = await search_articles(await rt.pool(), normalized)
        except CONNECTION_ERRORS as exc:
            # The first error, not the failed rollback after it ("the underlying connection is closed").
            first = exc.__context__ if isinstance(exc.__context__, CONNECTION_ERRORS) else exc
            # A plain ConnectionError subclass: Celery sends it back by name, like SearchArgumentError.
            raise DatabaseUnavailable(
                f"PostgreSQL unreachable over {SEARCH_ATTEMPTS} attempts: {type(first).__name__}: {first}"
            ) from None
        return page.wire()

    return run_async(body, timeout_s=SEARCH_TIME_LIMIT_S)
