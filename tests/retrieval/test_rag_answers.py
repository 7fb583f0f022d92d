"""What the user reads of a RAG answer (issue 25), on the real engine (both backends), real
Postgres, USE embeddings and the scripted LLM: a reply that is not an answer is asked again
once, then replaced by the extractive answer, each outcome on /metrics; sources are one entry
per article with the chunk positions the model read; every citation resolves."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest
import redis.asyncio as aioredis
from prometheus_client.parser import text_string_to_metric_families

from api.metrics import render
from api.ops import gather_ops
from infra import counters
from infra.settings import Settings
from infra.vectors import VectorStore
from retrieval.answer_prompt import LANGUAGE_REMINDER, STRICT_REMINDER
from retrieval.rag import RagContext, answer_question
from tests.retrieval.rag_fixtures import CORPUS, article, index, load, make_ctx, rag_db, rag_settings, store
from tests.support.llm_server import ScriptedLLM, Text

FIXTURES = (rag_db, rag_settings, store)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

# Written for this test: one article long enough for several chunks, all on the question.
_STARTER = [
    "A sourdough starter is flour and water fermented by wild yeast and lactic acid bacteria. "
    "Feed the starter every day with equal weights of rye flour and water. " * 5,
    "Keep the sourdough starter at room temperature; it doubles within eight hours when it is active. "
    "A starter that smells of acetone is hungry and needs feeding more often. " * 5,
    "Before baking, take a spoon of the sourdough starter and drop it in water: an active starter floats. "
    "Use the starter at its peak, when it has doubled and is full of bubbles. " * 5,
]
STARTER = article("starter-en", "en", "Keeping a sourdough starter alive", "\n\n".join(_STARTER), day=11)
QUESTION = "How do I feed and keep a sourdough starter?"


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    context = make_ctx(rag_settings, rag_db, store)
    await load(rag_db, [*CORPUS, STARTER])
    await index(context)
    return context


@pytest.fixture
async def redis_client(settings: Settings) -> AsyncIterator[aioredis.Redis]:
    from infra.redis import create_async_redis

    client = create_async_redis(settings)
    try:
        yield client
    finally:
        await client.aclose()


async def metric_samples(db: asyncpg.Pool, redis: aioredis.Redis, settings: Settings) -> Samples:
    """/metrics as the API renders it, after this process's counts reached Redis."""
    await counters.flush(redis, settings)
    text = render(await gather_ops(db, redis, settings)).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    k = (name, tuple(sorted(labels.items())))
    return after.get(k, 0.0) - before.get(k, 0.0)


async def test_sources_are_one_entry_per_article_and_every_citation_resolves(
    ctx: RagContext, llm: ScriptedLLM
) -> None:
    llm.script(Text("Feed the starter every day with rye flour and water [1][9]; an active starter floats [1, 7]."))
    outcome = await answer_question(ctx, question=QUESTION, language="en", answer_language="en", scope=None)
    assert outcome.answer_kind == "llm"
    ids = [s.article_id for s in outcome.sources]
    assert len(ids) == len(set(ids)) and ids[0] == "starter-en"
    first = outcome.sources[0]
    assert first.chunks is not None and len(first.chunks) == 2 and first.chunk in first.chunks
    assert [s.score for s in outcome.sources] == sorted((s.score for s in outcome.sources), reverse=True)
    assert outcome.answer == "Feed the starter every day with rye flour and water [1]; an active starter floats [1]."
    material = llm.chat_requests[-1]["messages"][1]["content"]
    assert material.count("[1] Keeping a sourdough starter alive (en)") == 1  # one entry, both chunks under it
    assert "[2] Keeping a sourdough starter alive" not in material


async def test_the_answer_length_cap_is_the_setting(ctx: RagContext, llm: ScriptedLLM) -> None:
    """TURNOUT_RAG_ANSWER_MAX_TOKENS bounds what the model may write (the whole answer's time)."""
    capped = RagContext(settings=ctx.settings.model_copy(update={"rag_answer_max_tokens": 77}), pool=ctx.pool,
                        store=ctx.store, embedders=ctx.embedders, llm=ctx.llm, reranker=ctx.reranker)
    llm.script(Text("Feed the starter every day with rye flour and water [1]."))
    outcome = await answer_question(capped, question=QUESTION, language="en", answer_language="en", scope=None)
    assert outcome.answer_kind == "llm"
    assert llm.chat_requests[-1]["max_tokens"] == 77


