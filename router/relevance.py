"""The request gate's relevance signals: how the visible articles hold a message's topic words
(`CollectionRelevance`, SQL in `infra/db/vocabulary.py`), how close the message is in meaning to
a passage (`router/similarity.py`), and the names-by-shape check."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from dataclasses import dataclass
from typing import Protocol

import asyncpg

from infra.db.vocabulary import LexemeStats, lexeme_stats, recent_texts, visible_documents
from infra.results import Language
from infra.settings import Settings
from retrieval.embeddings import EmbedderRegistry
from router.casing import Casing, typed_in_lower_case
from router.request_examples import RequestExamples, RequestVote
from router.similarity import CollectionSimilarity

log = logging.getLogger("turnout.router")

# A message below the bar that names things by their shape ("RubyGems", "YJIT") still passes when
# one article holds all of them (measured on the dev half, docs/router.md).
NAMES_HELD = 1.0


@dataclass(frozen=True)
class Coverage:
    """How the collection holds a message's topic words (0..1 each)."""

    together: float  # the IDF share of the topic's lexemes held by one article (the best one)
    anywhere: float  # the IDF share held by the collection at all
    lexemes: int
    similarity: float | None = None  # the message's largest cosine to a passage (None: not measured)



class Relevance(Protocol):
    """The relevance signals: how the collection holds a text's words (None: no topic words), how
    close a message is in meaning to its passages, and the vote of the labelled messages nearest to it
    (None: not measurable here)."""

    async def coverage(self, text: str, language: Language) -> Coverage | None: ...

    async def similarity(self, message: str) -> float | None: ...

    async def request_vote(self, message: str) -> RequestVote | None: ...



# ---- the relevance signal ----
# A word one or two articles hold is as likely an accident of the corpus (an everyday verb in one
# Russian post) as the question's topic: it weighs like a common word, neither for nor against.
# An absent word weighs most: absence is the evidence that a message is about something else.
ACCIDENTAL_DF = 2


def _weight(df: int, n: int) -> float:
    if 0 < df <= ACCIDENTAL_DF:
        return 1.0
    return math.log((n + 1) / (df + 0.5))


def coverage_of(stats: LexemeStats) -> Coverage | None:
    """The IDF-weighted share of the lexemes one article holds together, and the collection at all."""
    if not stats.frequencies:
        return None
    n = max(stats.documents, 1)
    # An absent word that is one slip from a word the collection has ("Zertifkat") weighs like an
    # accidental one: a typo is no evidence either way.
    idf = {lexeme: 1.0 if lexeme in stats.near_miss else _weight(df, n) for lexeme, df in stats.frequencies.items()}
    total = sum(idf.values()) or 1.0
    anywhere = sum(w for lexeme, w in idf.items() if stats.frequencies[lexeme] > 0)
    best = max((sum(idf[x] for x in held if x in idf) for held in stats.together), default=0.0)
    best = max(best, max((w for lexeme, w in idf.items() if stats.frequencies[lexeme] > 0), default=0.0))
    return Coverage(together=round(best / total, 4), anywhere=round(anywhere / total, 4), lexemes=len(idf))


