"""Hybrid retrieval on real articles of the shared corpus, the real engine (both backends), real
Postgres and USE: the scope restricts both lists before their top-K, the empty scope finds
nothing, hidden/unpublished chunks never enter either list, and a re-embedding run switches
vectors and lexical chunks together."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import pytest

from infra.corpus import ArticleRecord, read_corpus
from infra.db import rag_chunks as chunks_db
from infra.db.articles import set_visibility
from infra.settings import RetrievalMode, Settings
from infra.status import ResultStatus
from infra.vectors import Hit, StoredChunk, VectorStore
from retrieval.everyday_words import naming_words
from retrieval.hybrid import RetrievalConfig, Retrieved, fuse, lexical_to_hit, lexical_weight, retrieve
from retrieval.rag import RagContext, answer_question, resolve_read_version
from retrieval.rag_eval import RagEvalCase, default_modes, render_markdown, run_rag_eval
from retrieval.reembed import create_reembed_run, process_batch
from tests.retrieval.rag_fixtures import index, load, make_ctx, rag_db, rag_settings, store
from tests.support import services

FIXTURES = (rag_db, rag_settings, store)

# Stories of the shared corpus (translation keys; their text is read at test time, never copied).
ZLIB = "2026-03-05-buffer-overflow-zlib-cve-2026-27820"
REXML = [
    "2024-05-16-dos-rexml-cve-2024-35176", "2024-07-16-dos-rexml-cve-2024-39908",
    "2024-08-01-dos-rexml-cve-2024-41123", "2024-08-01-dos-rexml-cve-2024-41946",
    "2024-08-22-dos-rexml-cve-2024-43398", "2024-10-28-redos-rexml-cve-2024-49761",
]
OTHERS = [
    "2025-02-10-dos-net-imap-cve-2025-25186", "2025-04-28-dos-net-imap-cve-2025-43857",
    "2026-05-20-getaddrinfo-cve-2026-46727", "2026-03-11-ruby-3-4-9-released", "2026-03-16-ruby-4-0-2-released",
]
ZLIB_QUESTION = "Чем опасна CVE-2026-27820 в Zlib::GzipReader?"


def _records(keys: Sequence[str]) -> list[ArticleRecord]:
    wanted = set(keys)
    records = [r for r in read_corpus(services.SHARED_CORPUS)
               if isinstance(r, ArticleRecord) and r.translation_key in wanted]
    assert {r.translation_key for r in records} == wanted
    return records


RECORDS = _records([ZLIB, *REXML, *OTHERS])
ZLIB_IDS = {r.id for r in RECORDS if r.translation_key == ZLIB}
REXML_IDS = sorted(r.id for r in RECORDS if r.translation_key in REXML)


@pytest.fixture
async def ctx(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> RagContext:
    context = make_ctx(rag_settings, rag_db, store, llm=False)
    await load(rag_db, RECORDS)
    await index(context, batch_size=8)
    return context


def _config(mode: RetrievalMode = RetrievalMode.HYBRID, top_k: int = 8, candidates: int = 30) -> RetrievalConfig:
    return RetrievalConfig(mode=mode, top_k=top_k, candidates=candidates)


async def _retrieve(ctx: RagContext, question: str, *, scope: Sequence[str] | None = None,
                    language: str | list[str] | None = None, mode: RetrievalMode = RetrievalMode.HYBRID,
                    candidates: int = 30) -> Retrieved:
    version = await resolve_read_version(ctx)
    assert version is not None
    return await retrieve(ctx.pool, ctx.store, ctx.embedders, version, question, language=language,
                          scope=scope, config=_config(mode, candidates=candidates))


def _ids(hits: Sequence[Hit]) -> set[str]:
    return {h.chunk.localization_id for h in hits}


async def test_hybrid_finds_the_named_cve_first(ctx: RagContext) -> None:
    found = await _retrieve(ctx, ZLIB_QUESTION)
    assert found.hits[0].chunk.localization_id in ZLIB_IDS
    assert _ids(found.lexical_hits[:2]) <= ZLIB_IDS  # the keyword side names it at once


async def test_scoped_query_never_leaves_the_scope_though_the_text_matches_outside(ctx: RagContext) -> None:
    # Unscoped, both sides find the zlib advisory: the text matches outside the scope.
    unscoped = await _retrieve(ctx, ZLIB_QUESTION)
    assert _ids(unscoped.lexical_hits) & ZLIB_IDS and _ids(unscoped.vector_hits) & ZLIB_IDS
    scope = REXML_IDS[:4]
    queries = ctx.store.query_count
    scoped = await _retrieve(ctx, ZLIB_QUESTION, scope=scope, candidates=3)
    assert ctx.store.query_count == queries + 1
    assert scoped.hits and _ids(scoped.hits) <= set(scope)
    assert _ids(scoped.vector_hits) <= set(scope) and _ids(scoped.lexical_hits) <= set(scope)
    # Filtered before the top-K, not after: a 3-candidate list is still full of in-scope chunks.
    assert len(scoped.vector_hits) == 3
    outcome = await answer_question(ctx, question=ZLIB_QUESTION, language=None, answer_language="ru", scope=scope)
    assert outcome.status is ResultStatus.ANSWERED
    assert {s.article_id for s in outcome.sources} <= set(scope)
    for mode in RetrievalMode:
        assert _ids((await _retrieve(ctx, "CVE-2026-27820 zlib", scope=scope, mode=mode)).hits) <= set(scope)


async def test_the_lexicon_counts_the_version_and_common_words_still_find_something(ctx: RagContext) -> None:
    version = await resolve_read_version(ctx)
    assert version is not None
    chunks = await chunks_db.count_chunks(ctx.pool, version.name)
    ndoc = dict(await ctx.pool.fetch(
        "SELECT lexeme, ndoc FROM rag_lexicon WHERE collection = $1 AND lexeme = ANY($2::text[])",
        version.name, ["", "rexml", "-27820"],
    ))
    assert ndoc[""] == chunks and 0 < ndoc["-27820"] < chunks and 0 < ndoc["rexml"] < chunks
    # "ruby" and "vulnerability" are in most chunks here: they select nothing by themselves, but
    # a question of only common words still gets its rarest ones.
    found = await chunks_db.lexical_search(ctx.pool, version.name, "Ruby vulnerability", limit=5)
    assert len(found) == 5


async def test_lexical_scores_are_in_single_chunk_words_and_only_a_named_thing_weighs_double(ctx: RagContext) -> None:
    """A score of 1.0 is one word found in a single chunk; "CVE-2026-27820" in a title is a strong match
    (the keyword list counts double in fusion), a question in everyday words a weak one."""
    version = await resolve_read_version(ctx)
    assert version is not None
    config = _config()
    named = await chunks_db.lexical_search(ctx.pool, version.name, "CVE-2026-27820", limit=5)
    common = await chunks_db.lexical_search(ctx.pool, version.name, "is there a fix for this problem", limit=5)
    assert named and common and named[0].chunk.localization_id in ZLIB_IDS
    assert named[0].score >= config.lexical_strong_score > common[0].score > 0
    named_hits, common_hits = [lexical_to_hit(h) for h in named], [lexical_to_hit(h) for h in common]
    assert (lexical_weight(config, named_hits), lexical_weight(config, common_hits), lexical_weight(config, [])) == (
        config.lexical_weight, config.lexical_weak_weight, config.lexical_weak_weight)


def _holding(name: str, *, language: str | None = None) -> list[ArticleRecord]:
    return [r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)
            and (language is None or r.language == language) and name in f" {r.title} {r.body_html_or_md} ".casefold()]


async def test_an_everyday_word_rarer_here_than_the_name_asked_about_does_not_select_chunks(
    rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore,
) -> None:
    # The English posts that name Divvi Up, and the German ones that use the everyday "genau": on
    # this collection "genau" is the rarer word, so by the collection's counts alone it was the
    # question's rarest word and German chunks holding it led the lexical list (xl3-09 on the corpus).
    named = _holding("divvi up", language="en")
    everyday_ones = _holding(" genau ", language="de")
    assert len(named) > len(everyday_ones) >= 2
    ctx = make_ctx(rag_settings, rag_db, store, llm=False)
    await load(rag_db, [*named, *everyday_ones])
    await index(ctx, batch_size=8)
    version = await resolve_read_version(ctx)
    assert version is not None
    question = "Was genau ist Divvi Up?"
    assert naming_words(question) == "Divvi"
    raw = await chunks_db.lexical_search(ctx.pool, version.name, question, limit=5)
    assert raw and raw[0].chunk.language == "de"  # the fault, as the collection's counts alone rank it
    found = await _retrieve(ctx, question, mode=RetrievalMode.LEXICAL)
    assert found.hits and {h.chunk.localization_id for h in found.hits[:5]} <= {r.id for r in named}
    hybrid = await _retrieve(ctx, question)
    assert hybrid.hits[0].chunk.localization_id in {r.id for r in named}


def test_everyday_words_are_left_out_only_beside_a_word_that_names_something() -> None:
    assert naming_words("Was genau ist Divvi Up?") == "Divvi"
    assert naming_words("што такое проект Prossimo и зачем он вообще нужен?") == "што Prossimo"
    assert naming_words("Seit wann verwendet Ruby Onigmo als Regex-Engine?") == "Ruby Onigmo Regex-Engine?"
    assert naming_words("What is new in 3.4?") == "3.4?"
    assert naming_words("Was ist Ruby::Box?") == "Ruby::Box?"  # one part ("ruby") is no everyday word
    assert naming_words("what is this about?") == "what is this about?"  # everyday words only: as it is


async def test_language_restricts_both_lists(ctx: RagContext) -> None:
    found = await _retrieve(ctx, ZLIB_QUESTION, language="en")
    languages = {h.chunk.language for h in [*found.hits, *found.vector_hits, *found.lexical_hits]}
    assert languages == {"en"}


async def test_a_list_of_languages_restricts_both_lists_and_the_answer(ctx: RagContext) -> None:
    for mode in (RetrievalMode.HYBRID, RetrievalMode.VECTOR, RetrievalMode.LEXICAL):
        found = await _retrieve(ctx, ZLIB_QUESTION, language=["de", "en"], mode=mode)
        languages = {h.chunk.language for h in [*found.hits, *found.vector_hits, *found.lexical_hits]}
        assert languages == {"de", "en"} if mode is RetrievalMode.HYBRID else languages <= {"de", "en"}, mode
    # The zlib advisory exists in ru/en/de: the two languages' localizations of it are found, the third is not.
    found = await _retrieve(ctx, ZLIB_QUESTION, language=["de", "ru"])
    zlib = {h.chunk.language for h in found.hits if h.chunk.localization_id in ZLIB_IDS}
    assert zlib <= {"de", "ru"} and zlib
    outcome = await answer_question(ctx, question=ZLIB_QUESTION, language=["de", "en"], answer_language="en",
                                    scope=None)
    assert outcome.status is ResultStatus.ANSWERED and {s.language for s in outcome.sources} <= {"de", "en"}


async def test_empty_scope_finds_nothing_and_queries_nothing(ctx: RagContext) -> None:
    queries = ctx.store.query_count
    found = await _retrieve(ctx, ZLIB_QUESTION, scope=[])
    assert found.hits == [] and ctx.store.query_count == queries
    version = await resolve_read_version(ctx)
    assert version is not None
    assert await chunks_db.lexical_search(ctx.pool, version.name, ZLIB_QUESTION, limit=5, scope=[]) == []
    outcome = await answer_question(ctx, question=ZLIB_QUESTION, language=None, answer_language="en", scope=[])
    assert outcome.status is ResultStatus.NO_RESULTS and outcome.sources == []
    assert ctx.store.query_count == queries


async def test_hidden_and_unpublished_chunks_never_enter_either_list(ctx: RagContext) -> None:
    zlib = sorted(ZLIB_IDS)
    async with ctx.pool.acquire() as conn:
        await set_visibility(conn, zlib[:1], hidden=True)
        await set_visibility(conn, zlib[1:], published=False)
    for scope in (None, [*zlib, *REXML_IDS[:2]]):
        found = await _retrieve(ctx, ZLIB_QUESTION, scope=scope)
        every = [*found.hits, *found.vector_hits, *found.lexical_hits]
        assert every and not _ids(every) & ZLIB_IDS
    outcome = await answer_question(ctx, question=ZLIB_QUESTION, language=None, answer_language="en", scope=zlib)
    assert outcome.status is ResultStatus.NO_RESULTS  # only invisible articles in scope


async def test_a_re_embedding_run_switches_vectors_and_lexical_chunks_together(ctx: RagContext) -> None:
    first = await resolve_read_version(ctx)
    assert first is not None
    changed = next(r for r in RECORDS if r.id == REXML_IDS[0])
    await load(ctx.pool, [changed.model_copy(update={"body_html_or_md": "Quokkaflux overflow in the parser."})])
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=4, settings=ctx.settings)
    for no in batches[:-1]:
        await process_batch(ctx, run_id, no)
    # Mid-run: both lists still read the old version; the new word is in neither.
    mid = await _retrieve(ctx, "quokkaflux")
    assert (await resolve_read_version(ctx)).name == first.name  # type: ignore[union-attr]
    assert not any("Quokkaflux" in h.chunk.text for h in [*mid.hits, *mid.lexical_hits])
    await process_batch(ctx, run_id, batches[-1])
    second = await resolve_read_version(ctx)
    assert second is not None and second.name != first.name
    after = await _retrieve(ctx, "quokkaflux", mode=RetrievalMode.LEXICAL)
    assert after.hits and after.hits[0].chunk.localization_id == REXML_IDS[0]
    # The lexical rows of the serving version are exactly its vector points (ids and text).
    ids = [r.id for r in RECORDS]
    rows = {(c.point_id, c.text) for c in await chunks_db.chunks_of(ctx.pool, second.name, ids)}
    points = {(c.id, c.text) for c in ctx.store.chunks_of(second.name, ids)}
    assert rows == points and len(rows) == ctx.store.count(second.name)
    # A retired version's rows go with it (the previous one is kept for rollback).
    await index(ctx, batch_size=8)
    assert await chunks_db.count_chunks(ctx.pool, first.name) == 0
    assert await ctx.pool.fetchval("SELECT count(*) FROM rag_lexicon WHERE collection = $1", first.name) == 0
    assert await chunks_db.count_chunks(ctx.pool, second.name) == len(rows)


async def test_a_run_whose_lexical_chunks_are_incomplete_does_not_switch(ctx: RagContext) -> None:
    first = await resolve_read_version(ctx)
    run_id, batches = await create_reembed_run(ctx.pool, batch_size=8, settings=ctx.settings)
    for no in batches[:-1]:
        await process_batch(ctx, run_id, no)
    run = await ctx.pool.fetchrow("SELECT collection FROM reembed_runs WHERE id = $1", run_id)
    await ctx.pool.execute(
        "DELETE FROM rag_chunks WHERE point_id = (SELECT point_id FROM rag_chunks WHERE collection = $1 LIMIT 1)",
        run["collection"],
    )
    await process_batch(ctx, run_id, batches[-1])
    status, error = await ctx.pool.fetchrow("SELECT status, error FROM reembed_runs WHERE id = $1", run_id)
    assert status == "failed" and "rag_chunks" in error
    assert (await resolve_read_version(ctx)).name == first.name  # type: ignore[union-attr]


def _hit(point: str) -> Hit:
    return Hit(0.0, StoredChunk(id=point, localization_id=point, article_id=point, language="en", position=0,
                                text="", content_hash=""))


def test_reciprocal_rank_fusion_rewards_agreement_and_honours_weights() -> None:
    vector = [_hit("a"), _hit("b"), _hit("c")]
    lexical = [_hit("c"), _hit("d"), _hit("a")]
    fused = [h.chunk.id for h in fuse([(1.0, vector), (1.0, lexical)], rrf_k=60, limit=4)]
    assert fused[:2] == ["a", "c"] and set(fused) == {"a", "b", "c", "d"}
    lexical_only = [h.chunk.id for h in fuse([(0.0, vector), (1.0, lexical)], rrf_k=60, limit=2)]
    assert lexical_only == ["c", "d"]
    assert fuse([(1.0, vector)], rrf_k=60, limit=2)[0].score == pytest.approx(1 / 61)


async def test_eval_rag_scores_every_mode_on_the_serving_version(ctx: RagContext) -> None:
    cases = [
        RagEvalCase("z", ZLIB_QUESTION, "ru", None, None, frozenset(ZLIB_IDS), ("named_entity", "cve")),
        RagEvalCase("r", "REXML denial of service", "en", None, tuple(REXML_IDS), frozenset(REXML_IDS[:1]),
                    ("scoped",)),
    ]
    version = await resolve_read_version(ctx)
    assert version is not None
    report = await run_rag_eval(ctx.pool, ctx.store, ctx.embedders, version, cases, default_modes(ctx.settings))
    modes = {m["mode"]: m for m in report["modes"]}
    assert set(modes) == {"vector", "lexical", "hybrid"}
    assert modes["hybrid"]["ranks"]["z"] == 1 and modes["lexical"]["ranks"]["z"] == 1
    assert modes["hybrid"]["byTag"]["cve"]["n"] == 1 and modes["hybrid"]["byLanguage"]["ru"]["hit1"] == 1.0
    assert all(m["p95Ms"] >= m["p50Ms"] > 0 for m in modes.values())
    assert report["unindexedCases"] == [] and report["collection"] == version.name
    text = render_markdown(report)
    assert "| hybrid |" in text and "| cve | 1 |" in text


async def test_a_chunker_change_rolls_out_through_a_normal_re_embedding_run(
    ctx: RagContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import retrieval.chunking
    import retrieval.reembed

    current = await resolve_read_version(ctx)
    assert current is not None and current.chunking == retrieval.chunking.CHUNKER_VERSION
    same = await index(ctx, batch_size=8)
    assert same.embedded == 0  # unchanged chunker: every vector is copied
    chunks = await chunks_db.count_chunks(ctx.pool, same.collection)
    for module in (retrieval.chunking, retrieval.reembed):
        monkeypatch.setattr(module, "CHUNKER_VERSION", "sentences-next-test")
    changed = await index(ctx, batch_size=8)
    assert changed.status == "succeeded" and changed.embedded == chunks and changed.skipped == 0
    serving = await resolve_read_version(ctx)
    assert serving is not None and serving.name == changed.collection and serving.chunking == "sentences-next-test"
    if ctx.store.supports_aliases:
        assert ctx.store.resolve_alias(ctx.settings.qdrant_collection) == changed.collection
    assert await chunks_db.count_chunks(ctx.pool, changed.collection) == chunks


async def test_chunks_come_from_the_body_read_by_the_current_parser(ctx: RagContext) -> None:
    # A row imported by an older parser keeps its stale body_text (import skips unchanged rows);
    # the re-embedding run re-reads the body, so the index gets the current text.
    target = REXML_IDS[0]
    await ctx.pool.execute("UPDATE localizations SET body_text = 'stale [text](https://x.test)' WHERE id = $1", target)
    run = await index(ctx, batch_size=8)
    texts = [c.text for c in await chunks_db.chunks_of(ctx.pool, run.collection, [target])]
    assert texts and not any("stale" in t or "](" in t for t in texts)
