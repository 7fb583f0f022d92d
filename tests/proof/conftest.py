"""Fixtures for the fault drills (tests/proof/test_fault_*.py): a private stack that the drills
may break without touching the session's services.

The stack has its own redis-server, its own database, its own data directory (Qdrant Edge) and
its own workers, split as `turnout up` splits them: router | search,webhooks,maintenance (+beat)
| rag,embeddings. Everything slow in production is seconds here, through the environment the
workers read: job lease 3 s, sweep every 1 s, LLM calls cut after 1.5 s with one retry, a job
deadline of 15 s, webhook timeout 1.5 s with a retry schedule of 0.5, 1, 1, 1 s (then the dead letter).
Embeddings come from the scripted LLM server (hashed vectors), so indexing takes no model.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.settings import EmbeddingProvider, Settings
from infra.status import JobStatus
from tests.api.support import (
    ApiServer,
    RedisServer,
    WebhookReceiver,
    issue_key,
    load_articles,
    query,
    settings_env,
    stack_settings,
    start_worker,
    throwaway_database,
    wait_for_job,
    wait_until,
)
from tests.support import services
from tests.support.llm_server import ScriptedLLM, Step, ToolCall

FINAL = {s.value for s in JobStatus if s.is_final}

JOB_DEADLINE_S = 15.0
LLM_CALL_TIMEOUT_S = 1.5
WEBHOOK_TIMEOUT_S = 1.5
WEBHOOK_RETRY_SCHEDULE_S = "[0.5, 1, 1, 1]"  # 5 attempts, then dead-lettered
# The drills' usual model call: a search that finds articles in the loaded sample.
SEARCH_RUBY = ToolCall("SearchArticles", {"text": "ruby", "language": "en"})

# What every drill worker reads (see the module docstring).
DRILL_ENV = {
    "TURNOUT_JOB_LEASE_S": "3",
    "TURNOUT_JOB_SWEEP_INTERVAL_S": "1",
    "TURNOUT_LLM_MAX_RETRIES": "1",
    "TURNOUT_LIMIT_LLM_CALL_TIMEOUT_S": str(LLM_CALL_TIMEOUT_S),
    "TURNOUT_LIMIT_JOB_DEADLINE_S": str(JOB_DEADLINE_S),
    "TURNOUT_WEBHOOK_TIMEOUT_S": str(WEBHOOK_TIMEOUT_S),
    "TURNOUT_WEBHOOK_RETRY_SCHEDULE_S": WEBHOOK_RETRY_SCHEDULE_S,
}
ROUTER = "router"
FRONT = "search,webhooks,maintenance"
VECTOR = "rag,embeddings"
# The vector worker's own answer calls may take long (the job deadline still bounds them), so a
# drill can kill it while one is in flight.
VECTOR_ENV = {"TURNOUT_LIMIT_LLM_CALL_TIMEOUT_S": "30"}

_TAG = re.compile(r"\[drill:([\w-]+)\]")


def tag_of(body: dict[str, Any]) -> str | None:
    """The `[drill:x]` tag of the question a chat request is about (router or RAG request)."""
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            found = _TAG.search(content)
            if found:
                return found.group(1)
    return None


class TaggedLLM:
    """Per-question scripts for concurrent jobs: each job's question carries `[drill:<tag>]`; the
    n-th chat request for a tag gets `script(n, body)`. Router and RAG requests are told apart by
    `tools` (only the router sends tools)."""

    def __init__(self, llm: ScriptedLLM) -> None:
        self.llm = llm
        self.scripts: dict[str, Callable[[int, dict[str, Any]], Step]] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        llm.on_chat(self._reply)

    def on(self, tag: str, script: Callable[[int, dict[str, Any]], Step]) -> None:
        self.scripts[tag] = script

    def requests_for(self, tag: str, *, router: bool | None = None) -> list[dict[str, Any]]:
        return [b for b in self.llm.chat_requests
                if tag_of(b) == tag and (router is None or ("tools" in b) == router)]

    def _reply(self, body: dict[str, Any]) -> Step:
        tag = tag_of(body)
        if tag is None or tag not in self.scripts:
            raise AssertionError(f"chat request without a scripted drill tag: {str(body)[:300]}")
        with self._lock:
            n = self.counts.get(tag, 0)
            self.counts[tag] = n + 1
        return self.scripts[tag](n, body)


@dataclass
class DrillStack:
    settings: Settings
    redis: RedisServer
    api: ApiServer
    env: dict[str, str]
    workers: dict[str, services.WorkerProcess] = field(default_factory=dict)

    def start(self, queues: str) -> services.WorkerProcess:
        """Start the worker for `queues` (the front worker carries beat). Only the front worker is
        waited for (it answers the maintenance ping); the others consume when they are up."""
        if queues == FRONT:
            worker = start_worker(self.settings, FRONT, beat=True, env=self.env)
        else:
            extra = VECTOR_ENV if queues == VECTOR else {}
            worker = services.WorkerProcess(
                queues=queues, concurrency=8 if queues == ROUTER else 4,
                env=settings_env(self.settings, **{**self.env, **extra}),
            ).start(wait_ready=False)
        self.workers[queues] = worker
        return worker

    def kill(self, queues: str) -> None:
        self.workers[queues].kill()  # SIGKILL of the whole process group: nothing cleans up

    def client(self, name: str = "drill") -> httpx.Client:
        return self.api.client(issue_key(self.settings, name).token)

    def stop(self) -> None:
        self.api.stop()
        for worker in self.workers.values():
            worker.stop()


def index_articles(settings: Settings) -> None:
    """Index the loaded articles on the stack's vector worker and wait for the run to finish."""
    from tests.support.indexing import index_ids_sync

    index_ids_sync(settings, None, timeout_s=90)