class CollectionRelevance:
    """`Relevance` from the visible articles in PostgreSQL: index lookups only. The number of
    visible articles (the IDF's N) is counted once every ``DOCUMENTS_TTL_S``."""

    DOCUMENTS_TTL_S = 600.0
    MIN_DOCUMENTS = 100

    def __init__(self, pool: asyncpg.Pool, meaning: CollectionSimilarity | None = None,
                 examples: RequestExamples | None = None) -> None:
        self.pool = pool
        self.meaning = meaning  # None: words only (no embedder wired, e.g. a test of the lexical signal)
        self.examples = examples  # None: no examples' vote (a test of the collection's signals alone)
        self._documents: tuple[float, int] | None = None  # (monotonic time read, count)
        self._casing: tuple[float, Casing] | None = None  # (monotonic time learned, the capitals)

    @classmethod
    def for_settings(cls, pool: asyncpg.Pool, settings: Settings) -> CollectionRelevance:
        """Both signals: the words, and the meaning under the serving version's embedding model."""
        return cls(pool, CollectionSimilarity(pool, EmbedderRegistry(settings)), RequestExamples.shipped())

    async def _visible(self) -> int:
        now = time.monotonic()
        if self._documents is None or now - self._documents[0] > self.DOCUMENTS_TTL_S:
            count = await visible_documents(self.pool)
            if count < self.MIN_DOCUMENTS:
                return count  # not kept: a collection being imported is counted again next time
            self._documents = (now, count)
        return self._documents[1]

    async def coverage(self, text: str, language: Language) -> Coverage | None:
        """In the question language's configuration and, for a German or Russian question, also in
        English's: the best of both (technical terms are often English: "ACME Renewal Information")."""
        n = await self._visible()
        if n < self.MIN_DOCUMENTS:
            return None  # too few articles to tell a topic they lack from one they happen not to mention
        measured = [coverage_of(await lexeme_stats(self.pool, text, language, documents=n))]
        if language != "en":
            measured.append(coverage_of(await lexeme_stats(self.pool, text, "en", documents=n)))
        found = [m for m in measured if m is not None]
        return max(found, key=lambda m: m.together) if found else None

    async def _cased(self, message: str) -> str:
        """A message typed all in lower case with the collection's capitals (`router.casing`), which the
        meaning model reads; the table is learned again every ``DOCUMENTS_TTL_S``."""
        if not typed_in_lower_case(message):
            return message  # no need to learn the table for it
        now = time.monotonic()
        if self._casing is None or now - self._casing[0] > self.DOCUMENTS_TTL_S:
            try:
                texts = await recent_texts(self.pool)
            except asyncpg.LockNotAvailableError:  # the table is being rewritten: as typed, and again in a minute
                log.info("the collection's capitals were not learned (the articles table is locked); read as typed")
                self._casing = (now - self.DOCUMENTS_TTL_S + 60.0, self._casing[1] if self._casing else Casing({}))
                return self._casing[1].restored(message)
            # ~0.4 s for 1,209 articles: learned off the event loop, which serves other jobs meanwhile
            self._casing = (now, await asyncio.to_thread(Casing.learned, texts))
        return self._casing[1].restored(message)

    async def similarity(self, message: str) -> float | None:
        return await self.meaning.similarity(await self._cased(message)) if self.meaning is not None else None

    async def request_vote(self, message: str) -> RequestVote | None:
        return await self.examples.vote(await self._cased(message)) if self.examples is not None else None


# A name by its shape: CamelCase ("RubyGems"), capitals ("YJIT", "OCSP"), letters with digits
# ("CVE-2025-1", "X2"), or a Latin word in a Cyrillic message ("гема из RubyGems": "Rails").
_NAME_SHAPE = re.compile(r"^(?:[A-Za-z]+[a-z][A-Z]\w*|[A-Z]{3,}\w*|(?=\w*[A-Za-z])(?=\w*\d)[\w.-]+)$")
_CYRILLIC = re.compile(r"[а-яё]", re.I)
_LATIN_WORD = re.compile(r"^[A-Za-z][\w.+#-]{2,}$")


def _names(question: str, topic: str) -> list[str]:
    cyrillic = _CYRILLIC.search(question) is not None
    # Two characters ("5x", "x2", "Q1") are as likely a variable or a unit as a thing's name.
    return [w for w in topic.split() if len(w) >= 3 and (_NAME_SHAPE.match(w) or cyrillic and _LATIN_WORD.match(w))]


async def names_held(question: str, topic: str, relevance: Relevance) -> bool:
    """The topic names things (by their shape) and one article holds them all: a question about the
    collection's own subjects in everyday words it does not use ("старую версию гема" + "RubyGems")."""
    names = _names(question, topic)
    if not names:
        return False
    held = await relevance.coverage(" ".join(names), "en")
    return held is not None and held.together >= NAMES_HELD
