"""SearchAndAskArticles inherits the relaxed search: its answer's scope is the relaxed page
(real PostgreSQL and vector store, real corpus articles, the scripted LLM routes)."""

from __future__ import annotations

import asyncpg
import pytest

from infra.settings import Settings
from infra.status import ResultStatus
from infra.vectors import VectorStore
from retrieval.rag import RagContext
from router.executor import InProcessExecutor
from router.service import RouteRequest, route_question
from router.tools import SEARCH_AND_ASK
from tests.retrieval.rag_fixtures import index, load, make_ctx, rag_db, rag_settings, store
from tests.retrieval.test_hybrid import RECORDS, REXML
from tests.router.conftest import TODAY, make_deps
from tests.support.llm_server import ScriptedLLM, ToolCall

FIXTURES = (rag_db, rag_settings, store)


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    context = make_ctx(rag_settings, rag_db, store, llm=False)  # extractive answers: only routing is scripted
    await load(rag_db, RECORDS)
    await index(context, batch_size=8)
    return context


async def test_the_combined_tool_answers_from_the_relaxed_page(
    llm: ScriptedLLM, settings: Settings, ctx: RagContext
) -> None:
    english_rexml = {r.id for r in RECORDS if r.translation_key in REXML and r.language == "en"}
    assert english_rexml
    llm.script(ToolCall(SEARCH_AND_ASK, {"text": "REXML zqxwnotices", "language": "en",
                                         "question": "What do the REXML notices say?"}))
    deps = make_deps(settings.model_copy(update={"database_url": ctx.settings.database_url}), ctx.pool, None,
                     executor=InProcessExecutor(ctx.pool, ctx))
    result = await route_question(deps, RouteRequest(question="What do the REXML notices say?", today=TODAY))
    assert result.status is ResultStatus.ANSWERED and result.articles is not None and result.search is not None
    assert {item.id for item in result.articles.items} == english_rexml
    assert "no article has all of 'REXML zqxwnotices'; showing those with 'REXML'" in result.search.adjustments
    assert result.sources and {s.article_id for s in result.sources} <= english_rexml
