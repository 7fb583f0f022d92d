"""The in-run baseline for bench/api_bench.py: a bare Celery round trip with the job's hops.

`bench.relay` runs on the `router` queue and waits for the real `turnout.search.search` task on
the `search` queue, as a job's runner waits for its search: client -> router -> search ->
router -> client, with the same search work and nothing else (no API, no job state, no LLM,
no audit). Loaded only into the benchmark's worker (`--include`).
"""

from __future__ import annotations

from typing import Any

from infra.status import Queue
from workers.app import celery_app


@celery_app.task(name="bench.relay", queue=Queue.ROUTER.value, ignore_result=False, acks_late=True)
def relay(search: dict[str, Any]) -> dict[str, Any]:
    reply = celery_app.send_task("turnout.search.search", args=[search], queue=Queue.SEARCH.value)
    # A task waiting on a subtask is what the job runner does too; Celery wants it said explicitly.
    page: dict[str, Any] = reply.get(timeout=30, disable_sync_subtasks=False)
    return page
