"""RAG answering (SPEC §7): AskArticles and the second half of SearchAndAskArticles.

1. An empty scope answers ``no_results`` at once: no embedding, no vector query.
2. The question is embedded with the model of the version that serves reads (Edge: the
   ``collection_versions.active`` row, re-read every question; server: the Qdrant alias).
3. Hybrid retrieval (retrieval/hybrid.py): one vector query and one full-text query over the
   version's chunks, each with ``language`` and the scope (localization ids) inside the query
   (pre-filter before top-K, never top-K then filter), fused by reciprocal rank fusion.
4. The best chunks, at most two an article and each cut to its sentences nearest the question,
   that fit ``TURNOUT_RAG_ANSWER_CONTEXT_TOKENS`` go to the answer model, numbered per article
   (retrieval/answer_prompt.py), fenced as data with a per-request random fence and an
   instruction to ignore instructions inside; no tools are offered, so the material cannot
   make the system do anything.
5. The reply is tidied (retrieval/answer_tidy.py: a sentence said twice goes, an end the cap cut is
   marked) and checked (retrieval/answer_check.py): text that is not an answer is asked again once,
   more strictly; citations naming no source are removed.
6. No LLM configured, the call fails through its retries (or the deadline is too near), or
   the reply is still not an answer: an extractive answer (the best passages, quoted with
   citations, marked as such).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
import openai

from infra.budgets import BudgetExceeded, SpendLedger
from infra.counters import ANSWER_CHECKS, ANSWER_OUTCOMES, bump
from infra.db.audit import AuditEvent, insert_audit_events
from infra.db.collections import CollectionVersion, active_version, get_version
from infra.db.rag_sources import visible_sources
from infra.llm import create_llm_client
from infra.messages.ask import AskOutcome, AskRequest, PublishedPeriod
from infra.results import Source, Usage
from infra.settings import Settings
from infra.status import ResultStatus
from infra.vectors import VectorStore, VectorStoreError, process_vector_store
from retrieval.answer_check import AnswerCheck, check_answer
from retrieval.answer_model import ModelCall, SpendScope, call_answer_model
from retrieval.answer_prompt import (
    LANGUAGE_NAMES,
    ArticlePassages,
    Reminder,
    Selection,
    build_messages,
    select_passages,
)
from retrieval.answer_stream import AnswerStream
from retrieval.answer_tidy import tidy_answer
from retrieval.citations import ground_citations, repair_citations
from retrieval.embeddings import EmbedderRegistry, EmbeddingError
from retrieval.hybrid import RetrievalConfig, retrieve_preferring_period
from retrieval.rerank import Reranker

log = logging.getLogger("turnout.rag")

EXTRACTIVE_PASSAGES = 3
SNIPPET_CHARS = 300
PASSAGE_CHARS = 420
MIN_LLM_TIME_S = 1.0  # less time than this before the deadline: answer extractively at once
# The answer call stops at least this long (and at most half the time left) before the deadline,
# so the extractive answer still arrives in time, also inside the router fallback's short reserve.
EXTRACTIVE_RESERVE_S = 1.5

# The extractive answer's first line, by why no model answer was used: "unavailable" (no model,
# no time, the call failed) or "non_answer" (the model replied twice with something not an answer).
_EXTRACTIVE_HEADER = {
    "unavailable": {
        "en": "Extractive answer (no language model was available): the most relevant passages, quoted from "
              "the sources as written.",
        "ru": "Извлечённый ответ (языковая модель недоступна): наиболее подходящие фрагменты, процитированные "
              "из источников без изменений.",
        "de": "Extraktive Antwort (kein Sprachmodell verfügbar): die passendsten Abschnitte, unverändert aus den "
              "Quellen zitiert.",
    },
    "non_answer": {
        "en": "Extractive answer (the language model gave no usable answer): the most relevant passages, quoted "
              "from the sources as written.",
        "ru": "Извлечённый ответ (языковая модель не дала пригодного ответа): наиболее подходящие фрагменты, "
              "процитированные из источников без изменений.",
        "de": "Extraktive Antwort (das Sprachmodell gab keine brauchbare Antwort): die passendsten Abschnitte, "
              "unverändert aus den Quellen zitiert.",
    },
}


@dataclass
class RagContext:
    """What answering (and re-embedding) needs in one worker thread."""

    settings: Settings
    pool: asyncpg.Pool
    store: VectorStore
    embedders: EmbedderRegistry
    llm: openai.AsyncOpenAI | None  # None: no LLM configured → extractive answers
    reranker: Reranker | None = None  # None: no reranking (TURNOUT_RAG_RERANK_URL unset)
    spend: SpendLedger | None = None  # the per-key budgets a job's answer call is held from (None: not accounted)

    @classmethod
    def for_settings(cls, settings: Settings, pool: asyncpg.Pool, *, spend: SpendLedger | None = None) -> RagContext:
        """The production wiring: this process's vector store, the embedders, the LLM client when
        one is configured (None: extractive answers)."""
        return cls(
            settings=settings,
            pool=pool,
            store=process_vector_store(settings),
            embedders=EmbedderRegistry(settings),
            llm=create_llm_client(settings) if settings.llm_configured else None,
            reranker=Reranker.from_settings(settings),
            spend=spend,
        )


async def resolve_read_version(ctx: RagContext) -> CollectionVersion | None:
    """The version that serves reads now. Server: the alias is the switch; Edge: Postgres."""
    if ctx.store.supports_aliases:
        name = await asyncio.to_thread(ctx.store.resolve_alias, ctx.settings.qdrant_collection)
        if name is not None:
            version = await get_version(ctx.pool, name)
            if version is not None:
                return version
    return await active_version(ctx.pool)


async def answer_question(
    ctx: RagContext,
    *,
    question: str,
    language: str | Sequence[str] | None,
    answer_language: str,
    scope: Sequence[str] | None,
    scope_truncated: bool = False,
    deadline: float | None = None,
    job_id: str | None = None,
    stream: AnswerStream | None = None,
    retrieval_text: str | None = None,
    prefer_period: PublishedPeriod | None = None,
) -> AskOutcome:
    """Retrieve, select, answer (``stream``: where the answer's deltas go; by default the job's
    events when there is a ``job_id``). ``retrieval_text`` is what retrieval and the passages'
    cut read instead of the question (the router's: the question without its language cues,
    `router.question_reading.retrieval_text`); the model always reads the question.
    ``prefer_period``: the period the question names, when it asks over the whole collection
    (no ``scope``): its articles are preferred, not required (`retrieve_preferring_period`)."""
    if answer_language not in LANGUAGE_NAMES:
        raise ValueError(f"answer_language must be one of {sorted(LANGUAGE_NAMES)}, not {answer_language!r}")
    if scope is not None and not scope:
        return _no_results(answer_language, "the search found no articles to answer from")
    scope_ids = list(dict.fromkeys(scope)) if scope is not None else None

    version = await resolve_read_version(ctx)
    if version is None:
        return _no_results(answer_language, "no articles are indexed yet (run `turnout reembed`)")
    query = retrieval_text or question
    retrieved = await retrieve_preferring_period(
        ctx.pool, ctx.store, ctx.embedders, version, query, period=prefer_period, language=language, scope=scope_ids,
        config=RetrievalConfig.from_settings(ctx.settings), deadline=deadline, reranker=ctx.reranker,
    )
    hits = retrieved.hits
    sources = await visible_sources(ctx.pool, [h.chunk.localization_id for h in hits])
    hits = [h for h in hits if h.chunk.localization_id in sources]
    if not hits:
        return _no_results(answer_language, "no article passage matches the question")

    budget = min(ctx.settings.rag_answer_context_tokens, ctx.settings.limits.rag_context_tokens)
    selection = select_passages(hits, sources, budget, query)
    stream = stream if stream is not None else AnswerStream(ctx.pool, job_id) if job_id is not None else None
    if stream is not None:
        await stream.start()
    return await _answer_from(ctx, question, answer_language, selection, scope_truncated or selection.cut,
                              deadline, stream, audit=_AuditNote(job_id, language, scope_ids))


@dataclass(frozen=True)
class _AuditNote:
    job_id: str | None
    language: str | Sequence[str] | None
    scope: list[str] | None


async def _answer_from(
    ctx: RagContext, question: str, answer_language: str, selection: Selection, coverage_limited: bool,
    deadline: float | None, stream: AnswerStream | None, *, audit: _AuditNote,
) -> AskOutcome:
    """The model's checked answer from the selected passages, else the extractive one."""
    def extractive(usage: Usage, outcome: str, reason: str) -> AskOutcome:
        bump(ANSWER_OUTCOMES, outcome=outcome)
        why = "non_answer" if outcome == "extractive_non_answer" else "unavailable"
        return _extractive(selection, answer_language, coverage_limited, usage, reason, why=why)

    if ctx.llm is None:
        return await _streamed(stream, extractive(Usage(), "extractive_no_llm", "no language model is configured"))
    if deadline is not None and deadline - time.monotonic() < MIN_LLM_TIME_S + EXTRACTIVE_RESERVE_S:
        return await _streamed(stream, extractive(Usage(), "extractive_no_time", "no time left for the language model"))

    llm_deadline = None
    if deadline is not None:
        llm_deadline = deadline - max(EXTRACTIVE_RESERVE_S, (deadline - time.monotonic()) / 2)
    spend = SpendScope(ctx.spend, audit.job_id) if ctx.spend is not None and audit.job_id is not None else None
    call, check, attempts = await _checked_answer(ctx, question, answer_language, selection, llm_deadline, stream,
                                                  spend)
    if audit.job_id is not None:
        await _audit(ctx, audit.job_id, call, check, language=audit.language, answer_language=answer_language,
                     scope=audit.scope)
    if call.answer is None:
        if check is not None:
            log.warning("the answer model's reply is not an answer (%s), answering extractively", check.verdict)
            return await _streamed(stream, extractive(
                call.usage, "extractive_non_answer", f"the language model's reply was not an answer ({check.verdict})"))
        log.warning("answer model failed, answering extractively: %s", call.error)
        return await _streamed(stream, extractive(call.usage, "extractive_failed", "the language model failed"))
    bump(ANSWER_OUTCOMES, outcome="llm" if attempts == 1 else "llm_on_retry")
    return AskOutcome(
        status=ResultStatus.ANSWERED,
        answer=call.answer,
        answer_kind="llm",
        sources=[_source(a) for a in selection.articles],
        coverage_limited=coverage_limited,
        usage=call.usage,
        answer_language=answer_language,
    )