@pytest.fixture(scope="session")
def drill_redis(test_environment: None) -> Iterator[RedisServer]:
    """The drills' own redis-server (never the shared one)."""
    redis = RedisServer().start()
    yield redis
    redis.stop()


@pytest.fixture(scope="session")
def drill_stack(settings: Settings, drill_redis: RedisServer, llm_server: ScriptedLLM) -> Iterator[DrillStack]:
    redis = drill_redis
    data_dir = Path(tempfile.mkdtemp(prefix="turnout-drill-"))
    embedding = {
        "TURNOUT_EMBEDDING_PROVIDER": "openai",
        "TURNOUT_EMBEDDING_BASE_URL": llm_server.base_url,
        "TURNOUT_EMBEDDING_MODEL": "scripted-embedding",
        "TURNOUT_DATA_DIR": str(data_dir),
    }
    try:
        with throwaway_database("drill") as dsn:
            own = stack_settings(
                settings, database_url=dsn, redis_url=redis.url, job_lease_s=3.0, job_sweep_interval_s=1.0,
                embedding_provider=EmbeddingProvider.OPENAI, embedding_base_url=llm_server.base_url,
                embedding_model="scripted-embedding", data_dir=data_dir,
            )
            load_articles(own)
            stack = DrillStack(own, redis, ApiServer(own).start(), {**DRILL_ENV, **embedding})
            try:
                stack.start(FRONT)
                stack.start(ROUTER)
                stack.start(VECTOR)
                index_articles(own)
                yield stack
            finally:
                stack.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def tagged(llm: ScriptedLLM) -> TaggedLLM:
    return TaggedLLM(llm)


@pytest.fixture
def hooks() -> Iterator[Callable[..., WebhookReceiver]]:
    """Receivers made on demand (`hooks(respond)`, see WebhookReceiver), stopped after the test."""
    started: list[WebhookReceiver] = []

    def make(respond: Callable[[int], tuple[int, float]] = lambda n: (200, 0.0)) -> WebhookReceiver:
        receiver = WebhookReceiver(respond=respond).start()
        started.append(receiver)
        return receiver

    yield make
    for receiver in started:
        receiver.stop()


# ---- the end state every drill asserts ----------------------------------------------------------

def submit(c: httpx.Client, question: str, webhook_url: str | None = None) -> str:
    body: dict[str, Any] = {"question": question}
    if webhook_url is not None:
        body["webhookUrl"] = webhook_url
    response = c.post("/v1/questions", json=body)
    assert response.status_code == 202, response.text
    job_id: str = response.json()["id"]
    return job_id


def wait_final(c: httpx.Client, job_ids: list[str], timeout: float = 60.0) -> dict[str, dict[str, Any]]:
    return {job_id: wait_for_job(c, job_id, timeout=timeout) for job_id in job_ids}


def assert_final_once(settings: Settings, docs: dict[str, dict[str, Any]], *, webhook: bool) -> None:
    """Each job: a final status in its row, exactly one final event (the same status), a reason
    when failed, and (with a URL) exactly one webhook delivery row that ended delivered or dead."""
    job_ids = list(docs)
    rows = {r["id"]: r for r in query(settings, "SELECT id, status, error FROM jobs WHERE id = ANY($1)", job_ids)}
    finals = query(settings, "SELECT job_id, kind FROM job_events WHERE job_id = ANY($1) AND kind = ANY($2)",
                   job_ids, sorted(FINAL))
    for job_id, doc in docs.items():
        assert rows[job_id]["status"] in FINAL and rows[job_id]["status"] == doc["status"], (job_id, rows[job_id])
        kinds = [f["kind"] for f in finals if f["job_id"] == job_id]
        assert kinds == [doc["status"]], f"job {job_id}: final events {kinds}, want exactly one {doc['status']}"
        if doc["status"] == "failed":
            error = doc["error"]
            assert error and error["code"] and error["message"], f"job {job_id} failed without a reason: {doc}"
    if webhook:
        deliveries = query(settings, "SELECT job_id, status FROM webhook_deliveries WHERE job_id = ANY($1)", job_ids)
        assert sorted(d["job_id"] for d in deliveries) == sorted(job_ids), deliveries  # one row per job
        wait_until(
            lambda: all(r["status"] != "pending" for r in query(
                settings, "SELECT status FROM webhook_deliveries WHERE job_id = ANY($1)", job_ids)),
            timeout=60, what="every webhook delivery to end (delivered or dead)",
        )


def audit_rows(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    return query(settings, "SELECT kind, tool, outcome, error, input_tokens, output_tokens FROM audit_events "
                 "WHERE job_id = $1 ORDER BY id", job_id)


def assert_usage_matches_audit(settings: Settings, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's usage is the sum of its audited LLM calls (router rounds and RAG answers)."""
    rows = audit_rows(settings, doc["id"])
    calls = [r for r in rows if r["kind"] in ("llm_round", "rag_answer")]
    usage = doc["usage"]
    assert usage["llmCalls"] == len(calls), (usage, rows)
    assert usage["inputTokens"] == sum(r["input_tokens"] for r in calls), (usage, rows)
    assert usage["outputTokens"] == sum(r["output_tokens"] for r in calls), (usage, rows)
    return rows
