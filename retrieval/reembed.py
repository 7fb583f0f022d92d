"""Bulk re-embedding (SPEC §10): build a new collection version in batches, switch reads at the end.

A run covers the visible localizations selected by ``language`` / ``ids`` (all when neither
is given); it writes a *new* collection version, so questions keep being answered from the
active one meanwhile:

- ``embed`` batches chunk each selected localization; a chunk whose content hash already
  exists in the active version (same model) gets that vector copied, the rest is embedded;
- ``copy`` batches carry the localizations outside a partial selection over unchanged;
- each batch writes the chunks' text to ``rag_chunks`` under the same version (the lexical
  half of hybrid retrieval), so vectors and text of one version always match;
- the batch that finishes last verifies the new collection and ``rag_chunks`` hold exactly the
  chunks the batches wrote, builds its index, and switches reads in one step (server: the Qdrant
  alias; Edge: ``collection_versions.active``), then drops versions older than the previous.

Batches run as tasks on the ``embeddings`` queue (sent by workers/reembed.py); their status lives
in Postgres, a batch is idempotent (its points are deleted and rewritten under deterministic ids,
its counts are added once), and ``workers.reembed.resume_reembed_runs`` re-enqueues the pending
batches of a run that stopped making progress (a killed worker, lost messages).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np

from infra.db import collections as versions_db
from infra.db import rag_chunks as chunks_db
from infra.db import reembed as runs_db
from infra.db.rag_chunks import ChunkRow
from infra.db.reembed import Batch, Run, RunConflict
from infra.results import LANGUAGES
from infra.settings import ConfigError, EmbeddingProvider, Settings, get_settings
from infra.text import to_plain_text
from infra.vectors import ChunkPoint, VectorStoreError
from retrieval.chunking import CHUNKER_VERSION, chunk_localization, embedding_input, point_id
from retrieval.embeddings import LOCAL_DIMENSION, EmbeddingError, OpenAIEmbedder, check_model
from retrieval.rag import RagContext

log = logging.getLogger("turnout.reembed")

DEFAULT_BATCH_SIZE = 16  # localizations per embed batch: ~60 chunks, about a second of USE on 2 cores
COPY_BATCH_SIZE = 200  # localizations per carry-over batch (no embedding, just vector copies)

__all__ = [
    "ReembedError",
    "RunConflict",
    "create_reembed_run",
    "finalize_run",
    "process_batch",
    "run_document",
    "run_rate",
]


class ReembedError(ValueError):
    """A run request that cannot be carried out; ``field`` names the argument at fault."""

    def __init__(self, field: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.details = details


# ---- planning ----
def _validated_scope(
    language: str | None, ids: Sequence[str] | None, batch_size: int | None
) -> tuple[list[str] | None, int]:
    if language is not None and language not in LANGUAGES:
        raise ReembedError("language", f"language must be ru, en or de, not {language!r}")
    cleaned: list[str] | None = None
    if ids is not None:
        cleaned = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
        if not cleaned:
            raise ReembedError("ids", "ids is empty: give at least one article id, or leave it out for all")
    size = batch_size or DEFAULT_BATCH_SIZE
    if size < 1:
        raise ReembedError("batch_size", "batch_size must be at least 1")
    return cleaned, size


@dataclass(frozen=True)
class _Plan:
    batches: list[tuple[runs_db.BatchMode, Sequence[str]]]
    source_collection: str | None  # vectors are copied from it when the model is unchanged


async def _plan(
    conn: asyncpg.Connection, *, language: str | None, ids: list[str] | None, model: str, dimension: int, size: int
) -> _Plan:
    """The run's batches: the selected articles to embed, the rest of the active version to copy."""
    if ids is not None:
        missing = await runs_db.unknown_ids(conn, ids)
        if missing:
            raise ReembedError("ids", f"unknown article id(s): {', '.join(missing[:20])}"
                               + (f" (+{len(missing) - 20} more)" if len(missing) > 20 else ""), missing)
    source = await versions_db.active_version(conn)
    copy_vectors = source is not None and source.model == model and source.dimension == dimension
    partial = language is not None or ids is not None
    if partial and source is not None and not copy_vectors:
        raise ReembedError(
            "model",
            f"changing the embedding model ({source.model} → {model}) re-embeds every article: "
            "start the run without a language or ids",
        )
    selected = await runs_db.visible_localization_ids(conn, language=language, ids=ids)
    if not selected:
        raise ReembedError("ids" if ids is not None else "language",
                           "no published, visible article matches: nothing to embed")
    carried: list[str] = []
    if partial and source is not None:
        chosen = set(selected)
        carried = [i for i in await runs_db.visible_localization_ids(conn) if i not in chosen]
    batches: list[tuple[runs_db.BatchMode, Sequence[str]]] = []
    for i in range(0, len(selected), size):
        batches.append(("embed", selected[i:i + size]))
    for i in range(0, len(carried), COPY_BATCH_SIZE):
        batches.append(("copy", carried[i:i + COPY_BATCH_SIZE]))
    return _Plan(batches, source.name if source is not None and copy_vectors else None)


