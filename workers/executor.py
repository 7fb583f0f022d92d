"""The job runner's `ToolExecutor` (the router's port, router/executor.py): tool calls on the queues.

`QueueExecutor` sends the search and RAG tasks (`workers.registry`) and awaits the results
without blocking the event loop (send and wait run in a helper thread; the wait is woken by the
result backend's pub/sub message, not polled). With a `LostTaskWatch`, a task lost with its
worker is sent again (workers/lost_tasks.py). A task that could not reach PostgreSQL raises
`DatabaseUnavailable` here (a `ConnectionError`: transient), any other failure
`ToolExecutionError`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeAlias

from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeoutError
from celery.result import AsyncResult

from infra.counters import TOOL_RESENDS, bump
from infra.db.pool import DatabaseUnavailable
from infra.messages.ask import AskOutcome, AskRequest
from infra.results import ArticlesPage, NormalizedSearch
from router.executor import AskCall, ToolExecutionError, remaining_s
from workers.lost_tasks import CHECK_AFTER_S, CHECK_EVERY_S, MAX_RESENDS, LostTaskWatch
from workers.registry import RAG_ANSWER, SEARCH, TaskName

log = logging.getLogger("turnout.jobs")

ToolRequest: TypeAlias = NormalizedSearch | AskRequest  # the bodies of the search and RAG tasks

# How long a wait trusts pub/sub alone before reading the stored result again.
_WAKE_CHECK_S = 1.0


class QueueExecutor:
    def __init__(self, app: Celery | None = None, *, watch: LostTaskWatch | None = None) -> None:
        if app is None:
            from workers.app import process_app

            app = process_app()
        self.app = app
        self.watch = watch  # None: a task lost with its worker is waited for until the deadline

    async def search(self, q: NormalizedSearch, *, deadline: float | None = None) -> ArticlesPage:
        reply = await self._call(SEARCH, q, deadline)
        return ArticlesPage.model_validate(reply)

    async def ask(self, call: AskCall, *, deadline: float | None = None) -> AskOutcome:
        request = AskRequest(
            question=call.question, retrieval_text=call.retrieval_text, language=call.language, answer_language=call.answer_language,
            scope=list(call.scope) if call.scope is not None else None, scope_truncated=call.scope_truncated,
            deadline_s=max(0.01, remaining_s(deadline)), job_id=call.job_id, prefer_period=call.prefer_period,
        )
        reply = await self._call(RAG_ANSWER, request, deadline)
        return AskOutcome.model_validate(reply)

    async def _call(self, task: TaskName, request: ToolRequest, deadline: float | None) -> Any:
        remaining = remaining_s(deadline)
        if remaining <= 0:
            raise TimeoutError(f"no time left before the job's deadline to run {task.name}")
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()

        def hand_over(outcome: Any, failed: bool) -> None:
            if not reply.done():
                (reply.set_exception if failed else reply.set_result)(outcome)

        def on_reply(outcome: Any, failed: bool = False) -> None:
            loop.call_soon_threadsafe(hand_over, outcome, failed)

        worker = asyncio.ensure_future(asyncio.to_thread(self._send_and_wait, task, request, remaining, on_reply))
        try:
            return await reply
        finally:
            if reply.done():  # the thread goes on to remove the stored result, off the job's path
                worker.add_done_callback(_log_cleanup_failure)
            else:  # cancelled: the thread ends at the reply or the deadline, nobody waits for it
                worker.cancel()

    def _send_and_wait(
        self, task: TaskName, request: ToolRequest, remaining: float, on_reply: Callable[..., None]
    ) -> None:
        """Send and wait in one thread: Celery's result backend (and its pub/sub consumer) belongs
        to the thread that sent. `get()` subscribes to the result's channel, reads the stored state
        once (a reply that came first is not missed) and wakes on the backend's publish, so the
        reply costs no polling delay (measured: bench/api_bench.py). The reply (or the error) goes
        to `on_reply` at once; the stored result is removed after that, off the job's path. A
        cancelled job leaves this thread waiting until the reply or the deadline; the event loop is
        not held."""
        give_up = time.monotonic() + remaining
        sent: list[tuple[AsyncResult[Any], float]] = []  # every copy sent, with its time.time()

        def send() -> None:
            left = max(0.01, give_up - time.monotonic())
            # A copy sent again carries the time left now.
            body = request.with_deadline(left) if isinstance(request, AskRequest) else request
            # A message nobody picked up before the deadline must not run later for nothing.
            sent.append((self.app.send_task(task.name, args=[body.wire()], queue=task.queue.value, expires=left),
                         time.time()))

        try:
            send()
        except Exception as exc:
            on_reply(exc, failed=True)
            return
        try:
            on_reply(self._reply(task.name, sent, give_up, send))
        except Exception as exc:
            on_reply(exc, failed=True)
        finally:
            for result, _ in sent:
                result.forget()

    def _reply(
        self, task: str, sent: list[tuple[AsyncResult[Any], float]], give_up: float, send: Callable[[], None]
    ) -> Any:
        check_at = time.monotonic() + CHECK_AFTER_S
        while True:
            current, sent_at = sent[-1]
            now = time.monotonic()
            wait_s = min(_WAKE_CHECK_S, give_up - now)
            if wait_s <= 0:
                raise TimeoutError(f"{task} did not finish before the job's deadline")
            try:
                # Inside a worker task Celery forbids a blocking get() unless told the wait is
                # intended. propagate=False: the task's own exception comes back as the value, so
                # it can be told apart from a broker/backend failure (raised here: the job runner
                # retries those).
                value = current.get(timeout=wait_s, propagate=False, disable_sync_subtasks=False)
                result = current
                break
            except CeleryTimeoutError:
                # A publish lost while the pub/sub connection was re-established (Redis restart)
                # never comes; the next get() reads the stored state first.
                pass
            # An earlier copy (sent again on a false alarm) may still answer: the first reply wins.
            earlier = next((r for r, _ in sent[:-1] if r.ready()), None)
            if earlier is not None:
                value, result = earlier.get(propagate=False, disable_sync_subtasks=False), earlier
                break
            if self.watch is not None and len(sent) <= MAX_RESENDS and time.monotonic() >= check_at:
                check_at = time.monotonic() + CHECK_EVERY_S
                why = self.watch.lost(current, sent_at)
                if why is not None:
                    log.warning("%s %s was lost (%s); sending it again", task, current.id, why)
                    bump(TOOL_RESENDS, task=task)
                    send()
                    check_at = time.monotonic() + CHECK_AFTER_S
        if not result.successful():
            if isinstance(value, DatabaseUnavailable):
                raise value  # transient: the job runner re-queues the job, the tool is not at fault
            cause = value if isinstance(value, BaseException) else None
            raise ToolExecutionError(f"{task} failed: {type(value).__name__}: {value}") from cause
        return value


def _log_cleanup_failure(worker: asyncio.Future[None]) -> None:
    if not worker.cancelled() and worker.exception() is not None:
        log.warning("could not remove a tool's stored result: %s", worker.exception())


