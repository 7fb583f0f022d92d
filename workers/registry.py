"""Every Celery task Turnout has: its name and queue, defined once.

The task decorator (`workers.base.turnout_task`), the senders (`workers.dispatch`,
`workers.executor`, `workers.reembed`), the beat schedule (`workers.app`), the signal handlers
(`workers.signals`) and the dev stack's readiness ping all take the name from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.status import Queue


@dataclass(frozen=True)
class TaskName:
    queue: Queue
    short: str

    @property
    def name(self) -> str:
        """`turnout.<queue>.<short>`: the queue is in the name, so routing by name needs no table."""
        return f"turnout.{self.queue.value}.{self.short}"


PING = TaskName(Queue.MAINTENANCE, "ping")
SWEEP = TaskName(Queue.MAINTENANCE, "sweep")
RUN_JOB = TaskName(Queue.ROUTER, "run_job")
SEARCH = TaskName(Queue.SEARCH, "search")
RAG_ANSWER = TaskName(Queue.RAG, "answer")
DELIVER_WEBHOOK = TaskName(Queue.WEBHOOKS, "deliver")
REEMBED_BATCH = TaskName(Queue.EMBEDDINGS, "reembed_batch")
FINALIZE_RUN = TaskName(Queue.EMBEDDINGS, "finalize_run")
PRUNE_JOBS = TaskName(Queue.MAINTENANCE, "prune_jobs")
RETRY_BATCH = TaskName(Queue.MAINTENANCE, "retry_batch")

ALL_TASKS: tuple[TaskName, ...] = (
    PING, SWEEP, RUN_JOB, SEARCH, RAG_ANSWER, DELIVER_WEBHOOK, REEMBED_BATCH, FINALIZE_RUN, PRUNE_JOBS, RETRY_BATCH,
)