async def create_reembed_run(
    pool: asyncpg.Pool,
    *,
    language: str | None = None,
    ids: Sequence[str] | None = None,
    model: str | None = None,
    batch_size: int | None = None,
    settings: Settings | None = None,
) -> tuple[str, list[int]]:
    """Validate, plan and record a run (run row + batches + its collection version row).
    Returns the run id and its batch numbers; nothing is enqueued."""
    settings = settings or get_settings()
    cleaned_ids, size = _validated_scope(language, ids, batch_size)
    model = model or settings.embedding_model
    try:
        check_model(settings, model)
    except ConfigError as exc:
        raise ReembedError("model", str(exc)) from exc
    dimension = await _model_dimension(settings, model)

    async with pool.acquire() as conn:
        plan = await _plan(conn, language=language, ids=cleaned_ids, model=model, dimension=dimension, size=size)
        run_id = "rr_" + secrets.token_hex(8)
        collection = f"{settings.qdrant_collection}_{datetime.now(UTC):%Y%m%d%H%M%S}_{secrets.token_hex(2)}"
        async with conn.transaction():
            await versions_db.create_version(
                conn, name=collection, model=model, dimension=dimension, chunking=CHUNKER_VERSION
            )
            await runs_db.create_run(
                conn, run_id=run_id, model=model, dimension=dimension, collection=collection,
                source_collection=plan.source_collection,
                scope={"language": language, "ids": cleaned_ids}, batches=plan.batches,
            )
    return run_id, list(range(len(plan.batches)))


async def _model_dimension(settings: Settings, model: str) -> int:
    if settings.embedding_provider is EmbeddingProvider.LOCAL:
        return LOCAL_DIMENSION
    embedder = OpenAIEmbedder(settings, model)
    try:
        return await embedder.dimension()  # one probe call: also proves the endpoint serves the model
    except EmbeddingError as exc:
        raise ReembedError("model", str(exc)) from exc
    finally:
        await embedder.client.close()


# ---- batches (in the vector worker: the only process that opens the store) ----
@dataclass(frozen=True)
class BatchResult:
    outcome: str  # "done" | "already_done" | "run_not_open" | "failed"
    embedded: int = 0
    copied: int = 0


async def process_batch(ctx: RagContext, run_id: str, batch_no: int) -> BatchResult:
    run = await runs_db.get_run(ctx.pool, run_id)
    if run is None or run.status not in runs_db.OPEN_STATUSES:
        return BatchResult("run_not_open")
    batch = await runs_db.get_batch(ctx.pool, run_id, batch_no)
    if batch is None or batch.status != "pending":
        return BatchResult("already_done")
    await runs_db.mark_running(ctx.pool, run_id)
    try:
        await asyncio.to_thread(ctx.store.ensure_collection, run.collection, _dimension(run))
        if batch.mode == "copy":
            embedded, copied = await _copy_batch(ctx, run, batch)
        else:
            embedded, copied = await _embed_batch(ctx, run, batch)
    except (EmbeddingError, VectorStoreError) as exc:
        error = f"batch {batch_no}: {exc}"
        log.error("re-embedding run %s failed: %s", run_id, error)
        async with ctx.pool.acquire() as conn:
            await runs_db.fail_batch(conn, run_id, batch_no, localizations=len(batch.localization_ids), error=error)
            await runs_db.fail_run(conn, run_id, error)
        return BatchResult("failed")
    async with ctx.pool.acquire() as conn:
        await runs_db.complete_batch(
            conn, run_id, batch_no, localizations=len(batch.localization_ids), embedded=embedded, copied=copied
        )
    if not await runs_db.pending_batch_numbers(ctx.pool, run_id):
        await finalize_run(ctx, run_id)
    return BatchResult("done", embedded, copied)


