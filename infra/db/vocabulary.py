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

from dataclasses import dataclass

from infra.db.search import TS_CONFIG, PoolOrConnection


@dataclass(frozen=True)
class LexemeStats:
    """How the collection holds a question's lexemes."""

    documents: int  # visible localizations (an estimate for a large table)
    frequencies: dict[str, int]  # lexeme -> visible localizations holding it (capped)
    together: list[frozenset[str]]  # per candidate article: which of the lexemes it holds


_STATS = """
WITH terms AS (
    SELECT DISTINCT x AS lexeme, quote_literal(x)::tsquery AS query
    FROM unnest(tsvector_to_array(to_tsvector($1::regconfig, $2))) AS x
    -- a hyphenated compound ("root-zertifikat") is also indexed as its parts: the parts carry it
    WHERE strpos(x, E'\\\\') = 0 AND strpos(x, '-') = 0
), freq AS (
    SELECT t.lexeme, t.query,
           (SELECT count(*) FROM (SELECT 1 FROM localization_search s WHERE s.search_vector @@ t.query LIMIT $3) c)
               AS ndoc
    FROM terms t
), rare AS (
    SELECT lexeme, query FROM freq WHERE ndoc > 0 ORDER BY ndoc, lexeme LIMIT 3
), matching AS (
    SELECT s.search_vector FROM localization_search s
    WHERE s.search_vector @@ (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery FROM rare)
    LIMIT $4 * 10
), candidates AS (  -- the articles holding most of the rarest lexemes
    SELECT m.search_vector FROM matching m
    ORDER BY (SELECT count(*) FROM rare r WHERE m.search_vector @@ r.query) DESC
    LIMIT $4
)
SELECT 'f' AS kind, lexeme, ndoc, NULL::text[] AS held FROM freq
UNION ALL
SELECT 'c', NULL, NULL, ARRAY(SELECT f.lexeme FROM freq f WHERE c.search_vector @@ f.query) FROM candidates c
UNION ALL
-- the number of visible localizations: the planner's estimate once it is large, else counted
SELECT 'n', NULL, CASE WHEN reltuples >= 1000 THEN reltuples::bigint
                       ELSE (SELECT count(*) FROM localization_search) END, NULL
FROM pg_class WHERE oid = 'localization_search'::regclass
"""


async def lexeme_stats(
    conn: PoolOrConnection, text: str, language: str, *, count_cap: int = 200, candidates: int = 100
) -> LexemeStats:
    """The lexemes of ``text`` (in ``language``'s configuration) as the visible collection holds them."""
    config = TS_CONFIG[language]
    rows = await conn.fetch(_STATS, config, text, count_cap, candidates)
    documents = next((int(r["ndoc"]) for r in rows if r["kind"] == "n"), 0)
    frequencies = {r["lexeme"]: int(r["ndoc"]) for r in rows if r["kind"] == "f"}
    together = [frozenset(r["held"]) for r in rows if r["kind"] == "c"]
    return LexemeStats(documents, frequencies, together)
