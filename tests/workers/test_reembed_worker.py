"""A re-embedding run on a real vector worker that is SIGKILLed mid-run: a new worker resumes
it, it finishes with every chunk present exactly once, and questions are answered meanwhile.

The stack is isolated (own database, Redis key prefix and data directory), so killing this
worker touches nobody else's tests, and Qdrant Edge is opened by this worker alone.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from celery import Celery
from typer.testing import CliRunner

from infra.db import reembed as runs_db
from infra.settings import Settings
from infra.vectors.edge import EdgeVectorStore
from retrieval.chunking import chunk_localization
from tests.retrieval.rag_fixtures import CORPUS, HIDDEN_ID, article, load, rag_db, rag_settings
from tests.support.llm_server import ScriptedLLM, answer_from_passage
from tests.support.services import VECTOR_QUEUES, WorkerProcess
from turnout.cli import app as turnout
from workers.app import create_celery
from workers.reembed import start_reembed_run

# Shared fixtures (the own database) used by the test below.
FIXTURES = (rag_db, rag_settings)

_NOUNS = ["water supply", "tram line", "library", "bridge", "market hall", "school garden", "bus depot"]
_VERBS = ["was repaired", "reopened", "was extended", "got new lighting", "changed its timetable"]
_WHEN = ["in spring", "after the storm", "last winter", "during the festival", "at the end of the year"]


def generated(n: int) -> list[Any]:
    """Long articles written here from word lists (~5 chunks each): enough work to kill mid-run."""
    records = []
    for k in range(n):
        rnd = random.Random(k)
        sentences = [
            f"In district {k} the {rnd.choice(_NOUNS)} {rnd.choice(_VERBS)} {rnd.choice(_WHEN)}, "
            f"report number {k * 100 + i} says, and residents counted {rnd.randint(2, 900)} visitors."
            for i in range(36)
        ]
        records.append(article(f"district-{k:02d}", "en", f"District {k} news", " ".join(sentences), day=20 + k))
    return records


def _ask(app: Celery, question: str, scope: list[str] | None = None) -> dict[str, Any]:
    payload = {"question": question, "language": None, "answerLanguage": "en", "scope": scope,
               "scopeTruncated": False, "deadlineS": 60}
    result: dict[str, Any] = app.send_task("turnout.rag.answer", args=[payload], queue="rag").get(timeout=90)
    return result


async def _wait(pool: asyncpg.Pool, run_id: str, until: Any, within_s: float) -> runs_db.Run:
    deadline = time.monotonic() + within_s
    while True:
        run = await runs_db.get_run(pool, run_id)
        assert run is not None
        if until(run):
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} did not get there in {within_s}s: {run}")
        await asyncio.sleep(0.05)


async def _vector_stack(
    rag_settings: Settings, rag_db: asyncpg.Pool, llm: ScriptedLLM, tmp_path: Path, prefix: str
) -> tuple[Settings, dict[str, str], Celery, list[Any]]:
    """Settings, worker environment and Celery app of a vector-worker drill, with 48 generated articles loaded."""
    stack = rag_settings.model_copy(update={"redis_prefix": rag_settings.redis_prefix + prefix, "data_dir": tmp_path})
    env = {"TURNOUT_DATABASE_URL": stack.database_url, "TURNOUT_REDIS_PREFIX": stack.redis_prefix,
           "TURNOUT_DATA_DIR": str(tmp_path)}
    llm.on_chat(answer_from_passage)  # an answer the answer check accepts
    extra = generated(48)
    await load(rag_db, CORPUS + extra)
    return stack, env, create_celery(stack), extra


def _assert_every_chunk_once(tmp_path: Path, collection: str, records: list[Any]) -> int:
    """With the worker gone this process may open the shard: every visible article's chunks, each once.
    Returns the number of points in the collection."""
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        visible = [r for r in records if r.id != HIDDEN_ID]
        expected = {r.id: len(chunk_localization(r.title, r.plain_text(), r.summary)) for r in visible}
        chunks = store.chunks_of(collection, list(expected))
        assert max(Counter((c.localization_id, c.position) for c in chunks).values()) == 1  # no chunk twice
        assert Counter(c.localization_id for c in chunks) == Counter(expected)  # nothing missing
        count = store.count(collection)
        assert count == sum(expected.values())
        return count
    finally:
        store.close()


@pytest.mark.slow
async def test_killed_vector_worker_resumes_the_run_and_questions_are_answered(
    rag_settings: Settings, rag_db: asyncpg.Pool, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, env, app, extra = await _vector_stack(rag_settings, rag_db, llm, tmp_path, "rag-worker:")

    worker = WorkerProcess(queues=VECTOR_QUEUES, env=env).start(wait_ready=False)
    try:
        assert (await asyncio.to_thread(_ask, app, "anything", []))["status"] == "no_results"  # worker is up
        first = await start_reembed_run(rag_db, ids=[r.id for r in CORPUS], settings=stack)
        await _wait(rag_db, first, lambda r: r.status == "succeeded", 60)

        run_id = await start_reembed_run(rag_db, ids=[r.id for r in extra], batch_size=2, settings=stack)
        await _wait(rag_db, run_id, lambda r: r.done >= 4, 60)
        during = await asyncio.to_thread(_ask, app, "When was the harbour lighthouse built?")
        mid = await runs_db.get_run(rag_db, run_id)
        assert mid is not None and mid.status == "running", "the run ended before the question: too fast to test"
        assert during["status"] == "answered" and during["answerKind"] == "llm"
        assert {s["articleId"] for s in during["sources"]} <= {r.id for r in CORPUS}  # the old version

        await asyncio.to_thread(worker.kill)  # SIGKILL: no cleanup, batches in flight stay pending
        killed = await runs_db.get_run(rag_db, run_id)
        assert killed is not None and killed.status == "running" and killed.pending_batches > 0

        worker = WorkerProcess(queues=VECTOR_QUEUES, env=env).start(wait_ready=False)  # resumes at start
        resumed = await asyncio.to_thread(_ask, app, "When was the harbour lighthouse built?")
        assert resumed["status"] == "answered"
        done = await _wait(rag_db, run_id, lambda r: r.status != "running", 120)
        assert done.status == "succeeded", done.error
        assert (done.done, done.failed, done.pending_batches) == (done.total, 0, 0)

        after = await asyncio.to_thread(_ask, app, "What happened to the tram line in district 7?")
        assert any(s["articleId"].startswith("district-") for s in after["sources"])  # the new version serves

        # `turnout reembed` waits with its progress bar until the run ends (unchanged: all copied).
        monkeypatch.setattr("turnout.reembed_cli.get_settings", lambda: stack)
        cli = await asyncio.to_thread(CliRunner().invoke, turnout, ["reembed", "--ids", "district-07", "--poll", "0.2"])
        assert cli.exit_code == 0, cli.output
        n = len([r for r in CORPUS + extra if r.id != HIDDEN_ID])
        assert f"succeeded: {n}/{n} articles, 0 chunks embedded" in cli.output and "reads now use" in cli.output
        assert "articles/s" in cli.output  # the progress bar's rate column
    finally:
        await asyncio.to_thread(worker.stop)

    # The worker is gone: this process may open the shard and count every chunk.
    total = _assert_every_chunk_once(tmp_path, done.collection, CORPUS + extra)
    assert total == done.embedded + done.skipped


@pytest.mark.slow
async def test_sigterm_of_the_vector_worker_mid_run_closes_everything_and_the_run_resumes(
    rag_settings: Settings, rag_db: asyncpg.Pool, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A warm shutdown (SIGTERM, what `turnout up`'s Ctrl-C sends) during a re-embedding run: the
    running batch ends, the worker's stop hooks close its pools, Redis clients and the Qdrant Edge
    shard, and it exits by itself; a new worker resumes the run, which ends with every chunk once."""
    import psutil

    stack, env, app, extra = await _vector_stack(rag_settings, rag_db, llm, tmp_path, "rag-sigterm:")

    worker = WorkerProcess(queues=VECTOR_QUEUES, env=env).start(wait_ready=False)
    try:
        assert (await asyncio.to_thread(_ask, app, "anything", []))["status"] == "no_results"  # worker is up
        run_id = await start_reembed_run(rag_db, ids=[r.id for r in CORPUS + extra], batch_size=2, settings=stack)
        await _wait(rag_db, run_id, lambda r: r.done >= 4, 60)
        assert worker.proc is not None
        group = [worker.proc.pid, *(p.pid for p in psutil.Process(worker.proc.pid).children(recursive=True))]
        await asyncio.to_thread(worker.stop)  # SIGTERM; SIGKILL only after 20 s
        assert worker.proc.returncode == 0, worker.log_text()[-3000:]  # it exited by itself
        log = worker.log_text()
        assert "worker stop: vector store closed" in log, log[-3000:]
        assert "thread runtime(s) (PostgreSQL pools, Redis clients)" in log, log[-3000:]
        assert "Task was destroyed" not in log and "Unclosed" not in log, log[-3000:]
        assert not [pid for pid in group if psutil.pid_exists(pid)
                    and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]  # no process left
        stopped = await runs_db.get_run(rag_db, run_id)
        assert stopped is not None and stopped.status == "running" and stopped.done < stopped.total

        worker = WorkerProcess(queues=VECTOR_QUEUES, env=env).start(wait_ready=False)  # resumes at start
        done = await _wait(rag_db, run_id, lambda r: r.status != "running", 120)
        assert done.status == "succeeded", done.error
        assert (done.done, done.failed, done.pending_batches) == (done.total, 0, 0)
        answered = await asyncio.to_thread(_ask, app, "What happened to the tram line in district 7?")
        assert answered["status"] == "answered"  # the collection is readable
    finally:
        await asyncio.to_thread(worker.stop)

    _assert_every_chunk_once(tmp_path, done.collection, CORPUS + extra)  # the shard was released
