"""The request gate's meaning signal (issue 23): a message's closeness to the passages of the
serving version, read from the chunk vectors a real re-embedding run stored beside their text
(real PostgreSQL, the real local embedding model, Qdrant Edge), and how the gate weighs it
against the words' coverage."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date
from typing import Any

import asyncpg
import pytest

from infra.corpus import ArticleRecord, read_corpus
from infra.results import Language
from infra.settings import Settings
from infra.vectors import VectorStore
from retrieval.embeddings import EmbedderRegistry
from router.gate import CLOSE_IN_MEANING, FAR_IN_MEANING, WORDS_HELD, Coverage, check_request
from router.relevance import CollectionRelevance
from router.similarity import CollectionSimilarity
from router.tools import default_registry
from tests.retrieval.rag_fixtures import index, load, make_ctx, rag_db, rag_settings, store
from tests.support import services

FIXTURES = (rag_db, rag_settings, store)
TODAY = date(2026, 6, 18)

# Stories of the shared corpus (read at test time, never copied): the security advisories and
# release posts the questions below are about, and a fixed sample of the rest.
NAMED = ["2024-05-16-dos-rexml-cve-2024-35176", "2026-03-05-buffer-overflow-zlib-cve-2026-27820",
         "2025-02-10-dos-net-imap-cve-2025-25186", "2022-12-25-ruby-3-2-0-released"]


def _records() -> list[ArticleRecord]:
    records = [r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)]
    keys = sorted({r.translation_key for r in records if r.translation_key})
    wanted = set(NAMED) | set(random.Random(23).sample(keys, 40))
    return [r for r in records if r.translation_key in wanted]


ON_TOPIC = [
    "Чем опасна уязвимость в REXML?",
    "What changed in Ruby 3.2?",
    "Was ist das Problem mit net-imap?",
]
OFF_TOPIC = [
    "What's the capital of Australia?",
    "Сколько яиц нужно для омлета?",
    "Wie hoch ist die Zugspitze?",
]


@pytest.fixture
async def meaning(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> CollectionSimilarity:
    context = make_ctx(rag_settings, rag_db, store, llm=False)
    await load(rag_db, _records())
    await index(context, batch_size=16)
    return CollectionSimilarity(rag_db, EmbedderRegistry(rag_settings))


async def test_a_run_stores_every_chunk_vector_beside_its_text(meaning: CollectionSimilarity) -> None:
    counts = await meaning.pool.fetchrow(
        "SELECT count(*) AS chunks, count(embedding) AS vectors, min(length(embedding)) AS shortest, "
        "max(length(embedding)) AS longest FROM rag_chunks c JOIN collection_versions v ON v.name = c.collection "
        "WHERE v.active")
    assert counts["chunks"] > 40 and counts["vectors"] == counts["chunks"]
    assert counts["shortest"] == counts["longest"] == 4 * 512  # float32, the local model's dimension


async def test_questions_on_the_articles_read_close_and_others_far(meaning: CollectionSimilarity) -> None:
    close = [await meaning.similarity(q) for q in ON_TOPIC]
    far = [await meaning.similarity(q) for q in OFF_TOPIC]
    assert None not in close and None not in far
    assert all(s >= FAR_IN_MEANING for s in close if s is not None), close
    assert all(s < FAR_IN_MEANING for s in far if s is not None), far
    assert min(s for s in close if s is not None) > max(s for s in far if s is not None) + 0.1  # the two groups are apart, not just on either side of the bar


async def test_the_gate_refuses_a_message_far_in_meaning_though_too_few_articles_to_count_words(
    meaning: CollectionSimilarity, rag_db: asyncpg.Pool,
) -> None:
    # Fewer than 100 visible articles: the word coverage is not measured; the meaning still is.
    relevance = CollectionRelevance(rag_db, meaning)
    names = default_registry().names

    async def verdict(question: str, language: Language) -> Any:
        return await check_request(question, language=language, tools=names, relevance=relevance, today=TODAY)

    refused = await verdict("What's the capital of Australia?", "en")
    assert refused.refused == "off_topic" and "in meaning" in refused.reason
    assert refused.coverage is not None and refused.coverage.similarity is not None
    assert (await verdict("Чем опасна уязвимость в REXML?", "ru")).passed
    # a message that points back at a result is not measured by its own meaning
    assert (await verdict("а о чём вторая из них?", "ru")).passed
    assert (await verdict("welche davon behandeln MFA?", "de")).passed


async def test_no_version_with_vectors_means_words_only(rag_settings: Settings, rag_db: asyncpg.Pool) -> None:
    assert await CollectionSimilarity(rag_db, EmbedderRegistry(rag_settings)).similarity("anything") is None


@dataclass
class _Signals:
    """Both signals fixed, to show how the gate weighs them (the real ones are measured above)."""

    together: float
    meaning: float | None
    names: bool = False

    async def coverage(self, text: str, language: Language) -> Coverage | None:
        held = 1.0 if self.names and text.isupper() else self.together
        return Coverage(together=held, anywhere=held, lexemes=len(text.split()))

    async def similarity(self, message: str) -> float | None:
        return self.meaning


async def _gate(question: str, signals: _Signals) -> Any:
    return await check_request(question, language="en", tools=default_registry().names, relevance=signals,
                               today=TODAY)


async def test_close_in_meaning_passes_though_the_words_are_not_the_articles() -> None:
    question = "why do free certificates only live ninety days"
    assert (await _gate(question, _Signals(together=0.2, meaning=None))).refused == "off_topic"
    assert (await _gate(question, _Signals(together=0.2, meaning=CLOSE_IN_MEANING))).passed
    assert (await _gate(question, _Signals(together=0.2, meaning=CLOSE_IN_MEANING - 0.01))).refused == "off_topic"


async def test_far_in_meaning_refuses_though_one_article_uses_most_words() -> None:
    question = "what is the capital of Australia"
    assert (await _gate(question, _Signals(together=0.84, meaning=None))).passed  # words alone let it through
    far = await _gate(question, _Signals(together=0.84, meaning=FAR_IN_MEANING - 0.01))
    assert far.refused == "off_topic" and far.coverage.similarity == FAR_IN_MEANING - 0.01
    assert (await _gate(question, _Signals(together=0.84, meaning=FAR_IN_MEANING))).passed
    # nearly all its words held by one article: the words win over a low meaning score
    assert (await _gate(question, _Signals(together=WORDS_HELD, meaning=0.1))).passed


async def test_far_in_meaning_still_passes_when_one_article_holds_its_names() -> None:
    question = "was ist mit YJIT los"
    assert (await _gate(question, _Signals(together=0.5, meaning=0.2))).refused == "off_topic"
    assert (await _gate(question, _Signals(together=0.5, meaning=0.2, names=True))).passed