async def _checked_answer(
    ctx: RagContext, question: str, answer_language: str, selection: Selection, deadline: float | None,
    stream: AnswerStream | None, spend: SpendScope | None,
) -> tuple[ModelCall, AnswerCheck | None, int]:
    """Ask; a reply that is not an answer is asked again once with a stricter instruction.
    Returns the call (``answer`` None: failed or not an answer), the last check, the attempts."""
    assert ctx.llm is not None
    usage = Usage()
    entries = len(selection.articles)
    check: AnswerCheck | None = None
    call: ModelCall | None = None
    for attempt in (1, 2):
        if attempt > 1 and deadline is not None and deadline - time.monotonic() < MIN_LLM_TIME_S:
            break  # no time for the stricter ask: the extractive answer follows
        reminder: Reminder | None = None
        if check is not None:  # the second ask reminds of what the first reply missed
            reminder = "language" if check.verdict == "wrong_language" else "strict"
        messages = build_messages(question, answer_language, selection, reminder=reminder)
        call = await call_answer_model(ctx.llm, ctx.settings, messages, deadline=deadline, stream=stream, usage=usage,
                                       spend=spend)
        if call.answer is None:
            return call, None, attempt
        tidied = tidy_answer(call.answer, cut=call.cut)
        repaired = ground_citations(repair_citations(tidied, entries), selection.source_texts)
        check = check_answer(repaired, question, selection.texts, entries, answer_language,
                             {a.source.language for a in selection.articles})
        bump(ANSWER_CHECKS, attempt="first" if reminder is None else "strict", verdict=check.verdict)
        if check.accepted:
            if stream is not None and repaired != call.answer:
                await stream.reset("the answer was tidied: repeated sentences dropped, a cut end marked, citations "
                                   "repaired to name the sources that hold their sentences")
                await stream.passages(repaired)
            call.answer = repaired
            return call, check, attempt
        log.info("not an answer (%s, %s): %r", check.verdict, check.document(), call.answer[:200])
    assert call is not None and check is not None
    rejected = ModelCall(None, usage, call.model, call.latency_ms, f"not an answer: {check.verdict}")
    return rejected, check, 2


