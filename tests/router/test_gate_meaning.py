"""The request gate's meaning signal (issue 23): a message's closeness to the passages of the
serving version, read from the chunk vectors a real re-embedding run stored beside their text
(real PostgreSQL, the real local embedding model, Qdrant Edge), and how the gate weighs it
against the words' coverage."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from infra.corpus import ArticleRecord, read_corpus
from infra.results import Language, Usage
from infra.settings import EmbeddingProvider, Settings
from retrieval.embeddings import EmbedderRegistry
from router.decision import RoutingDecision
from router.eval import EvalCase, score
from router.gate import CLOSE_IN_MEANING, FAR_IN_MEANING, WORDS_HELD, Coverage, GateVerdict, check_request
from router.relevance import CollectionRelevance
from router.request_examples import RequestVote
from router.similarity import CollectionSimilarity
from router.tools import default_registry
from tests.retrieval.rag_fixtures import index, load, make_ctx, make_store, rag_db, rag_settings
from tests.support import services
from tests.support.llm_server import ScriptedLLM

FIXTURES = (rag_db, rag_settings)
TODAY = date(2026, 6, 18)

# Stories of the shared corpus (read at test time, never copied): the security advisories and
# release posts the questions below are about, and a fixed sample of the rest.
NAMED = ["2024-05-16-dos-rexml-cve-2024-35176", "2026-03-05-buffer-overflow-zlib-cve-2026-27820",
         "2025-02-10-dos-net-imap-cve-2025-25186", "2022-12-25-ruby-3-2-0-released"]


def _records() -> tuple[list[ArticleRecord], list[str]]:
    """Every article of the corpus (the words' coverage counts them all), and the ids of the sample
    that is embedded (the meaning is measured against it: embedding all would cost minutes; the named
    stories and a dozen others keep both tests decided)."""
    records = [r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)]
    keys = sorted({r.translation_key for r in records if r.translation_key})
    wanted = set(NAMED) | set(random.Random(23).sample(keys, 12))
    return records, sorted({r.id for r in records if r.translation_key in wanted})


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
async def meaning(rag_settings: Settings, rag_db: asyncpg.Pool, tmp_path: Path) -> AsyncIterator[CollectionSimilarity]:
    """The corpus loaded, a sample of it embedded by a real run into Qdrant Edge (the meaning signal
    reads the vectors from PostgreSQL, whichever engine serves the vector side)."""
    store = make_store("edge", tmp_path)
    try:
        records, sample = _records()
        await load(rag_db, records)
        await index(make_ctx(rag_settings, rag_db, store, llm=False), batch_size=16, ids=sample)
        yield CollectionSimilarity(rag_db, EmbedderRegistry(rag_settings))
    finally:
        store.close()


async def test_a_run_stores_every_vector_and_questions_on_the_articles_read_close(meaning: CollectionSimilarity) -> None:
    counts = await meaning.pool.fetchrow(
        "SELECT count(*) AS chunks, count(embedding) AS vectors, min(length(embedding)) AS shortest, "
        "max(length(embedding)) AS longest FROM rag_chunks c JOIN collection_versions v ON v.name = c.collection "
        "WHERE v.active")
    assert counts["chunks"] > 40 and counts["vectors"] == counts["chunks"]
    assert counts["shortest"] == counts["longest"] == 4 * 512  # float32, the local model's dimension
    close = [await meaning.similarity(q) for q in ON_TOPIC]
    far = [await meaning.similarity(q) for q in OFF_TOPIC]
    assert None not in close and None not in far
    assert all(s >= FAR_IN_MEANING for s in close if s is not None), close
    assert all(s < FAR_IN_MEANING for s in far if s is not None), far
    assert min(s for s in close if s is not None) > max(s for s in far if s is not None) + 0.1


async def test_the_gate_refuses_a_message_far_in_meaning_though_one_article_uses_its_words(
    meaning: CollectionSimilarity, rag_db: asyncpg.Pool,
) -> None:
    relevance = CollectionRelevance(rag_db, meaning)
    words_only = CollectionRelevance(rag_db)
    names = default_registry().names
    question = "What's the capital of Australia?"
    lexical = await check_request(question, language="en", tools=names, relevance=words_only, today=TODAY)
    assert lexical.passed and lexical.coverage is not None  # the words alone let it through

    async def verdict(question: str, language: Language) -> Any:
        return await check_request(question, language=language, tools=names, relevance=relevance, today=TODAY)

    refused = await verdict(question, "en")
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

    async def request_vote(self, message: str) -> RequestVote | None:
        return None  # the collection's two signals alone


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


async def test_too_few_articles_to_count_words_means_neither_signal_decides() -> None:
    @dataclass
    class _FreshImport(_Signals):
        async def coverage(self, text: str, language: Language) -> Coverage | None:
            return None  # fewer than 100 visible articles

    assert (await _gate("why do mountain goats climb dams", _FreshImport(together=0.0, meaning=0.1))).passed


async def test_far_in_meaning_still_passes_when_one_article_holds_its_names() -> None:
    question = "was ist mit YJIT los"
    assert (await _gate(question, _Signals(together=0.5, meaning=0.2))).refused == "off_topic"
    assert (await _gate(question, _Signals(together=0.5, meaning=0.2, names=True))).passed


def test_the_eval_reports_both_signals_per_case() -> None:
    case = EvalCase(id="x", question="capital of Australia", today=TODAY, expected_tool=None, expected_arguments={})
    verdict = GateVerdict("capital of Australia", "off_topic", "far", Coverage(0.84, 0.9, 3, 0.17))
    decision = RoutingDecision(tool=None, arguments={}, routed_by="fallback", usage=Usage(), gate=verdict)
    result = score(case, decision, 1.0)
    assert (result.gate, result.coverage, result.similarity) == ("off_topic", 0.84, 0.17)


async def test_a_version_embedded_by_a_model_the_bars_were_not_measured_on_means_words_only(
    rag_settings: Settings, rag_db: asyncpg.Pool, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """The bars are USE's cosines; an OpenAI-compatible model's (here the scripted endpoint's, through
    the real `openai` client and a real run) sit on another scale, so the gate does not read them."""
    remote = rag_settings.model_copy(update={
        "embedding_provider": EmbeddingProvider.OPENAI, "embedding_base_url": llm.base_url,
        "embedding_model": "scripted-embedder"})
    store = make_store("edge", tmp_path)
    try:
        records, sample = _records()
        await load(rag_db, records)
        await index(make_ctx(remote, rag_db, store, llm=False), batch_size=16, ids=sample[:4])
    finally:
        store.close()
    assert await rag_db.fetchval("SELECT model FROM collection_versions WHERE active") == "scripted-embedder"
    embedded = len(llm.embedding_requests)
    assert await CollectionSimilarity(rag_db, EmbedderRegistry(remote)).similarity(ON_TOPIC[0]) is None
    assert len(llm.embedding_requests) == embedded  # the message is not even embedded


async def test_a_message_typed_in_lower_case_is_measured_with_the_collections_capitals(
    meaning: CollectionSimilarity, rag_db: asyncpg.Pool,
) -> None:
    # The meaning model reads case; a phone user's "rexml" is measured as the collection writes it.
    relevance = CollectionRelevance(rag_db, meaning)
    typed, cased = "чем опасна уязвимость в rexml?", "чем опасна уязвимость в REXML?"
    as_typed = await meaning.similarity(typed)
    assert as_typed is not None and as_typed != await meaning.similarity(cased)
    assert await relevance.similarity(typed) == await meaning.similarity(cased)
    # a writer who uses case is read as written
    assert await relevance.similarity("Чем опасна уязвимость в rexml?") == await meaning.similarity(
        "Чем опасна уязвимость в rexml?")