def _dimension(run: Run) -> int:
    if run.dimension is None:
        raise VectorStoreError(f"run {run.id} has no dimension recorded")
    return run.dimension


async def _embed_batch(ctx: RagContext, run: Run, batch: Batch) -> tuple[int, int]:
    localizations = await runs_db.fetch_localizations(ctx.pool, batch.localization_ids)
    reusable: dict[tuple[str, str], list[float]] = {}
    source = run.source_collection
    source_exists = source is not None and await asyncio.to_thread(ctx.store.collection_exists, source)
    if source is not None and source_exists:
        stored = await asyncio.to_thread(
            ctx.store.chunks_of, source, [loc.id for loc in localizations], with_vectors=True
        )
        reusable = {(c.localization_id, c.content_hash): c.vector for c in stored if c.vector is not None}

    points: list[ChunkPoint] = []
    pending: list[tuple[ChunkPoint, str]] = []  # (point without vector yet, text to embed)
    for loc in localizations:
        # The body is read again with the current parser (infra/text.py), not the `body_text` of its
        # import: a text-cleaning change then reaches the index with the chunker version's run.
        text = to_plain_text(loc.body, loc.body_format) if loc.body else loc.body_text
        for chunk in chunk_localization(loc.title, text, loc.summary):
            point = ChunkPoint(
                id=point_id(loc.id, chunk.position), vector=(), localization_id=loc.id,
                article_id=loc.article_id, language=loc.language, position=chunk.position, text=chunk.text,
                content_hash=chunk.content_hash,
            )
            vector = reusable.get((loc.id, chunk.content_hash))
            if vector is not None:
                points.append(_with_vector(point, vector))  # unchanged: copy, do not re-embed
            else:
                pending.append((point, embedding_input(loc.title, chunk.text)))
    copied = len(points)
    if pending:
        vectors = await ctx.embedders.get(run.model).embed([text for _, text in pending])
        points.extend(_with_vector(p, v.tolist()) for (p, _), v in zip(pending, vectors, strict=True))
    await _rewrite(ctx, run.collection, batch.localization_ids, points, {loc.id: loc.title for loc in localizations})
    return len(pending), copied


async def _copy_batch(ctx: RagContext, run: Run, batch: Batch) -> tuple[int, int]:
    source = run.source_collection
    source_exists = source is not None and await asyncio.to_thread(ctx.store.collection_exists, source)
    if source is None or not source_exists:
        raise VectorStoreError(f"the version to carry articles over from ({source}) no longer exists")
    titles = {loc.id: loc.title for loc in await runs_db.fetch_localizations(ctx.pool, batch.localization_ids)}
    stored = await asyncio.to_thread(ctx.store.chunks_of, source, list(titles), with_vectors=True)
    points = [c.to_point() for c in stored]
    await _rewrite(ctx, run.collection, batch.localization_ids, points, titles)
    return 0, len(points)


def _with_vector(point: ChunkPoint, vector: Sequence[float]) -> ChunkPoint:
    return ChunkPoint(
        id=point.id, vector=vector, localization_id=point.localization_id, article_id=point.article_id,
        language=point.language, position=point.position, text=point.text, content_hash=point.content_hash,
    )


async def _rewrite(
    ctx: RagContext, collection: str, localization_ids: Sequence[str], points: list[ChunkPoint],
    titles: dict[str, str],
) -> None:
    """Write the batch's chunks, then delete whatever else these localizations hold (left by an
    earlier, crashed attempt): a batch run twice leaves each chunk exactly once. Writing first
    matters when one batch runs twice at once (a resumed copy beside the original): delete-then-
    write would let one copy delete the chunks the other had written, so the run could be
    finalized, counted and switched to while chunks were missing. Ids are deterministic, so both
    copies write the same points and neither deletes them."""
    await asyncio.to_thread(ctx.store.upsert, collection, points)
    await asyncio.to_thread(
        ctx.store.delete_localizations, collection, list(localization_ids), keep=[p.id for p in points]
    )
    # The lexical half of the same chunks, in the same version, the same way (write, then delete
    # the rest): retrieval reads both lists under one version name, so they switch together.
    rows = [
        ChunkRow(point_id=p.id, localization_id=p.localization_id, article_id=p.article_id, language=p.language,
                 position=p.position, title=titles.get(p.localization_id, ""), text=p.text,
                 content_hash=p.content_hash, embedding=np.asarray(p.vector, dtype="<f4").tobytes() or None)
        for p in points
    ]
    async with ctx.pool.acquire() as conn, conn.transaction():
        await chunks_db.write_chunks(conn, collection, rows)
        await chunks_db.delete_localization_chunks(conn, collection, list(localization_ids), keep=[r.point_id for r in rows])


