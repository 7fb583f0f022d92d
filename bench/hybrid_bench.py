"""Hybrid RAG retrieval latency at 100k chunks beside vector-only, in the same run (part
`hybrid` of bench/rag_bench.py).

The collection: `n_chunks` chunks whose text cycles through the real corpus's chunks (so the
lexicon has real word frequencies), random unit vectors in Qdrant Edge, the same point ids in
`rag_chunks` (PostgreSQL, a throwaway database). Each question of the shared eval sets is
answered through the production `retrieve()` (USE embeds the question) in `vector` and `hybrid`
mode, interleaved, unscoped and with a 1,000-article scope.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from infra.corpus import ArticleRecord, read_corpus
from infra.db import rag_chunks as chunks_db
from infra.db.articles import upsert_records
from infra.db.collections import create_version
from infra.db.pool import create_pool
from infra.migrate import upgrade
from infra.settings import EmbeddingProvider, RetrievalMode, get_settings
from infra.vectors import ChunkPoint
from infra.vectors.edge import EdgeVectorStore
from retrieval.chunking import CHUNKER_VERSION, chunk_localization, point_id
from retrieval.embeddings import LOCAL_MODEL, EmbedderRegistry
from retrieval.hybrid import RetrievalConfig, retrieve
from retrieval.rag_eval import SETS, load_rag_cases, percentile
from tests.support import services

CHUNKS_PER_ARTICLE = 5
DIM = 512
COLLECTION = "bench_hybrid"


def hybrid_latency(n_chunks: int, queries: int, workdir: Path) -> list[dict[str, Any]]:
    name = f"turnout_bench_hybrid_{secrets.token_hex(4)}"
    services.create_database(name)
    dsn = services.dsn_for(name)
    try:
        upgrade(dsn)
        return asyncio.run(_run(dsn, n_chunks, queries, workdir))
    finally:
        services.drop_database(name)


async def _run(dsn: str, n_chunks: int, queries: int, workdir: Path) -> list[dict[str, Any]]:
    pool = await create_pool(dsn, min_size=1, max_size=4)
    store = EdgeVectorStore(workdir / "hybrid")
    rng = np.random.default_rng(11)
    try:
        started = time.perf_counter()
        articles = await _seed(pool, store, n_chunks, rng)
        print(f"hybrid bench: {n_chunks:,} chunks in Postgres and Edge in {time.perf_counter() - started:.0f}s",
              flush=True)
        return await _measure(pool, store, dsn, n_chunks, articles, queries, rng)
    finally:
        store.close()
        await pool.close()


async def _seed(pool: Any, store: EdgeVectorStore, n_chunks: int, rng: np.random.Generator) -> int:
    """``n_chunks`` chunks of real corpus text with random unit vectors, in both stores; returns the articles."""
    real = [(r.language, r.title, c.text) for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)
            for c in chunk_localization(r.title, r.plain_text(), r.summary)]
    articles = n_chunks // CHUNKS_PER_ARTICLE
    base = datetime(2024, 1, 1, tzinfo=UTC)
    records = [ArticleRecord(
        id=f"loc-{a}", language=real[a * CHUNKS_PER_ARTICLE % len(real)][0],
        title=real[a * CHUNKS_PER_ARTICLE % len(real)][1], summary="", body_html_or_md="", body_format="html",
        created_at=base + timedelta(minutes=a), translation_key=f"story-{a}",
    ) for a in range(articles)]
    async with pool.acquire() as conn:
        await upsert_records(conn, records)
        await create_version(conn, name=COLLECTION, model=LOCAL_MODEL, dimension=DIM, chunking=CHUNKER_VERSION)
    store.ensure_collection(COLLECTION, DIM)
    for start in range(0, n_chunks, 2_000):
        ids = range(start, min(n_chunks, start + 2_000))
        vectors = rng.normal(size=(len(ids), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows, points = [], []
        for i, vector in zip(ids, vectors, strict=True):
            a, position = divmod(i, CHUNKS_PER_ARTICLE)
            record = records[a]
            text = real[i % len(real)][2]
            pid = point_id(record.id, position)
            rows.append(chunks_db.ChunkRow(pid, record.id, record.id, record.language, position, record.title,
                                           text, f"{i:x}"))
            points.append(ChunkPoint(pid, vector.tolist(), record.id, record.id, record.language, position,
                                     text, f"{i:x}"))
        store.upsert(COLLECTION, points)
        await chunks_db.write_chunks(pool, COLLECTION, rows)
    async with pool.acquire() as conn:
        await chunks_db.build_lexicon(conn, COLLECTION)
        await conn.execute("ANALYZE rag_chunks")
    return articles


async def _measure(pool: Any, store: EdgeVectorStore, dsn: str, n_chunks: int, articles: int, queries: int,
                   rng: np.random.Generator) -> list[dict[str, Any]]:
    """Hybrid against vector-only retrieval, unscoped and scoped to 1,000 articles: p50 and p95 side by side."""
    settings = get_settings().model_copy(update={
        "database_url": dsn, "embedding_provider": EmbeddingProvider.LOCAL, "embedding_model": LOCAL_MODEL,
    })
    embedders = EmbedderRegistry(settings)
    async with pool.acquire() as conn:
        version = await _version(conn)
    questions = [c.question for name in ("dev", "test") for c in load_rag_cases(SETS[name])]
    await embedders.get(LOCAL_MODEL).embed(["warm-up"])
    out: list[dict[str, Any]] = []
    for scope_size in (None, 1_000):
        samples: dict[RetrievalMode, list[float]] = {RetrievalMode.VECTOR: [], RetrievalMode.HYBRID: []}
        for n in range(queries):
            question = questions[n % len(questions)]
            scope = None if scope_size is None else [
                f"loc-{j}" for j in rng.choice(articles, scope_size, replace=False)]
            for mode in samples:
                t0 = time.perf_counter()
                found = await retrieve(pool, store, embedders, version, question, language=None, scope=scope,
                                       config=RetrievalConfig.from_settings(settings, mode=mode, rerank=False))
                samples[mode].append((time.perf_counter() - t0) * 1000)
                assert found.hits and (scope is None or {h.chunk.localization_id for h in found.hits} <= set(scope))
        label = "unscoped" if scope_size is None else f"scope {scope_size} articles"
        vector = samples[RetrievalMode.VECTOR]
        hybrid = samples[RetrievalMode.HYBRID]
        for q in (50, 95):
            value, baseline = percentile(hybrid, q), percentile(vector, q)
            out.append({
                "metric": f"hybrid retrieval p{q}, {label}, {n_chunks // 1000}k chunks (vs vector-only)",
                "value": round(value, 3), "baseline": round(baseline, 3),
                "ratio": round(value / baseline, 3) if baseline else None,
                "target": "p95 ≤ 2x vector-only" if q == 95 else "", "unit": "ms",
            })
    return out


async def _version(conn: Any) -> Any:
    from infra.db.collections import get_version

    version = await get_version(conn, COLLECTION)
    assert version is not None
    return version
