"""What RAG retrieval reads: the question without its language cues (issue 25). Real corpus
articles, the real engine (both backends), real Postgres and USE; the answer is extractive, so
the sources are exactly what retrieval ranked first."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import pytest

from infra.results import Source
from infra.settings import Settings
from infra.vectors import VectorStore
from retrieval.rag import RagContext, answer_question
from router.executor import AskCall, InProcessExecutor
from tests.retrieval.rag_fixtures import extractive_ctx, rag_db, rag_settings, store
from tests.retrieval.test_hybrid import _records

FIXTURES = (rag_db, rag_settings, store)

# German stories of the shared corpus: the help pages that use the word "Challenge", the one
# article that says "Russisch" (the Russian translation of the site) and two release posts.
CHALLENGE_TYPES = "docs/challenge-types"
RECORDS = [r for r in _records([
    CHALLENGE_TYPES, "docs/staging-environment", "docs/allow-port-80", "docs/ipv6-support", "docs/revoking",
    "2013-11-30-russian-translation", "2020-12-08-ruby-3-0-0-preview2-released", "2020-12-20-ruby-3-0-0-rc1-released",
]) if r.language == "de"]
QUESTION = "Erkläre mir bitte auf Russisch, welche Challenge-Typen es gibt."


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    return await extractive_ctx(rag_settings, rag_db, store, RECORDS, top_k=3)


def _first_source(sources: Sequence[Source]) -> str | None:
    return next(r.translation_key for r in RECORDS if r.id == sources[0].article_id)


# What retrieval reads does not depend on the vector backend: one is enough (the suite's time).
@pytest.mark.parametrize("store", ["edge"], indirect=True)
async def test_the_answer_language_phrase_does_not_steer_retrieval(ctx: RagContext) -> None:
    # Read whole, "Russisch" is the question's rarest word: the translation announcement ranks first.
    whole = await answer_question(ctx, question=QUESTION, language="de", answer_language="ru", scope=None)
    assert _first_source(whole.sources) != CHALLENGE_TYPES

    # The router's executors retrieve with the question without its language cue.
    call = AskCall(question=QUESTION, language="de", answer_language="ru")
    assert call.retrieval_text == "Erkläre mir bitte, welche Challenge-Typen es gibt."
    outcome = await InProcessExecutor(ctx.pool, ctx).ask(call)
    assert _first_source(outcome.sources) == CHALLENGE_TYPES
    assert outcome.answer_language == "ru"
