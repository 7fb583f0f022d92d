"""Hybrid retrieval for RAG: the Qdrant vector query and PostgreSQL full-text search over the
same version's chunks, fused by reciprocal rank fusion (RRF).

Both lists are restricted by the same language and scope (localization ids) *inside* their own
query, before their own top-K, and both leave out localizations hidden or unpublished since
indexing (Postgres joins `published AND NOT hidden`; the vector query gets them as an exclusion
filter). So the fused list can only hold chunks both sides were allowed to return: a scope never
widens, whatever the text matches elsewhere.

RRF: score(chunk) = Σ weight_list / (rrf_k + rank_in_list), ranks from 1. It needs no score
calibration between a cosine similarity and a ts_rank, which are not comparable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TypeAlias

import asyncpg

from infra.db import rag_chunks as chunks_db
from infra.db.collections import CollectionVersion
from infra.db.rag_sources import published_between
from infra.messages.ask import PublishedPeriod
from infra.settings import RetrievalMode, Settings
from infra.vectors import Hit, StoredChunk, VectorStore
from retrieval.embeddings import EmbedderRegistry
from retrieval.everyday_words import naming_words
from retrieval.rerank import Reranker

# A period an ask prefers is passed to both stores as the id list of its articles when it holds at most
# this many; a broader one (a wide period of a large collection) is applied to the whole collection's
# candidates instead, BROAD_PERIOD_CANDIDATES times the usual number a list, so no query carries an
# unbounded id list (a Qdrant filter of 100k ids, or a Postgres array as large, per question).
MAX_PERIOD_IDS = 2_000
BROAD_PERIOD_CANDIDATES = 10

# The text retrieval reads for a question, None: the question itself. The router's reader gives it
# (the question without its language cues); the evaluations take it as a parameter, since
# retrieval may not import the router.
RetrievalText: TypeAlias = Callable[[str], str | None]
# The period a question names, read on a given day (`router.question_reading.question_period`).
PeriodOf: TypeAlias = Callable[[str, date], PublishedPeriod | None]


@dataclass(frozen=True)
class RetrievalConfig:
    mode: RetrievalMode = RetrievalMode.HYBRID
    top_k: int = 8
    candidates: int = 30  # per list, before fusion
    rrf_k: int = 10
    vector_weight: float = 1.0
    lexical_weight: float = 2.0  # when the lexical list's best score is at least `lexical_strong_score`
    lexical_strong_score: float = 1.5
    lexical_weak_weight: float = 1.0  # otherwise
    rerank: bool = False  # rerank the fused list (needs a reranker passed to `retrieve`)
    rerank_candidates: int = 20

    @classmethod
    def from_settings(
        cls, settings: Settings, *, mode: RetrievalMode | None = None, rerank: bool | None = None
    ) -> RetrievalConfig:
        return cls(
            mode=mode or settings.rag_retrieval,
            top_k=settings.limits.rag_top_k,
            candidates=max(settings.rag_candidates, settings.limits.rag_top_k),
            rrf_k=settings.rag_rrf_k,
            vector_weight=settings.rag_vector_weight,
            lexical_weight=settings.rag_lexical_weight,
            lexical_strong_score=settings.rag_lexical_strong_score,
            lexical_weak_weight=settings.rag_lexical_weak_weight,
            rerank=bool(settings.rag_rerank_url) if rerank is None else rerank,
            rerank_candidates=max(settings.rag_rerank_candidates, settings.limits.rag_top_k),
        )


@dataclass
class Retrieved:
    hits: list[Hit]
    vector_hits: list[Hit] = field(default_factory=list)
    lexical_hits: list[Hit] = field(default_factory=list)
    latency_ms: float = 0.0


def lexical_to_hit(hit: chunks_db.LexicalHit) -> Hit:
    c = hit.chunk
    return Hit(hit.score, StoredChunk(
        id=c.point_id, localization_id=c.localization_id, article_id=c.article_id, language=c.language,
        position=c.position, text=c.text, content_hash=c.content_hash,
    ))


def fuse(ranked: Sequence[tuple[float, Sequence[Hit]]], *, rrf_k: int, limit: int) -> list[Hit]:
    """Reciprocal rank fusion of ranked lists (weight, hits); ties keep first-seen order."""
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for weight, hits in ranked:
        for rank, hit in enumerate(hits, start=1):
            key = hit.chunk.id
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            first.setdefault(key, hit)
    order = sorted(scores, key=lambda k: -scores[k])  # stable: first-seen order among equals
    return [Hit(scores[k], first[k].chunk) for k in order[:limit]]


def lexical_weight(config: RetrievalConfig, lexical_hits: Sequence[Hit]) -> float:
    """The keyword list's weight in fusion: full when its best chunk matches rare words strongly
    (the question names something), else weak. A question in everyday words matches common ones
    weakly, and then the keyword list's order is noise that full weight would put above the vectors
    (user-phrased questions: hybrid MRR below vector-only at a fixed weight, docs/rag.md round 13)."""
    strong = bool(lexical_hits) and lexical_hits[0].score >= config.lexical_strong_score
    return config.lexical_weight if strong else config.lexical_weak_weight


@dataclass(frozen=True)
class _VectorQuery:
    """What the vector list needs besides its scope: read once per question, shared by the lists
    `retrieve_preferring_period` runs."""

    vector: Sequence[float]
    excluded: list[str]  # localizations hidden or unpublished since indexing

    @classmethod
    async def read(
        cls, pool: asyncpg.Pool, embedders: EmbedderRegistry, version: CollectionVersion, question: str,
        deadline: float | None,
    ) -> _VectorQuery:
        vectors, excluded = await asyncio.gather(
            embedders.get(version.model).embed([question], deadline=deadline),
            chunks_db.invisible_indexed(pool, version.name),
        )
        return cls(vectors[0], excluded)


async def retrieve(
    pool: asyncpg.Pool,
    store: VectorStore,
    embedders: EmbedderRegistry,
    version: CollectionVersion,
    question: str,
    *,
    language: str | Sequence[str] | None,  # a code, several codes, or None (every language)
    scope: Sequence[str] | None,
    config: RetrievalConfig,
    deadline: float | None = None,
    reranker: Reranker | None = None,
) -> Retrieved:
    """The chunks to answer from, best first (at most ``config.top_k``). An empty scope returns
    nothing and queries nothing."""
    return await _retrieve(pool, store, embedders, version, question, language=language, scope=scope,
                           config=config, deadline=deadline, reranker=reranker, vector_query=None)


async def _retrieve(
    pool: asyncpg.Pool,
    store: VectorStore,
    embedders: EmbedderRegistry,
    version: CollectionVersion,
    question: str,
    *,
    language: str | Sequence[str] | None,
    scope: Sequence[str] | None,
    config: RetrievalConfig,
    deadline: float | None,
    reranker: Reranker | None,
    vector_query: _VectorQuery | None,  # None: read here, when the mode has a vector list
    keep: int | None = None,  # fused chunks kept; None: what ``reranker`` reorders, else top_k
) -> Retrieved:
    started = time.monotonic()
    keep = _kept(config, reranker) if keep is None else keep
    if scope is not None and not scope:
        return Retrieved([])
    use_vector = config.mode is not RetrievalMode.LEXICAL
    use_lexical = config.mode is not RetrievalMode.VECTOR
    limit = _list_length(config)

    async def vector_list() -> list[Hit]:
        if not use_vector:
            return []
        query = vector_query or await _VectorQuery.read(pool, embedders, version, question, deadline)
        return await asyncio.to_thread(
            store.search, version.name, query.vector, limit=limit, language=language, scope=scope,
            exclude=query.excluded,
        )

    async def lexical_list() -> list[Hit]:
        if not use_lexical:
            return []
        found = await chunks_db.lexical_search(  # the words that name something (retrieval/everyday_words.py)
            pool, version.name, naming_words(question), limit=limit, language=language, scope=scope
        )
        return [lexical_to_hit(h) for h in found]

    vector_hits, lexical_hits = await asyncio.gather(vector_list(), lexical_list())
    hits = await _reranked(question, _fused(config, vector_hits, lexical_hits, keep), config=config,
                           reranker=reranker, deadline=deadline)
    return Retrieved(hits, vector_hits, lexical_hits, round((time.monotonic() - started) * 1000, 2))


def _list_length(config: RetrievalConfig) -> int:
    """How many chunks each list fetches: the candidates when two lists are fused, else top_k."""
    return config.candidates if config.mode is RetrievalMode.HYBRID else config.top_k


def _fused(config: RetrievalConfig, vector_hits: list[Hit], lexical_hits: list[Hit], keep: int) -> list[Hit]:
    """The mode's list, or the two fused (RRF): its first ``keep`` chunks."""
    if config.mode is RetrievalMode.VECTOR:
        return vector_hits[:keep]
    if config.mode is RetrievalMode.LEXICAL:
        return lexical_hits[:keep]
    return fuse([(config.vector_weight, vector_hits), (lexical_weight(config, lexical_hits), lexical_hits)],
                rrf_k=config.rrf_k, limit=keep)