async def test_a_non_answer_is_asked_again_strictly_then_replaced_by_the_extractive_answer(
    ctx: RagContext, llm: ScriptedLLM, own_counters: Settings, db: asyncpg.Pool, redis_client: aioredis.Redis
) -> None:
    before = await metric_samples(db, redis_client, own_counters)
    asks_back = Text("Sure, I can help you with that. Please provide the question you would like answered.")
    llm.script(asks_back, Text("Feed the sourdough starter daily with equal weights of rye flour and water [1]."))
    retried = await answer_question(ctx, question=QUESTION, language="en", answer_language="en", scope=None)
    assert retried.answer_kind == "llm" and retried.answer is not None and "rye flour" in retried.answer
    first, second = llm.chat_requests[-2:]
    assert STRICT_REMINDER not in first["messages"][1]["content"]
    assert STRICT_REMINDER in second["messages"][1]["content"]
    assert first["messages"][0] == second["messages"][0]  # the cached instruction is unchanged

    llm.script(asks_back, Text(QUESTION))  # asks back, then restates the question
    replaced = await answer_question(ctx, question=QUESTION, language="en", answer_language="en", scope=None)
    assert replaced.answer_kind == "extractive" and replaced.answer is not None
    assert replaced.answer.startswith("Extractive answer") and "not an answer" in (replaced.message or "")
    assert replaced.usage.llm_calls == 2

    after = await metric_samples(db, redis_client, own_counters)
    checks = {(a, v): delta(before, after, "turnout_answer_checks_total", attempt=a, verdict=v)
              for a, v in (("first", "empty"), ("strict", "accepted"), ("strict", "restates_question"))}
    # The ask-back is nothing but filler words ("sure", "help", "please", "provide"): empty of content.
    assert checks == {("first", "empty"): 2, ("strict", "accepted"): 1, ("strict", "restates_question"): 1}
    assert delta(before, after, "turnout_answer_outcomes_total", outcome="llm_on_retry") == 1
    assert delta(before, after, "turnout_answer_outcomes_total", outcome="extractive_non_answer") == 1


async def test_a_reply_in_another_language_is_asked_again_in_the_asked_one(
    ctx: RagContext, llm: ScriptedLLM, own_counters: Settings, db: asyncpg.Pool, redis_client: aioredis.Redis
) -> None:
    before = await metric_samples(db, redis_client, own_counters)
    english = Text("Feed the sourdough starter every day with equal weights of rye flour and water [1].")
    russian = Text("Закваску кормят каждый день равными весами ржаной муки и воды (rye flour and water) [1].")
    llm.script(english, russian)
    outcome = await answer_question(ctx, question=QUESTION, language="en", answer_language="ru", scope=None)
    assert outcome.answer_kind == "llm" and outcome.answer == russian.content
    first, second = llm.chat_requests[-2:]
    assert "not in Russian" in second["messages"][1]["content"]
    assert LANGUAGE_REMINDER.format(name="Russian") in second["messages"][1]["content"]
    assert STRICT_REMINDER not in second["messages"][1]["content"]

    llm.script(english, english)  # still English after the reminder: not the answer that was asked for
    replaced = await answer_question(ctx, question=QUESTION, language="en", answer_language="ru", scope=None)
    assert replaced.answer_kind == "extractive" and "wrong_language" in (replaced.message or "")
    after = await metric_samples(db, redis_client, own_counters)
    assert delta(before, after, "turnout_answer_checks_total", attempt="first", verdict="wrong_language") == 2
    assert delta(before, after, "turnout_answer_checks_total", attempt="strict", verdict="wrong_language") == 1


async def test_a_question_that_asks_two_things_lists_them_for_the_model(ctx: RagContext, llm: ScriptedLLM) -> None:
    """The parts come from what retrieval reads (the question without its language cue); the model
    still reads the question whole."""
    llm.script(Text("Feed it daily with rye flour and water [1]; an active starter floats in water [1]."))
    question = "How often do I feed a sourdough starter, and how do I know it is active? Answer in German."
    await answer_question(ctx, question=question, language="en", answer_language="de", scope=None,
                          retrieval_text="How often do I feed a sourdough starter, and how do I know it is active?")
    user = llm.chat_requests[-1]["messages"][1]["content"]
    assert f"Question: {question}" in user
    assert "asks 2 things" in user and "1. How often do I feed a sourdough starter\n" in user
    assert "2. how do I know it is active\n" in user


async def test_an_answer_translated_from_passages_in_another_language_is_accepted(
    ctx: RagContext, llm: ScriptedLLM
) -> None:
    # German from the English article: it shares one name with its passages ("Aceton", in the sentence it
    # cites), none of their other words. Judged by its share of the passages' words (1 of 13) it was off the
    # material, asked again, then quoted.
    german = Text("Man füttert ihn jeden Tag mit gleichen Gewichten Roggenmehl und Wasser; riecht er nach Aceton, "
                  "hat er Hunger und braucht öfter Futter [1].")
    llm.script(german, german)
    outcome = await answer_question(ctx, question=QUESTION, language="en", answer_language="de", scope=None)
    assert outcome.answer_kind == "llm" and outcome.answer == german.content
    assert outcome.usage.llm_calls == 1
