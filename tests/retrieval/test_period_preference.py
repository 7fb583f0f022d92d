"""An ask over the whole collection prefers the articles of the period its question names (issue 25):
the router reads the period, the RAG side fuses retrieval over every article with retrieval over that
period's. Real corpus articles, the real engine (Edge), real Postgres and USE; the answer is extractive,
so the sources are exactly what retrieval ranked first."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg
import numpy as np
import pytest

from infra.db.rag_sources import published_between
from infra.messages.ask import AskRequest, PublishedPeriod
from infra.results import Source
from infra.settings import Settings
from infra.vectors import VectorStore
from retrieval import hybrid
from retrieval.rag import RagContext, answer_question
from router.executor import AskCall, InProcessExecutor
from router.gateway import CallValidator, ValidatedCall
from router.question_reading import question_period
from router.tools import default_registry
from tests.retrieval.rag_fixtures import extractive_ctx, rag_db, rag_settings, store
from tests.retrieval.test_hybrid import REXML, _records

FIXTURES = (rag_db, rag_settings, store)

JULY = REXML[1]  # the one REXML advisory of July 2024; the others are from other months
RECORDS = [r for r in _records(REXML) if r.language == "en"]
QUESTION = "What was the REXML denial of service vulnerability of July 2024 about?"
TODAY = date(2026, 12, 6)


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    return await extractive_ctx(rag_settings, rag_db, store, RECORDS, top_k=3)


def _keys(sources: Sequence[Source]) -> list[str | None]:
    return [next(r.translation_key for r in RECORDS if r.id == s.article_id) for s in sources]


def test_the_router_reads_the_whole_span_of_the_period_an_ask_names() -> None:
    assert question_period(QUESTION, TODAY) == PublishedPeriod(date_from=date(2024, 7, 1), date_to=date(2024, 7, 31))
    assert question_period("welche Versionen betraf die Lücke im Herbst 2006?", TODAY) == PublishedPeriod(
        date_from=date(2006, 9, 1), date_to=date(2006, 11, 30))
    assert question_period("What is the REXML denial of service?", TODAY) is None
    assert question_period("What will change in 2030?", TODAY) is None  # no article can be from it
    validator = CallValidator(default_registry(), Settings().limits, today=TODAY, question=QUESTION,
                              user_language="en")
    call = validator.validate("AskArticles", {"question": QUESTION})
    assert isinstance(call, ValidatedCall) and call.period == question_period(QUESTION, TODAY)
    # What ran, in the audit and the job's tool_started event: the preference is named, not applied unseen.
    assert call.normalized_arguments()["preferPeriod"] == {"dateFrom": "2024-07-01", "dateTo": "2024-07-31"}
    plain_question = "What is the REXML denial of service?"
    plain = CallValidator(default_registry(), Settings().limits, today=TODAY, question=plain_question,
                          user_language="en").validate("AskArticles", {"question": plain_question})
    assert isinstance(plain, ValidatedCall) and "preferPeriod" not in plain.normalized_arguments()
    # It crosses to the RAG worker in the task's payload.
    request = AskRequest(question=QUESTION, answer_language="en", prefer_period=call.period)
    assert AskRequest.model_validate(request.wire()).prefer_period == call.period


# What retrieval prefers does not depend on the vector backend: one is enough (the suite's time).
@pytest.mark.parametrize("store", ["edge"], indirect=True)
async def test_an_ask_prefers_the_articles_of_the_period_its_question_names(ctx: RagContext) -> None:
    july = [r.id for r in RECORDS if r.translation_key == JULY]
    assert await published_between(ctx.pool, date(2024, 7, 1), date(2024, 7, 31), "en") == july
    assert await published_between(ctx.pool, date(2024, 7, 1), date(2024, 7, 31), "de") == []

    # Without the period, later or earlier advisories share its words and come first.
    plain = await answer_question(ctx, question=QUESTION, language="en", answer_language="en", scope=None)
    assert _keys(plain.sources)[0] != JULY

    period = question_period(QUESTION, TODAY)
    embedder = ctx.embedders.get(ctx.settings.embedding_model)
    embedded: list[Sequence[str]] = []
    embed = embedder.embed

    async def counted(texts: Sequence[str], *, deadline: float | None = None) -> np.ndarray:
        embedded.append(texts)
        return await embed(texts, deadline=deadline)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedder, "embed", counted)
        outcome = await InProcessExecutor(ctx.pool, ctx).ask(
            AskCall(question=QUESTION, language="en", answer_language="en", prefer_period=period))
    assert _keys(outcome.sources)[0] == JULY
    assert embedded == [[QUESTION]]  # the question is embedded once for both lists
    assert len(outcome.sources) > 1  # preferred, not required: the other advisories still answer

    # A period no article is from changes nothing.
    empty = PublishedPeriod(date_from=date(2019, 3, 1), date_to=date(2019, 3, 31))
    same = await answer_question(ctx, question=QUESTION, language="en", answer_language="en", scope=None,
                                 prefer_period=empty)
    assert _keys(same.sources) == _keys(plain.sources)


@pytest.mark.parametrize("store", ["edge"], indirect=True)
async def test_a_broad_period_is_applied_to_the_candidates_without_an_id_list(ctx: RagContext) -> None:
    july = [r.id for r in RECORDS if r.translation_key == JULY]
    everything = [r.id for r in RECORDS]
    # At most `limit` ids, and only those `among` the given ones.
    assert len(await published_between(ctx.pool, None, None, "en", limit=2)) == 2
    assert await published_between(ctx.pool, date(2024, 7, 1), date(2024, 7, 31), "en", among=everything) == july
    assert await published_between(ctx.pool, date(2024, 7, 1), date(2024, 7, 31), "en",
                                   among=[i for i in everything if i not in july]) == []

    scopes: list[object] = []
    lexical_scopes: list[object] = []
    search = ctx.store.search

    def recorded(*args: object, **kwargs: object) -> object:
        scopes.append(kwargs.get("scope"))
        return search(*args, **kwargs)  # type: ignore[arg-type]

    lexical_search = hybrid.chunks_db.lexical_search

    async def lexical_recorded(*args: object, **kwargs: object) -> object:
        lexical_scopes.append(kwargs.get("scope"))
        return await lexical_search(*args, **kwargs)  # type: ignore[arg-type]

    period = question_period(QUESTION, TODAY)
    with pytest.MonkeyPatch.context() as patch:
        # Every period counts as broad here: the corpus' periods hold a few articles.
        patch.setattr(hybrid, "MAX_PERIOD_IDS", 0)
        patch.setattr(ctx.store, "search", recorded)
        patch.setattr(hybrid.chunks_db, "lexical_search", lexical_recorded)
        outcome = await InProcessExecutor(ctx.pool, ctx).ask(
            AskCall(question=QUESTION, language="en", answer_language="en", prefer_period=period))
    assert _keys(outcome.sources)[0] == JULY  # preferred as with the id list
    assert len(outcome.sources) > 1
    assert scopes and lexical_scopes and set(map(repr, scopes + lexical_scopes)) == {"None"}  # no id list reached a store