def _kept(config: RetrievalConfig, reranker: Reranker | None) -> int:
    """How many fused chunks go on: the reranker's candidates when one will reorder them, else top_k."""
    return config.rerank_candidates if config.rerank and reranker is not None else config.top_k


async def _reranked(
    question: str, hits: list[Hit], *, config: RetrievalConfig, reranker: Reranker | None, deadline: float | None,
) -> list[Hit]:
    if config.rerank and reranker is not None:
        # After fusion, on the fused (scoped, visible) candidates only: it reorders, never adds.
        return await reranker.rerank(question, hits, limit=config.top_k, deadline=deadline)
    return hits  # as fused: top_k, or a preferring ask's unranked candidates (`keep`) for its one rerank


async def retrieve_preferring_period(
    pool: asyncpg.Pool,
    store: VectorStore,
    embedders: EmbedderRegistry,
    version: CollectionVersion,
    question: str,
    *,
    period: PublishedPeriod | None,
    language: str | Sequence[str] | None,
    scope: Sequence[str] | None,
    config: RetrievalConfig,
    deadline: float | None = None,
    reranker: Reranker | None = None,
) -> Retrieved:
    """``retrieve``; a question over the whole collection (no ``scope``) that names a ``period`` prefers
    that period's articles: retrieval over them and over every article, fused (RRF, equal weights, the
    period's list first). A chunk of the period counts in both lists, so it rises; a chunk outside it
    that both rank high stays; a tie (each list's best chunk) goes to the period named. A period of more
    than ``MAX_PERIOD_IDS`` articles is not passed to the stores as an id list: its list is the whole
    collection's deeper candidates that are of the period.

    A question like "which versions did the CGI DoS of autumn 2006 affect?" asked over every article
    found its article in none of its passages: later advisories share its words. On user-phrased
    questions (the fourth answer set, 9 of its 25 asks naming a period) the answering article reached the
    passages for 30 cases instead of 25, with 53 of 78 key facts instead of 47 (docs/rag.md, round 16). On a
    set of 30 asks naming a period, written blind after this was built and not tuned on: 21 of 27 instead
    of 12, 57 of 82 facts instead of 32, and the model's recall 46.3% instead of 26.8% (round 17)."""
    if scope is not None or period is None:
        return await retrieve(pool, store, embedders, version, question, language=language, scope=scope,
                              config=config, deadline=deadline, reranker=reranker)
    preferred_ids = await published_between(pool, period.date_from, period.date_to, language,
                                            limit=MAX_PERIOD_IDS + 1)
    vector_query = None  # the question embedded once for both lists
    if preferred_ids and config.mode is not RetrievalMode.LEXICAL:
        vector_query = await _VectorQuery.read(pool, embedders, version, question, deadline)

    if not preferred_ids:
        return await _retrieve(pool, store, embedders, version, question, language=language, scope=None,
                               config=config, deadline=deadline, reranker=reranker, vector_query=vector_query)
    keep = _kept(config, reranker)

    def unranked(ids: Sequence[str] | None, over: RetrievalConfig, kept: int) -> Awaitable[Retrieved]:
        # Each list fused only: a reranker reorders the union once, after the two are fused.
        return _retrieve(pool, store, embedders, version, question, language=language, scope=ids, config=over,
                         deadline=deadline, reranker=None, vector_query=vector_query, keep=kept)

    if len(preferred_ids) <= MAX_PERIOD_IDS:
        preferred, whole = await asyncio.gather(unranked(preferred_ids, config, keep), unranked(None, config, keep))
        preferred_hits, latency_ms = preferred.hits, max(whole.latency_ms, preferred.latency_ms)
    else:  # a broad period: the whole collection's deeper candidates, those of the period kept in their order
        deep = config.candidates * BROAD_PERIOD_CANDIDATES  # top_k too: a one-list mode's list is top_k long
        candidates = await unranked(None, dataclasses.replace(config, candidates=deep, top_k=deep), deep)
        # The whole collection's own list is the head of the same two lists: the same queries, fewer rows.
        length = _list_length(config)
        vector_head, lexical_head = candidates.vector_hits[:length], candidates.lexical_hits[:length]
        whole = Retrieved(_fused(config, vector_head, lexical_head, keep), vector_head, lexical_head)
        of_period = set(await published_between(pool, period.date_from, period.date_to, language,
                                                among=list({h.chunk.localization_id for h in candidates.hits})))
        preferred_hits = [h for h in candidates.hits if h.chunk.localization_id in of_period][:keep]
        latency_ms = candidates.latency_ms
    hits = fuse([(1.0, preferred_hits), (1.0, whole.hits)], rrf_k=config.rrf_k, limit=keep)
    hits = await _reranked(question, hits, config=config, reranker=reranker, deadline=deadline)
    return Retrieved(hits, whole.vector_hits, whole.lexical_hits, latency_ms)
