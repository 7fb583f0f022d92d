"""Search queue: SearchArticles executed by a worker (the router's QueueExecutor sends it).

A search whose PostgreSQL connection is cut runs again on a new one (workers/_db_retry.py).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from infra.results import NormalizedSearch
from infra.settings import get_settings
from infra.validation import first_error
from retrieval.search import SearchArgumentError, search_articles
from workers import registry
from workers._db_retry import with_db_retries
from workers._runtime import Runtime
from workers.base import run_async, turnout_task

SEARCH_TIME_LIMIT_S = 30.0  # a search is a few indexed queries; anything slower is a fault

log = logging.getLogger("turnout.search")


@turnout_task(registry.SEARCH, time_limit_s=SEARCH_TIME_LIMIT_S, ignore_result=False,
              track_started=True)  # the router watches who runs it (workers/lost_tasks.py)
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
        pool = await rt.pool()
        page = await with_db_retries(lambda: search_articles(pool, normalized), log=log, pool=pool)
        return page.wire()

    return run_async(body, timeout_s=SEARCH_TIME_LIMIT_S)