# ---- finishing ----
async def finalize_run(ctx: RagContext, run_id: str) -> bool:
    """Verify, index and activate a run's version once all its batches are done (idempotent;
    one process at a time). True when this call switched reads."""
    switched = False
    # One transaction holds the lock (released at its end, also on a crash) and makes the version
    # switch and the run's end one commit. It stays open while the shard is optimized: this is
    # rare (once per run) and touches no row other work waits for.
    async with ctx.pool.acquire() as conn, conn.transaction():
        if not await runs_db.try_lock_run(conn, run_id):
            return False
        run = await runs_db.get_run(conn, run_id)
        if run is None or run.status not in runs_db.OPEN_STATUSES or run.pending_batches:
            return False
        await asyncio.to_thread(ctx.store.ensure_collection, run.collection, _dimension(run))
        expected = await runs_db.expected_points(conn, run_id)
        actual = await asyncio.to_thread(ctx.store.count, run.collection)
        if actual != expected:
            await runs_db.fail_run(
                conn, run_id, f"collection {run.collection} holds {actual} chunks, the batches wrote {expected}"
            )
            return False
        lexical = await chunks_db.count_chunks(conn, run.collection)
        if lexical != expected:
            await runs_db.fail_run(
                conn, run_id, f"rag_chunks of {run.collection} hold {lexical} chunks, the batches wrote {expected}"
            )
            return False
        await chunks_db.build_lexicon(conn, run.collection)
        await asyncio.to_thread(ctx.store.optimize, run.collection)
        if ctx.store.supports_aliases:
            await asyncio.to_thread(ctx.store.set_alias, ctx.settings.qdrant_collection, run.collection)
        await versions_db.activate_version(conn, run.collection)
        switched = await runs_db.finish_run(conn, run_id)
    if switched:
        log.info("re-embedding run %s succeeded; reads now use %s", run_id, run.collection)
        await _drop_retired(ctx)
    return switched


async def _drop_retired(ctx: RagContext) -> None:
    """Keep the active version and the previous one (rollback); drop the rest."""
    for name in await versions_db.retired_versions(ctx.pool, keep_previous=1):
        try:
            if await asyncio.to_thread(ctx.store.collection_exists, name):
                await asyncio.to_thread(ctx.store.drop_collection, name)
            await versions_db.delete_version(ctx.pool, name)
        except VectorStoreError:
            log.exception("could not drop retired collection %s (will retry after the next run)", name)


# ---- progress ----
@dataclass(frozen=True)
class RunRate:
    rate_per_s: float | None  # localizations done per second since the run started (3 decimals)
    eta_s: float | None  # what is left at that rate (1 decimal); None once the run is closed


def run_rate(run: Run, *, now: datetime | None = None) -> RunRate:
    """A run's rate and ETA, as the re-embedding API, the CLI and the ops summary report them."""
    if run.started_at is None or run.done <= 0:
        return RunRate(None, None)
    end = run.finished_at or now or datetime.now(UTC)
    rate = run.done / max((end - run.started_at).total_seconds(), 1e-3)
    eta = max(run.total - run.done - run.failed, 0) / rate if run.status in runs_db.OPEN_STATUSES else None
    return RunRate(round(rate, 3), None if eta is None else round(eta, 1))


def run_document(run: Run, *, now: datetime | None = None) -> dict[str, Any]:
    """A run as the API and the CLI show it: counts, rate (articles/s) and ETA."""
    rate = run_rate(run, now=now)
    return {
        "id": run.id,
        "status": run.status,
        "model": run.model,
        "dimension": run.dimension,
        "collection": run.collection,
        "scope": run.scope,
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "chunksEmbedded": run.embedded,
        "chunksSkipped": run.skipped,
        "batches": run.batches,
        "pendingBatches": run.pending_batches,
        "ratePerS": rate.rate_per_s,
        "etaS": rate.eta_s,
        "error": run.error,
        "createdAt": run.created_at.isoformat(),
        "startedAt": run.started_at.isoformat() if run.started_at else None,
        "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
    }
