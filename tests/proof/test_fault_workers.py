"""SIGKILL drills for the queues tests/workers/test_jobs_durability.py does not cover (that file
kills the router worker mid-job and restarts Redis; tests/workers/test_reembed_worker.py kills
the vector worker mid re-embedding):

- the front worker (search, webhooks, maintenance + beat) dies while a search task is running
  (held on a table lock this test takes, so it is caught mid-flight deterministically) and a
  webhook POST is in flight to a receiver that hangs;
- the vector worker (rag, embeddings) dies while a RAG task waits on a slow answer LLM.

A task lost with its worker is sent again inside the job (workers/lost_tasks.py): the router sees
the task STARTED on a worker whose heartbeat stopped, sends a copy, and the job succeeds once a
worker of that queue is back (before the fix it waited for its deadline and failed with
`limit_deadline`: the lost message is redelivered only after the broker's visibility timeout).
A webhook attempt lost with its worker is re-sent by the sweeper once its claim has
lapsed, and delivered. Every job ends final exactly once with one delivery row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from infra.settings import Settings
from tests.api.support import WebhookReceiver, query, wait_until
from tests.proof.conftest import (
    FRONT,
    ROUTER,
    SEARCH_RUBY,
    VECTOR,
    DrillStack,
    TaggedLLM,
    assert_final_once,
    submit,
    wait_final,
)
from tests.support.llm_server import Delay, ToolCall, answer_from_passage
from workers.app import create_celery

pytestmark = pytest.mark.slow



class TableLock:
    """`LOCK TABLE ... IN ACCESS EXCLUSIVE MODE` held in an open transaction by this test, so a
    search task blocks inside its SQL until the lock is released (or its worker dies)."""

    def __init__(self, settings: Settings, table: str) -> None:
        self.settings, self.table = settings, table
        self.loop = asyncio.new_event_loop()
        self.conn: asyncpg.Connection | None = None

    def __enter__(self) -> TableLock:
        self.conn = self.loop.run_until_complete(asyncpg.connect(self.settings.database_url))
        self.loop.run_until_complete(self.conn.execute(f"BEGIN; LOCK TABLE {self.table} IN ACCESS EXCLUSIVE MODE"))
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.conn is not None
        self.loop.run_until_complete(self.conn.close())  # ends the transaction: the lock is released
        self.loop.close()

    def waiters(self) -> int:
        rows = query(self.settings, "SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                     "WHERE c.relname = $1 AND NOT l.granted "
                     "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())", self.table)
        return int(rows[0]["n"])


def _statuses(stack: DrillStack, job_ids: list[str]) -> dict[str, str]:
    rows = query(stack.settings, "SELECT id, status FROM jobs WHERE id = ANY($1)", job_ids)
    return {r["id"]: r["status"] for r in rows}


def test_front_worker_killed_with_search_and_webhook_in_flight(
    drill_stack: DrillStack, tagged: TaggedLLM, hooks: Callable[..., WebhookReceiver]
) -> None:
    stack = drill_stack
    tagged.on("search-kill", lambda n, body: SEARCH_RUBY)
    # Ends fast without a search: an unknown tool twice, then the deterministic router refuses a greeting.
    tagged.on("hook-kill", lambda n, body: ToolCall("DropAllTables", {}))
    plain = hooks()
    hangs_first = hooks(lambda n: (200, 30.0) if n == 0 else (200, 0.0))
    with stack.client("front-kill") as c:
        with TableLock(stack.settings, "localizations") as lock:
            searching = submit(c, "find ruby news [drill:search-kill]", plain.url)
            wait_until(lambda: lock.waiters() >= 1, timeout=30, what="the search task blocked on the lock")
            notifying = submit(c, "hello there [drill:hook-kill]", hangs_first.url)
            wait_until(lambda: hangs_first.for_job(notifying), timeout=30, what="the webhook POST in flight")
            stack.kill(FRONT)
        assert _statuses(stack, [searching, notifying]) == {searching: "running", notifying: "succeeded"}
        [held] = query(stack.settings, "SELECT status, attempts FROM webhook_deliveries WHERE job_id = $1", notifying)
        assert held == {"status": "pending", "attempts": 1}  # the attempt died with its worker, unrecorded
        stack.start(FRONT)
        docs = wait_final(c, [searching, notifying], timeout=60)
        assert_final_once(stack.settings, docs, webhook=True)

    lost_search = docs[searching]
    assert lost_search["status"] == "succeeded", lost_search  # the search was sent again
    assert lost_search["result"]["resultType"] == "SearchResult" and lost_search["result"]["routedBy"] == "llm"
    executions = query(stack.settings, "SELECT tool, outcome FROM audit_events WHERE job_id = $1 "
                       "AND kind = 'tool_execution'", searching)
    assert executions == [{"tool": "SearchArticles", "outcome": "answered"}]
    assert "turnout.search.search" in stack.workers[ROUTER].log_text() and \
        "was lost (its worker" in stack.workers[ROUTER].log_text()
    assert docs[notifying]["result"]["status"] == "refused" and docs[notifying]["result"]["routedBy"] == "fallback"

    [delivery] = query(stack.settings, "SELECT id, status, attempts FROM webhook_deliveries WHERE job_id = $1",
                       notifying)
    attempts = query(stack.settings, "SELECT attempt, status_code FROM webhook_attempts WHERE delivery_id = $1",
                     delivery["id"])
    assert delivery["status"] == "delivered" and delivery["attempts"] == 2, delivery
    assert attempts == [{"attempt": 2, "status_code": 200}]  # the killed attempt 1 left no record
    posts = hangs_first.for_job(notifying)
    assert len(posts) == 2 and posts[0].delivery == posts[1].delivery == str(delivery["id"])  # receivers dedupe by this id
    assert len(plain.for_job(searching)) == 1


def _ask_directly(stack: DrillStack) -> dict[str, Any]:
    """A RAG task straight on the queue (empty scope: no LLM call): proves a vector worker consumes."""
    app = create_celery(stack.settings)
    try:
        payload: dict[str, Any] = {"question": "ping", "language": None, "answerLanguage": "en", "scope": [],
                   "scopeTruncated": False, "deadlineS": 30}
        reply: dict[str, Any] = app.send_task("turnout.rag.answer", args=[payload], queue="rag").get(timeout=60)
        return reply
    finally:
        app.close()


def _ask_script(answer: Any) -> Callable[[int, dict[str, Any]], Any]:
    def script(n: int, body: dict[str, Any]) -> Any:
        if "tools" in body:  # the router: ask the articles, the question keeps the drill tag
            question = next(m["content"] for m in body["messages"] if m["role"] == "user")
            return ToolCall("AskArticles", {"question": question})
        return answer(body) if callable(answer) else answer  # the RAG answer call (from its request)

    return script


def test_vector_worker_killed_while_rag_waits_on_the_llm(
    drill_stack: DrillStack, tagged: TaggedLLM, hooks: Callable[..., WebhookReceiver]
) -> None:
    stack = drill_stack
    # Answers drawn from their passages: the answer check accepts them (issue 25).
    slow_then_quick = _ask_script(lambda body: Delay(20.0, answer_from_passage(body)))
    quick = _ask_script(answer_from_passage)
    # n = 0: the router; n = 1: the answer call the kill cuts; later: the copy sent again.
    tagged.on("rag-kill", lambda n, body: (slow_then_quick if n <= 1 else quick)(n, body))
    tagged.on("rag-after", _ask_script(answer_from_passage))
    receiver = hooks()
    with stack.client("vector-kill") as c:
        asking = submit(c, "What is new in Ruby? [drill:rag-kill]", receiver.url)
        wait_until(lambda: tagged.requests_for("rag-kill", router=False), timeout=30, what="the RAG answer call")
        stack.kill(VECTOR)
        assert _statuses(stack, [asking]) == {asking: "running"}
        stack.start(VECTOR)
        assert _ask_directly(stack)["status"] == "no_results"  # the new vector worker serves
        after = submit(c, "What is new in Ruby? [drill:rag-after]", receiver.url)
        docs = wait_final(c, [asking, after], timeout=60)
    assert_final_once(stack.settings, docs, webhook=True)

    lost = docs[asking]
    assert lost["status"] == "succeeded", lost  # the RAG task was sent again to the new worker
    assert lost["result"]["answerKind"] == "llm" and lost["result"]["sources"], lost["result"]
    recovered = docs[after]
    assert recovered["status"] == "succeeded", recovered
    assert recovered["result"]["answerKind"] == "llm" and recovered["result"]["sources"], recovered["result"]
    assert all(len(receiver.for_job(j)) == 1 for j in (asking, after))