async def _streamed(stream: AnswerStream | None, outcome: AskOutcome) -> AskOutcome:
    """Stream an extractive answer's passages (after a reset, if model text was streamed)."""
    if stream is not None and outcome.answer is not None:
        await stream.reset("the language model's answer is replaced by an extractive one")
        await stream.passages(outcome.answer)
    return outcome


def _no_results(answer_language: str, message: str) -> AskOutcome:
    return AskOutcome(
        status=ResultStatus.NO_RESULTS, answer=None, answer_kind=None, sources=[], coverage_limited=False,
        usage=Usage(), answer_language=answer_language, message=message,
    )


async def _audit(
    ctx: RagContext, job_id: str, call: ModelCall, check: AnswerCheck | None, *,
    language: str | Sequence[str] | None, answer_language: str, scope: list[str] | None,
) -> None:
    try:
        # The answer LLM call's model, tokens and latency, so ops metrics count RAG tokens too.
        await insert_audit_events(ctx.pool, [AuditEvent(
            "rag_answer", job_id=job_id, model=call.model, input_tokens=call.usage.input_tokens,
            output_tokens=call.usage.output_tokens, latency_ms=call.latency_ms, cost_usd=call.usage.cost_usd,
            outcome="llm" if call.answer is not None else "extractive", error=call.error,
            arguments={"language": language, "answerLanguage": answer_language,
                       "scopeSize": None if scope is None else len(scope), "llmCalls": call.usage.llm_calls,
                       "check": check.document() if check is not None else None},
        )])
    except asyncpg.PostgresError:
        # The answer must not be lost because its audit row could not be written.
        log.exception("could not write the rag_answer audit row for job %s", job_id)


