"""Re-embedding runs in-process on both backends: versions, atomic switch, content-hash skips,
carry-over, idempotent batches, validation (resumption: tests/workers/test_reembed_resume.py)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Sequence
from contextvars import ContextVar

import asyncpg
import pytest

from infra.corpus import ArticleRecord
from infra.db import collections as versions_db
from infra.db import reembed as runs_db
from infra.settings import Settings
from infra.vectors import VectorStore
from infra.vectors.base import ChunkPoint
from retrieval import reembed
from retrieval.chunking import CHUNKER_VERSION, chunk_localization
from retrieval.embeddings import LOCAL_DIMENSION, LOCAL_MODEL
from retrieval.rag import RagContext, answer_question, resolve_read_version
from retrieval.reembed import (
    ReembedError,
    RunConflict,
    create_reembed_run,
    process_batch,
)
from tests.retrieval.rag_fixtures import (
    CORPUS,
    HIDDEN_ID,
    article,
    index,
    load,
    make_ctx,
    rag_db,
    rag_settings,
    store,
)

# Shared fixtures (edge/server stores, the own database) used by the tests below.
FIXTURES = (rag_db, rag_settings, store)

VISIBLE = [r for r in CORPUS if r.id != HIDDEN_ID]


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    await load(rag_db)
    return make_ctx(rag_settings.model_copy(update={"llm_base_url": None}), rag_db, store)


def expected_chunks(records: list[ArticleRecord]) -> dict[str, int]:
    return {r.id: len(chunk_localization(r.title, r.plain_text(), r.summary)) for r in records}


def assert_each_chunk_once(store: VectorStore, collection: str, expected: dict[str, int]) -> None:
    chunks = store.chunks_of(collection, list(expected))
    positions = Counter((c.localization_id, c.position) for c in chunks)
    assert all(n == 1 for n in positions.values()), "a chunk is stored twice"
    assert {loc: sum(1 for (owner, _) in positions if owner == loc) for loc in expected} == expected
    assert store.count(collection) == sum(expected.values())


async def test_first_run_indexes_every_visible_article_and_switches_reads(ctx: RagContext) -> None:
    assert await resolve_read_version(ctx) is None
    run = await index(ctx)
    assert run.status == "succeeded" and run.error is None
    assert (run.total, run.done, run.failed) == (len(VISIBLE), len(VISIBLE), 0)
    expected = expected_chunks(VISIBLE)
    assert (run.embedded, run.skipped) == (sum(expected.values()), 0)
    version = await resolve_read_version(ctx)
    assert version is not None and version.name == run.collection and version.active
    assert (version.model, version.dimension, version.chunking) == (LOCAL_MODEL, LOCAL_DIMENSION, CHUNKER_VERSION)
    assert_each_chunk_once(ctx.store, run.collection, expected)
    assert HIDDEN_ID not in {c.localization_id for c in ctx.store.chunks_of(run.collection, [HIDDEN_ID])}
    if ctx.store.supports_aliases:
        assert ctx.store.resolve_alias(ctx.settings.qdrant_collection) == run.collection
    doc = reembed.run_document(run)
    assert doc["ratePerS"] is not None and doc["ratePerS"] > 0 and doc["etaS"] is None


async def test_unchanged_chunks_are_copied_not_embedded(ctx: RagContext) -> None:
    first = await index(ctx)
    changed = article("garden-en", "en", "Growing tomatoes on a balcony",
                      "Tomatoes need at least six hours of sun a day. A brand new second sentence about basil.")
    await load(ctx.pool, [changed])
    embedder = ctx.embedders.get(LOCAL_MODEL)
    before = embedder.texts_embedded
    second = await index(ctx)
    records = [changed if r.id == "garden-en" else r for r in VISIBLE]
    expected = expected_chunks(records)
    assert second.status == "succeeded" and second.collection != first.collection
    assert second.embedded == expected["garden-en"] == embedder.texts_embedded - before
    assert second.skipped == sum(expected.values()) - expected["garden-en"]
    assert_each_chunk_once(ctx.store, second.collection, expected)
    new_text = ctx.store.chunks_of(second.collection, ["garden-en"])[0].text
    assert "basil" in new_text
    # The previous version is kept (rollback); the one before that is dropped after a third run.
    assert ctx.store.collection_exists(first.collection)
    third = await index(ctx)
    assert third.embedded == 0
    assert not ctx.store.collection_exists(first.collection)
    assert await versions_db.get_version(ctx.pool, first.collection) is None
    assert ctx.store.collection_exists(second.collection)


async def test_partial_run_re_embeds_the_selection_and_carries_the_rest(ctx: RagContext) -> None:
    await index(ctx)
    run = await index(ctx, language="ru")
    assert run.status == "succeeded"
    ru = [r.id for r in VISIBLE if r.language == "ru"]
    batches = await ctx.pool.fetch("SELECT mode, localization_ids FROM reembed_batches WHERE run_id = $1", run.id)
    assert sorted(i for b in batches if b["mode"] == "embed" for i in b["localization_ids"]) == sorted(ru)
    assert any(b["mode"] == "copy" for b in batches)
    assert run.total == len(VISIBLE)
    assert_each_chunk_once(ctx.store, run.collection, expected_chunks(VISIBLE))
    by_ids = await index(ctx, ids=["bike"])  # a story id selects its localizations
    embedded_ids = await ctx.pool.fetchval(
        "SELECT array_agg(i ORDER BY i) FROM reembed_batches, unnest(localization_ids) i "
        "WHERE run_id = $1 AND mode = 'embed'", by_ids.id)
    assert embedded_ids == ["bike-de", "bike-en"]


async def test_answers_keep_coming_from_the_old_version_until_the_switch(ctx: RagContext) -> None:
    first = await index(ctx)
    await load(ctx.pool, [article("bread-ru", "ru", "Как испечь ржаной хлеб",
                                  "Новый рецепт: ржаной хлеб с тмином печётся сорок минут.")])
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=2, settings=ctx.settings)
    assert len(batches) > 2
    for no in batches[:-1]:
        await process_batch(ctx, run_id, no)
    mid = await runs_db.get_run(ctx.pool, run_id)
    assert mid is not None and mid.status == "running" and 0 < mid.done < mid.total
    assert reembed.run_document(mid)["etaS"] is not None
    during = await answer_question(ctx, question="ржаной хлеб", language="ru", answer_language="ru", scope=None)
    assert (await resolve_read_version(ctx)).name == first.collection  # type: ignore[union-attr]
    assert "сорок минут" not in (during.answer or "")  # the old text: the new version is not live yet
    await process_batch(ctx, run_id, batches[-1])
    assert (await resolve_read_version(ctx)).name == mid.collection  # type: ignore[union-attr]
    after = await answer_question(ctx, question="ржаной хлеб", language="ru", answer_language="ru", scope=None)
    assert "сорок минут" in (after.answer or "")


async def test_a_batch_run_twice_leaves_each_chunk_once_and_counts_once(ctx: RagContext) -> None:
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=3, settings=ctx.settings)
    first = await process_batch(ctx, run_id, batches[0])
    assert first.outcome == "done"
    assert (await process_batch(ctx, run_id, batches[0])).outcome == "already_done"
    # A worker killed after writing points but before recording the batch: it runs again.
    await ctx.pool.execute("UPDATE reembed_batches SET status = 'pending' WHERE run_id = $1 AND batch_no = 0", run_id)
    await ctx.pool.execute("UPDATE reembed_runs SET done = done - 3, embedded = embedded - $2 WHERE id = $1",
                           run_id, first.embedded)
    assert (await process_batch(ctx, run_id, batches[0])).outcome == "done"
    for no in batches[1:]:
        await process_batch(ctx, run_id, no)
    run = await runs_db.get_run(ctx.pool, run_id)
    assert run is not None and run.status == "succeeded" and run.done == run.total
    assert_each_chunk_once(ctx.store, run.collection, expected_chunks(VISIBLE))


async def test_a_batch_run_twice_at_once_never_leaves_the_run_short(
    ctx: RagContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed copy of a batch running beside the original (a vector worker re-sends the open
    run's batches at start). The worst interleaving, forced: the later copy starts writing only
    after the first copy's points are in, and its upsert waits until the first copy has finished
    the run (finalize: count, switch). The later copy must not have removed those points."""
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=3, settings=ctx.settings)
    for no in batches[:-1]:
        await process_batch(ctx, run_id, no)
    copy: ContextVar[str] = ContextVar("copy")  # asyncio.to_thread carries it into the store call
    first: list[str] = []
    first_wrote, first_finished = threading.Event(), threading.Event()
    lock = threading.Lock()
    real_upsert, real_delete = ctx.store.upsert, ctx.store.delete_localizations

    def is_first() -> bool:
        with lock:
            first[:] = first or [copy.get()]
            return first[0] == copy.get()

    def upsert(name: str, points: Sequence[ChunkPoint]) -> None:
        if is_first():
            real_upsert(name, points)
            first_wrote.set()
            return
        assert first_wrote.wait(30) and first_finished.wait(30), "the first copy never finished"
        real_upsert(name, points)

    def delete_localizations(name: str, ids: Sequence[str], *, keep: Sequence[str] = ()) -> None:
        if not is_first():
            assert first_wrote.wait(30), "the first copy never wrote"
        real_delete(name, ids, keep=keep)

    monkeypatch.setattr(ctx.store, "upsert", upsert)
    monkeypatch.setattr(ctx.store, "delete_localizations", delete_localizations)

    async def run(name: str) -> None:
        copy.set(name)
        await process_batch(ctx, run_id, batches[-1])

    copies = {asyncio.ensure_future(run(name)) for name in ("a", "b")}
    done, still_running = await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
    first_finished.set()
    await asyncio.gather(*done, *still_running)

    run_row = await runs_db.get_run(ctx.pool, run_id)
    assert run_row is not None and run_row.status == "succeeded", run_row.error if run_row else None
    assert run_row.done == run_row.total
    assert_each_chunk_once(ctx.store, run_row.collection, expected_chunks(VISIBLE))


