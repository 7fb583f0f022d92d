"""Streamed answers: `answer_delta` job events while the answer model streams (real Postgres,
real engine, the scripted LLM streaming over real HTTP); their text equals the final answer."""

from __future__ import annotations

import asyncpg
import pytest
import redis.asyncio as aioredis

from infra.db.api_keys import create_key
from infra.db.job_events import JobEvent, events_after
from infra.db.jobs import create_job
from infra.settings import Settings
from infra.status import ResultStatus
from infra.vectors import VectorStore
from retrieval.answer_stream import DELTA, RESET
from retrieval.rag import RagContext, answer_question
from tests.retrieval.rag_fixtures import index, load, make_ctx, rag_db, rag_settings, store
from tests.retrieval.test_rag_answers import delta, metric_samples, redis_client
from tests.support.llm_server import HttpError, ScriptedLLM, Text

FIXTURES = (rag_db, rag_settings, store, redis_client)
QUESTION = "How do I renew my TLS certificate automatically?"


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    context = make_ctx(rag_settings, rag_db, store)
    await load(rag_db)
    await index(context)
    return context


async def _job(pool: asyncpg.Pool) -> str:
    async with pool.acquire() as conn:
        key = await create_key(conn, "stream-test")
        job, _ = await create_job(conn, api_key_id=key.key.id, question=QUESTION, answer_language="en",
                                  page_size=None, webhook_url=None, idempotency_key=None, request_hash="h",
                                  lease_s=60)
    return job.id


async def _events(pool: asyncpg.Pool, job_id: str) -> list[JobEvent]:
    async with pool.acquire() as conn:
        return await events_after(conn, job_id)


def _streamed_text(events: list[JobEvent]) -> str:
    """What a client shows: the deltas since the last reset."""
    text = ""
    for event in events:
        if event.kind == RESET:
            text = ""
        elif event.kind == DELTA:
            text += event.data["text"]
    return text


async def test_model_tokens_stream_as_deltas_that_equal_the_final_answer(
    ctx: RagContext, llm: ScriptedLLM, own_counters: Settings, db: asyncpg.Pool, redis_client: aioredis.Redis
) -> None:
    before = await metric_samples(db, redis_client, own_counters)
    job_id = await _job(ctx.pool)
    words = " ".join(f"Check {n}: the client reads the expiry date and renews the certificate thirty days before it "
                     "expires." for n in range(6))
    llm.script(HttpError(500, "retry me"), Text(f"  \n Renew it with the ACME client [1]. {words} [2].  \n",
                                                chunk_delay_s=0.01))
    outcome = await answer_question(ctx, question=QUESTION, language=None, answer_language="en", scope=None,
                                    job_id=job_id)
    assert outcome.status is ResultStatus.ANSWERED and outcome.answer_kind == "llm"
    assert outcome.answer == f"Renew it with the ACME client [1]. {words} [2]."
    assert llm.chat_requests[-1]["stream"] is True and outcome.usage.input_tokens == 100
    events = await _events(ctx.pool, job_id)
    deltas = [e for e in events if e.kind == DELTA]
    assert len(deltas) > 3 and _streamed_text(events) == outcome.answer
    assert deltas[0].created_at < deltas[-1].created_at  # written while the model was still talking
    assert [e.id for e in events] == sorted(e.id for e in events)
    # The streamed call is counted like the plain one (issue 24 item 2): the 500, the retry, the success.
    after = await metric_samples(db, redis_client, own_counters)
    assert delta(before, after, "turnout_llm_call_outcomes_total", kind="answer", outcome="5xx") == 1
    assert delta(before, after, "turnout_llm_call_outcomes_total", kind="answer", outcome="ok") == 1
    assert delta(before, after, "turnout_llm_retries_total", kind="answer") == 1


async def test_a_rerun_resets_and_an_extractive_answer_streams_its_passages(
    ctx: RagContext, llm: ScriptedLLM
) -> None:
    job_id = await _job(ctx.pool)
    llm.script(Text("First answer: run the ACME client from a timer [1]."))
    await answer_question(ctx, question=QUESTION, language=None, answer_language="en", scope=None, job_id=job_id)
    llm.fail_every_call("the model is down")
    second = await answer_question(ctx, question=QUESTION, language=None, answer_language="en", scope=None,
                                   job_id=job_id)
    assert second.answer_kind == "extractive" and second.answer is not None
    events = await _events(ctx.pool, job_id)
    assert RESET in [e.kind for e in events]
    assert _streamed_text(events) == second.answer
    assert "First answer" not in _streamed_text(events)


async def test_without_a_job_nothing_is_streamed(ctx: RagContext, llm: ScriptedLLM) -> None:
    llm.script(Text("Run the ACME client from a timer twice a day [1]."))
    outcome = await answer_question(ctx, question=QUESTION, language=None, answer_language="en", scope=None)
    assert outcome.answer == "Run the ACME client from a timer twice a day [1]." and "stream" not in llm.chat_requests[-1]


async def test_a_looping_reply_the_cap_stopped_is_tidied_and_the_stream_shows_the_tidied_text(
    ctx: RagContext, llm: ScriptedLLM
) -> None:
    """A sentence said again goes and the cut end is marked; the client's stream ends on that text."""
    job_id = await _job(ctx.pool)
    loop = "Renew it with the ACME client [1].\n1. The client runs twice a day.\n2. The client runs twice a day.\n3. The cli"
    llm.script(Text(loop, finish_reason="length", chunk_delay_s=0.001))
    outcome = await answer_question(ctx, question=QUESTION, language=None, answer_language="en", scope=None,
                                    job_id=job_id)
    assert outcome.answer_kind == "llm"
    assert outcome.answer == "Renew it with the ACME client [1].\n1. The client runs twice a day.\n3. The cli…"
    events = await _events(ctx.pool, job_id)
    assert RESET in [e.kind for e in events] and _streamed_text(events) == outcome.answer
    # a reply that ended by itself keeps its end as written (no job: the plain call)
    llm.script(Text("Renew it with the ACME client twice a day [1]"))
    plain = await answer_question(ctx, question=QUESTION, language=None, answer_language="en", scope=None)
    assert plain.answer == "Renew it with the ACME client twice a day [1]"