def _snippet(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    sentence_end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if sentence_end >= limit // 2:
        return cut[: sentence_end + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "…"


def _source(article: ArticlePassages) -> Source:
    return Source(
        article_id=article.source.id,
        title=article.source.title,
        snippet=_snippet(article.texts[0], SNIPPET_CHARS),
        score=round(article.score, 4),
        language=article.source.language,  # type: ignore[arg-type]
        chunk=article.hits[0].chunk.position,
        chunks=article.positions,
    )


def _extractive(
    selection: Selection, answer_language: str, coverage_limited: bool, usage: Usage, reason: str, *,
    why: str = "unavailable",
) -> AskOutcome:
    """The best passages of the first articles, quoted as written (numbered like the sources)."""
    quoted = selection.articles[:EXTRACTIVE_PASSAGES]
    lines = [_EXTRACTIVE_HEADER[why][answer_language], ""]
    for a in quoted:
        # The title is quoted too: it is the source's words, often in another language than the answer's.
        lines.append(f"[{a.number}] «{a.source.title}»: «{_snippet(a.texts[0], PASSAGE_CHARS)}»")
    return AskOutcome(
        status=ResultStatus.ANSWERED,
        answer="\n".join(lines),
        answer_kind="extractive",
        sources=[_source(a) for a in quoted],
        coverage_limited=coverage_limited,
        usage=usage,
        answer_language=answer_language,
        message=f"extractive answer: {reason}",
    )


async def answer_request(ctx: RagContext, request: AskRequest, *, deadline: float | None = None) -> AskOutcome:
    """Answer a validated task payload."""
    try:
        return await answer_question(
            ctx, question=request.question, language=request.language, answer_language=request.answer_language,
            scope=request.scope, scope_truncated=request.scope_truncated, deadline=deadline,
            job_id=request.job_id, retrieval_text=request.retrieval_text, prefer_period=request.prefer_period,
        )
    except EmbeddingError as exc:
        log.error("cannot embed the question: %s", exc)
        return _failed(request.answer_language, "the embedding model is unavailable; try again later")
    except VectorStoreError as exc:
        log.error("cannot search the vector store: %s", exc)
        return _failed(request.answer_language, "the article index is unavailable; try again later")
    except BudgetExceeded as exc:  # the job fails with budget_exceeded (router/tool_results.py `answer_result`)
        refused = _failed(request.answer_language, exc.message)
        refused.usage, refused.budget_exceeded = exc.usage or Usage(), exc.details()
        return refused


def _failed(answer_language: str, message: str) -> AskOutcome:
    return AskOutcome(
        status=ResultStatus.FAILED, answer=None, answer_kind=None, sources=[], coverage_limited=False,
        usage=Usage(), answer_language=answer_language, message=message,
    )
