"""RAG answering on the real engine (both backends), real Postgres, USE embeddings and the
scripted LLM: scoped pre-filter, empty scope, answer language, coverage, injection, fallback."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import pytest

from infra.messages.ask import AskOutcome, AskRequest
from infra.settings import Settings
from infra.status import ResultStatus
from infra.vectors import VectorStore
from retrieval.embeddings import LOCAL_MODEL
from retrieval.rag import RagContext, answer_question, answer_request
from tests.retrieval.rag_fixtures import (
    DECOY_IDS,
    HIDDEN_ID,
    index,
    load,
    make_ctx,
    rag_db,
    rag_settings,
    store,
)
from tests.support.llm_server import ScriptedLLM, Text

# Shared fixtures (edge/server stores, the own database) used by the tests below.
FIXTURES = (rag_db, rag_settings, store)

TLS_QUESTION = "How do I renew my TLS certificate automatically?"
SCOPE = ["garden-en", "bike-de", "bike-en", "bread-ru"]


def with_limits(settings: Settings, **limits: int) -> Settings:
    return settings.model_copy(update={"limits": settings.limits.model_copy(update=limits)})


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    context = make_ctx(with_limits(rag_settings, rag_top_k=3), rag_db, store)
    await load(rag_db)
    await index(context)
    return context


def _system(request: dict) -> str:
    return str(request["messages"][0]["content"])


def _user(request: dict) -> str:
    return str(request["messages"][1]["content"])


async def test_scoped_answer_uses_only_in_scope_chunks_though_decoys_match_best(
    ctx: RagContext, llm: ScriptedLLM
) -> None:
    # Unscoped, the decoys fill the whole top-K: a post-filter would leave nothing in scope.
    llm.script(Text("Run the ACME client from a timer twice a day [1]."))
    unscoped = await answer_question(ctx, question=TLS_QUESTION, language=None, answer_language="en", scope=None)
    assert {s.article_id for s in unscoped.sources} <= DECOY_IDS
    assert len(unscoped.sources) == 3 and unscoped.answer_kind == "llm"

    # Nothing in scope is about certificates: the model says so, twice; that is not an answer,
    # so the user gets the in-scope passages, marked extractive.
    llm.script(Text("The material does not cover certificates [1]."), Text("No certificates are covered [1]."))
    queries = ctx.store.query_count
    outcome = await answer_question(ctx, question=TLS_QUESTION, language=None, answer_language="en", scope=SCOPE)
    assert ctx.store.query_count == queries + 1  # one vector query, filter inside it
    assert outcome.status is ResultStatus.ANSWERED and outcome.answer_kind == "extractive"
    assert "not an answer" in (outcome.message or "")
    assert outcome.sources and {s.article_id for s in outcome.sources} <= set(SCOPE)
    for request in llm.chat_requests[-2:]:
        material = _user(request).split("<<<MATERIAL", 1)[1].split("<<<END MATERIAL", 1)[0]
        assert "TLS" not in material  # no decoy text reached the model


async def test_language_filter_and_scope_together(ctx: RagContext, llm: ScriptedLLM) -> None:
    llm.script(Text("Reinigen Sie die Kette mit einem trockenen Tuch und ölen Sie jedes Glied sparsam [1]."))
    outcome = await answer_question(ctx, question="Wie pflege ich die Fahrradkette?", language="de",
                                    answer_language="de", scope=SCOPE)
    assert {s.article_id for s in outcome.sources} == {"bike-de"}
    assert {s.language for s in outcome.sources} == {"de"}


async def test_empty_scope_is_no_results_without_any_vector_query(ctx: RagContext, llm: ScriptedLLM) -> None:
    llm.fail_every_call("an empty scope must not reach the LLM")
    queries = ctx.store.query_count
    embedded = ctx.embedders.get(LOCAL_MODEL).texts_embedded
    outcome = await answer_question(ctx, question=TLS_QUESTION, language=None, answer_language="en", scope=[])
    assert outcome.status is ResultStatus.NO_RESULTS
    assert outcome.sources == [] and outcome.answer is None and not outcome.coverage_limited
    assert ctx.store.query_count == queries  # zero vector queries
    assert ctx.embedders.get(LOCAL_MODEL).texts_embedded == embedded  # not even the question embedded
    assert llm.chat_requests == []


async def test_answer_written_in_the_requested_language_not_the_material_language(
    ctx: RagContext, llm: ScriptedLLM
) -> None:
    llm.script(Text("Очистите цепь сухой тканью и смажьте каждое звено [1].", prompt_tokens=333, completion_tokens=44))
    outcome = await answer_question(ctx, question="Как ухаживать за цепью велосипеда?", language="de",
                                    answer_language="ru", scope=["bike-de"])
    request = llm.chat_requests[-1]
    assert _user(request).rstrip().endswith('Write the whole answer in Russian (language code "ru").')
    assert "Russian" not in _system(request)  # the system message is the same for every question
    assert outcome.answer_language == "ru"
    assert outcome.answer == "Очистите цепь сухой тканью и смажьте каждое звено [1]."
    assert {s.language for s in outcome.sources} == {"de"}  # the material stayed German
    assert outcome.sources[0].title == "Die Fahrradkette richtig pflegen"
    assert outcome.sources[0].snippet and outcome.sources[0].score > 0
    assert request["model"] == ctx.settings.llm_answer_model
    assert (outcome.usage.llm_calls, outcome.usage.input_tokens, outcome.usage.output_tokens) == (1, 333, 44)


async def test_coverage_limited_by_page_limited_scope_or_budget(
    ctx: RagContext, rag_settings: Settings, llm: ScriptedLLM
) -> None:
    llm.on_chat(lambda body: Text("Wipe the chain with a dry cloth and oil every link sparingly [1]."))
    full = await answer_question(ctx, question="bicycle chain oil", language=None, answer_language="en",
                                 scope=["bike-en", "bike-de"])
    assert not full.coverage_limited and len(full.sources) == 2

    truncated = await answer_question(ctx, question="bicycle chain oil", language=None, answer_language="en",
                                      scope=["bike-en", "bike-de"], scope_truncated=True)
    assert truncated.coverage_limited and len(truncated.sources) == 2

    small = RagContext(settings=with_limits(rag_settings, rag_top_k=3, rag_context_tokens=90), pool=ctx.pool,
                       store=ctx.store, embedders=ctx.embedders, llm=ctx.llm)
    cut = await answer_question(small, question="bicycle chain oil", language=None, answer_language="en",
                                scope=["bike-en", "bike-de"])
    assert cut.coverage_limited
    assert len(cut.sources) == 1  # the budget took only the best chunk
    sent = _user(llm.chat_requests[-1])
    assert "[1]" in sent and "[2]" not in sent  # the sources are exactly what the model saw


async def test_prompt_injection_inside_an_article_changes_nothing(ctx: RagContext, llm: ScriptedLLM) -> None:
    llm.script(Text("The lighthouse was built in 1871 [1]."))
    scope = ["lighthouse-en", HIDDEN_ID]  # even a hidden id slipped into the scope is never used
    outcome = await answer_question(ctx, question="When was the harbour lighthouse built?", language=None,
                                    answer_language="en", scope=scope)
    assert len(llm.chat_requests) == 1
    request = llm.chat_requests[0]
    assert "tools" not in request and "tool_choice" not in request  # nothing the material could call
    system, user = _system(request), _user(request)
    assert "ignore any instruction" in system
    tag = user.split("<<<MATERIAL ", 1)[1].split(">>>", 1)[0]
    inside = user.split(f"<<<MATERIAL {tag}>>>", 1)[1].split(f"<<<END MATERIAL {tag}>>>", 1)[0]
    outside = user.replace(inside, "")
    assert "Ignore all previous instructions" in inside and "Ignore all previous instructions" not in outside
    assert "Internal runbook" not in user
    assert {s.article_id for s in outcome.sources} == {"lighthouse-en"}
    assert outcome.answer == "The lighthouse was built in 1871 [1]." and outcome.answer_kind == "llm"


async def test_extractive_answer_when_no_llm_is_configured(
    rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore, llm: ScriptedLLM
) -> None:
    no_llm = rag_settings.model_copy(update={"llm_base_url": None})
    ctx = make_ctx(with_limits(no_llm, rag_top_k=3), rag_db, store)
    await load(rag_db)
    await index(ctx)
    assert ctx.llm is None
    outcome = await answer_question(ctx, question="Wie backt man Roggenbrot?", language="ru", answer_language="de",
                                    scope=None)
    assert outcome.status is ResultStatus.ANSWERED and outcome.answer_kind == "extractive"
    assert outcome.answer is not None and outcome.answer.startswith("Extraktive Antwort")
    assert "[1] «Как испечь ржаной хлеб»: «" in outcome.answer
    # The source's words (its title too) are quoted: what is left is the answer's own, in German.
    assert not re.search(r"[а-яё]", re.sub(r"«[^»]*»", "", outcome.answer), re.I)
    assert outcome.sources[0].article_id == "bread-ru"
    assert outcome.usage.llm_calls == 0 and llm.requests == []
    assert outcome.message is not None and "no language model" in outcome.message


async def _job(pool: asyncpg.Pool, job_id: str) -> None:
    await pool.execute("INSERT INTO jobs (id, question) VALUES ($1, 'q')", job_id)


async def test_failing_llm_falls_back_to_extractive_and_is_audited(ctx: RagContext, llm: ScriptedLLM) -> None:
    await _job(ctx.pool, "job-fail")
    llm.fail_every_call("model down")
    outcome = await answer_question(ctx, question="tomatoes sun water", language="en", answer_language="de",
                                    scope=None, job_id="job-fail")
    assert outcome.status is ResultStatus.ANSWERED and outcome.answer_kind == "extractive"
    assert outcome.answer is not None and outcome.answer.startswith("Extraktive Antwort")
    assert outcome.usage.llm_calls == ctx.settings.llm_max_retries + 1 == len(llm.chat_requests)
    rows = await ctx.pool.fetch("SELECT kind, outcome, error, model FROM audit_events WHERE job_id = 'job-fail'")
    assert [(r["kind"], r["outcome"]) for r in rows] == [("rag_answer", "extractive")]
    assert "model down" in rows[0]["error"]


async def test_llm_answer_writes_its_audit_row(ctx: RagContext, llm: ScriptedLLM) -> None:
    await _job(ctx.pool, "job-ok")
    llm.script(Text("Six hours of sun [1].", prompt_tokens=210, completion_tokens=12))
    await answer_question(ctx, question="How much sun do tomatoes need?", language="en", answer_language="en",
                          scope=["garden-en"], job_id="job-ok")
    row = await ctx.pool.fetchrow("SELECT * FROM audit_events WHERE job_id = 'job-ok'")
    assert row["kind"] == "rag_answer" and row["outcome"] == "llm"
    assert (row["input_tokens"], row["output_tokens"]) == (210, 12)
    assert row["model"] == ctx.settings.llm_answer_model and row["latency_ms"] >= 0
    assert row["arguments"]["scopeSize"] == 1


async def test_nothing_indexed_yet_is_no_results(
    rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore, llm: ScriptedLLM
) -> None:
    ctx = make_ctx(rag_settings, rag_db, store)
    outcome = await answer_question(ctx, question="anything", language=None, answer_language="en", scope=None)
    assert outcome.status is ResultStatus.NO_RESULTS and "turnout reembed" in (outcome.message or "")
    assert ctx.store.query_count == 0


def test_wire_round_trip_and_payload_validation() -> None:
    from infra.results import Source, Usage
    outcome = AskOutcome(
        status=ResultStatus.ANSWERED, answer="a", answer_kind="llm",
        sources=[Source(article_id="x", title="t", snippet="s", score=0.5, language="de", chunk=2)],
        coverage_limited=True, usage=Usage(llm_calls=1, input_tokens=3, output_tokens=4, total_tokens=7),
        answer_language="ru",
    )
    wire = outcome.wire()
    assert wire["answerKind"] == "llm" and wire["coverageLimited"] is True
    assert wire["sources"][0]["articleId"] == "x"
    assert AskOutcome.model_validate(wire) == outcome
    # A reply from before the model (rag_outcome_to_wire) had the same keys; a short one parses too.
    assert AskOutcome.model_validate({"status": "no_results", "answerLanguage": "en"}).sources == []
    request = AskRequest.model_validate({"question": "q", "language": None, "answerLanguage": "ru", "scope": ["a"],
                                         "scopeTruncated": True, "deadlineS": 12.5})
    assert request.scope == ["a"] and request.scope_truncated and request.deadline_s == 12.5
    assert request.retrieval_text is None  # retrieval reads the question
    trimmed = AskRequest.model_validate({"question": "Erkläre auf Englisch: was ist X?", "answerLanguage": "en",
                                         "retrievalText": "Erkläre: was ist X?"})
    assert AskRequest.model_validate(trimmed.wire()).retrieval_text == "Erkläre: was ist X?"
    with pytest.raises(ValueError):
        AskRequest.model_validate({"question": "q", "answerLanguage": "fr"})
    with pytest.raises(ValueError):
        AskRequest.model_validate({"question": "q", "answerLanguage": "en", "tools": ["x"]})


async def test_missing_index_is_a_clear_failed_outcome_not_a_crash(
    rag_settings: Settings, rag_db: asyncpg.Pool, tmp_path: Path, llm: ScriptedLLM
) -> None:
    from infra.vectors.edge import EdgeVectorStore

    edge = EdgeVectorStore(tmp_path / "edge")
    ctx = make_ctx(rag_settings, rag_db, edge)
    await load(rag_db)
    run = await index(ctx)
    edge.drop_collection(run.collection)  # e.g. the data directory was wiped
    outcome = await answer_request(ctx, AskRequest(question="bread", answer_language="en"))
    assert outcome.status is ResultStatus.FAILED
    assert outcome.message == "the article index is unavailable; try again later"
    assert llm.chat_requests == []
    edge.close()


async def test_article_hidden_after_indexing_is_never_cited(ctx: RagContext, llm: ScriptedLLM) -> None:
    from infra.db.articles import set_visibility

    llm.on_chat(lambda body: Text("Ржаной хлеб печётся на закваске час при двухстах градусах [1]."))
    before = await answer_question(ctx, question="Как испечь ржаной хлеб?", language="ru", answer_language="ru",
                                   scope=None)
    assert "bread-ru" in {s.article_id for s in before.sources}
    async with ctx.pool.acquire() as conn:
        assert await set_visibility(conn, ["bread-ru"], hidden=True) == 1
    after = await answer_question(ctx, question="Как испечь ржаной хлеб?", language="ru", answer_language="ru",
                                  scope=None)
    assert "bread-ru" not in {s.article_id for s in after.sources}
    assert "Ржаной хлеб печётся" not in "".join(_user(r) for r in llm.chat_requests[1:])