async def test_invalid_requests_are_refused_with_the_field(ctx: RagContext) -> None:
    with pytest.raises(ReembedError) as bad_language:
        await create_reembed_run(ctx.pool, language="fr", settings=ctx.settings)
    assert bad_language.value.field == "language"
    with pytest.raises(ReembedError, match="unknown article id") as unknown:
        await create_reembed_run(ctx.pool, ids=["bike-de", "nope-1"], settings=ctx.settings)
    assert unknown.value.details == ["nope-1"]
    with pytest.raises(ReembedError, match="TURNOUT_EMBEDDING_PROVIDER=openai"):
        await create_reembed_run(ctx.pool, model="text-embedding-3-large", settings=ctx.settings)
    with pytest.raises(ReembedError, match="nothing to embed"):
        await create_reembed_run(ctx.pool, ids=[HIDDEN_ID], settings=ctx.settings)
    assert await runs_db.list_runs(ctx.pool) == []


async def test_one_open_run_at_a_time_and_cancel(ctx: RagContext) -> None:
    run_id, batches = await create_reembed_run(ctx.pool, settings=ctx.settings)
    with pytest.raises(RunConflict) as conflict:
        await create_reembed_run(ctx.pool, language="de", settings=ctx.settings)
    assert conflict.value.run_id == run_id
    assert await runs_db.cancel_run(ctx.pool, run_id)
    assert (await process_batch(ctx, run_id, batches[0])).outcome == "run_not_open"
    assert await resolve_read_version(ctx) is None
    again, _ = await create_reembed_run(ctx.pool, settings=ctx.settings)
    assert again != run_id


async def test_model_change_must_cover_everything(ctx: RagContext, monkeypatch: pytest.MonkeyPatch) -> None:
    await index(ctx)
    await ctx.pool.execute("UPDATE collection_versions SET model = 'older-model' WHERE active")
    with pytest.raises(ReembedError, match="re-embeds every article") as partial:
        await create_reembed_run(ctx.pool, language="en", settings=ctx.settings)
    assert partial.value.field == "model"
    run = await index(ctx)  # a full run re-embeds everything: nothing is copied across models
    assert run.skipped == 0 and run.embedded == sum(expected_chunks(VISIBLE).values())
