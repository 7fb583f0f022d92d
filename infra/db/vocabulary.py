"""SQL for the request gate's relevance signal: do a question's words occur in the collection?

The question's topic words become lexemes in the question language's own text-search
configuration (stop words dropped, words stemmed), as the search stems the articles
(`localizations.search_vector`, migration 0001); each lexeme is looked up in the visible
articles' search keys (`localization_search`, GIN). Counts are capped: the gate needs "absent,
rare or common", not an exact number, and a capped count of a common word stops early.
Then the articles holding the question's rarest present lexemes are read back with the lexemes
each holds, so the gate can tell "these words occur together in one article" from "each occurs
somewhere" (router/gate.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

from infra.db.search import TS_CONFIG, PoolOrConnection


@dataclass(frozen=True)
class LexemeStats:
    """How the collection holds a question's lexemes."""

    documents: int  # visible localizations
    frequencies: dict[str, int]  # lexeme -> visible localizations holding it (capped)
    together: list[frozenset[str]]  # per candidate article: which of the lexemes it holds
    near_miss: frozenset[str] = frozenset()  # absent lexemes whose first five letters start a word that occurs


_STATS = """
WITH terms AS (
    SELECT DISTINCT x AS lexeme, quote_literal(x)::tsquery AS query
    FROM unnest(tsvector_to_array(to_tsvector($1::regconfig, $2))) AS x
    -- a hyphenated compound ("root-zertifikat") is also indexed as its parts: the parts carry it
    WHERE strpos(x, E'\\\\') = 0 AND strpos(x, '-') = 0
), counted AS (
    SELECT t.lexeme, t.query,
           (SELECT count(*) FROM (SELECT 1 FROM localization_search s WHERE s.search_vector @@ t.query LIMIT $3) c)
               AS ndoc
    FROM terms t
), freq AS (  -- an absent word of six letters or more: do words with its first five occur (a typo)?
    SELECT c.lexeme, c.query, c.ndoc,
           CASE WHEN c.ndoc = 0 AND length(c.lexeme) >= 6 THEN (SELECT count(*) FROM (
               SELECT 1 FROM localization_search s
               WHERE s.search_vector @@ (quote_literal(left(c.lexeme, 5)) || ':*')::tsquery LIMIT 1) p)
           ELSE 0 END AS near
    FROM counted c
), rare AS (
    SELECT lexeme FROM freq WHERE ndoc > 0 ORDER BY ndoc, lexeme LIMIT 3
), pairs AS (  -- every pair of the rarest present lexemes, all three together, each alone
    SELECT (quote_literal(a.lexeme) || ' & ' || quote_literal(b.lexeme))::tsquery AS query
    FROM rare a JOIN rare b ON a.lexeme < b.lexeme
    UNION ALL
    SELECT string_agg(quote_literal(lexeme), ' & ')::tsquery FROM rare HAVING count(*) = 3
    UNION ALL
    SELECT quote_literal(lexeme)::tsquery FROM rare
), candidates AS (  -- a few articles holding each combination
    SELECT DISTINCT ON (m.id) m.search_vector
    FROM pairs p CROSS JOIN LATERAL (
        SELECT s.id, s.search_vector FROM localization_search s WHERE s.search_vector @@ p.query LIMIT $4
    ) m
)
SELECT 'f' AS kind, lexeme, ndoc, near, NULL::text[] AS held FROM freq
UNION ALL
SELECT 'c', NULL, NULL, NULL, ARRAY(SELECT f.lexeme FROM freq f WHERE c.search_vector @@ f.query) FROM candidates c
"""


@asynccontextmanager
async def _connection(conn: PoolOrConnection) -> AsyncIterator[asyncpg.Connection]:
    if isinstance(conn, asyncpg.Pool):
        async with conn.acquire() as acquired:
            yield acquired
    else:
        yield conn


async def lexeme_stats(
    conn: PoolOrConnection, text: str, language: str, *, documents: int, count_cap: int = 200, candidates: int = 10
) -> LexemeStats:
    """The lexemes of ``text`` (in ``language``'s configuration) as the visible collection holds them."""
    config = TS_CONFIG[language]
    async with _connection(conn) as c, c.transaction():
        # The planner prices a scan of a small table below its GIN index, not knowing each row's
        # vector is read from TOAST: 23 ms a lexeme on the 1,209 real articles, 1.7 ms through
        # the index (EXPLAIN ANALYZE, 2026-12-02).
        await c.execute("SET LOCAL enable_seqscan = off")
        rows = await c.fetch(_STATS, config, text, count_cap, candidates)
    frequencies = {r["lexeme"]: int(r["ndoc"]) for r in rows if r["kind"] == "f"}
    near_miss = frozenset(r["lexeme"] for r in rows if r["kind"] == "f" and r["near"])
    together = [frozenset(r["held"]) for r in rows if r["kind"] == "c"]
    return LexemeStats(documents, frequencies, together, near_miss)


async def visible_documents(conn: PoolOrConnection) -> int:
    """The number of visible localizations (the relevance signal's N; read seldom, it changes slowly)."""
    return int(await conn.fetchval("SELECT count(*) FROM localization_search"))


async def recent_texts(conn: PoolOrConnection, *, articles: int = 5000, body_chars: int = 4000) -> list[str]:
    """The summaries and the bodies' openings of the most recent visible localizations (the gate learns
    the collection's capitals from them; bounded, so a large collection costs no more than this).
    Raises `asyncpg.LockNotAvailableError` after a second behind a lock (an import rewriting the table):
    the gate does not wait for what only refines it."""
    async with _connection(conn) as c, c.transaction():
        await c.execute("SET LOCAL lock_timeout = '1s'")
        rows = await c.fetch(
            "SELECT summary, left(body_text, $2) AS body FROM localizations WHERE published AND NOT hidden "
            "ORDER BY created_at DESC, id DESC LIMIT $1", articles, body_chars,
        )
    return [text for row in rows for text in (row["summary"], row["body"]) if text]
