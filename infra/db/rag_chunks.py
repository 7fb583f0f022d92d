"""SQL for the lexical half of RAG retrieval: chunk text per collection version (migration 0008).

The rows mirror the points of the version's vector collection (same point ids, same text), are
written by the same re-embedding batch and read with the same version name, so reads switch
versions for both lists at once (retrieval/reembed.py, retrieval/hybrid.py).

The question becomes an OR of its lexemes, per chunk language in that language's own
configuration (stop words dropped, words stemmed): a question is prose, and requiring every word
(websearch_to_tsquery's AND) would find nothing for most of them. Ranking: the sum of the matched
lexemes' inverse document frequency in the version (a title match counts double), plus
ts_rank_cd (cover density) to break ties. IDF is what makes a rare "-27820" or "gzipread"
outweigh "ruby" and "cve"; plain ts_rank_cd has no notion of rarity (dev set: lexical hit@5
0.81 with ts_rank_cd alone, 0.94 with IDF). Document frequencies come from ``rag_lexicon``,
built once per version at finalization, so a question costs index lookups, not counts; only the
``KEPT_TERMS`` rarest lexemes of each language select and score candidates, which keeps the
ranked set small. A score is given in units of the IDF of a lexeme found in a single chunk of the
version, so it reads the same on any collection size: 1.0 is about one unique word matched, 2.0 a
unique word in the title or two such words (retrieval/hybrid.py weighs the list by it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infra.db.search import TS_CONFIG, PoolOrConnection
from infra.results import language_codes


@dataclass(frozen=True)
class ChunkRow:
    point_id: str
    localization_id: str
    article_id: str
    language: str
    position: int
    title: str
    text: str
    content_hash: str
    embedding: bytes | None = None  # the point's vector, little-endian float32 (the request gate reads it)


@dataclass(frozen=True)
class LexicalHit:
    score: float
    chunk: ChunkRow


_COLUMNS = "point_id, localization_id, article_id, language, position, title, text, content_hash"


async def write_chunks(conn: PoolOrConnection, collection: str, rows: Sequence[ChunkRow]) -> None:
    """Insert or replace these chunks of ``collection`` (idempotent: a batch may run twice)."""
    if not rows:
        return
    await conn.executemany(
        f"""
        INSERT INTO rag_chunks (collection, {_COLUMNS}, embedding)
        VALUES ($1, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10)
        ON CONFLICT (collection, point_id) DO UPDATE SET
            localization_id = EXCLUDED.localization_id, article_id = EXCLUDED.article_id,
            language = EXCLUDED.language, position = EXCLUDED.position, title = EXCLUDED.title,
            text = EXCLUDED.text, content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding
        """,  # noqa: S608 (constant column list)
        [(collection, r.point_id, r.localization_id, r.article_id, r.language, r.position, r.title, r.text,
          r.content_hash, r.embedding) for r in rows],
    )


async def delete_localization_chunks(
    conn: PoolOrConnection, collection: str, localization_ids: Sequence[str], *, keep: Sequence[str] = ()
) -> None:
    """Delete these localizations' chunks except the point ids in ``keep`` (as the vector store's
    ``delete_localizations``)."""
    await conn.execute(
        """
        DELETE FROM rag_chunks
        WHERE collection = $1 AND localization_id = ANY($2::text[]) AND NOT (point_id = ANY($3::uuid[]))
        """,
        collection, list(localization_ids), list(keep),
    )


async def build_lexicon(conn: PoolOrConnection, collection: str) -> int:
    """(Re)compute the version's lexeme document frequencies from its chunks; returns the number
    of lexemes. Run once per version, when its chunks are complete (finalization)."""
    await conn.execute("DELETE FROM rag_lexicon WHERE collection = $1", collection)
    await conn.execute(
        """
        INSERT INTO rag_lexicon (collection, lexeme, ndoc)
        SELECT $1, word, ndoc FROM ts_stat(format('SELECT search_vector FROM rag_chunks WHERE collection = %L', $1::text))
        UNION ALL SELECT $1, '', count(*) FROM rag_chunks WHERE collection = $1
        """,
        collection,
    )
    return int(await conn.fetchval("SELECT count(*) - 1 FROM rag_lexicon WHERE collection = $1", collection))


async def count_chunks(conn: PoolOrConnection, collection: str) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM rag_chunks WHERE collection = $1", collection))


async def chunks_of(conn: PoolOrConnection, collection: str, localization_ids: Sequence[str]) -> list[ChunkRow]:
    rows = await conn.fetch(
        "SELECT point_id::text, localization_id, article_id, language, position, title, text, content_hash "
        "FROM rag_chunks WHERE collection = $1 AND localization_id = ANY($2::text[]) "
        "ORDER BY localization_id, position",
        collection, list(localization_ids),
    )
    return [ChunkRow(**dict(r)) for r in rows]


async def chunk_embeddings(conn: PoolOrConnection, collection: str, *, limit: int) -> list[bytes]:
    """Up to ``limit`` of the version's chunk vectors (float32 bytes). Point ids are UUIDs derived
    from content, so the first ``limit`` in id order are a sample spread over the whole version."""
    rows = await conn.fetch(
        "SELECT embedding FROM rag_chunks WHERE collection = $1 AND embedding IS NOT NULL ORDER BY point_id LIMIT $2",
        collection, limit,
    )
    return [bytes(r["embedding"]) for r in rows]


async def indexed_localizations(conn: PoolOrConnection, collection: str, ids: Sequence[str]) -> list[str]:
    """Of ``ids``, the localizations with chunks in ``collection``."""
    rows = await conn.fetch(
        "SELECT DISTINCT localization_id FROM rag_chunks WHERE collection = $1 AND localization_id = ANY($2::text[])",
        collection, list(ids),
    )
    return [r["localization_id"] for r in rows]


async def invisible_indexed(conn: PoolOrConnection, collection: str) -> list[str]:
    """Localizations with chunks in ``collection`` that are hidden, unpublished or deleted since
    they were indexed: the vector query excludes them inside the engine, before its top-K."""
    rows = await conn.fetch(
        """
        SELECT DISTINCT c.localization_id FROM rag_chunks c
        LEFT JOIN localizations l ON l.id = c.localization_id
        WHERE c.collection = $1 AND (l.id IS NULL OR NOT l.published OR l.hidden)
        """,
        collection,
    )
    return [r["localization_id"] for r in rows]


# The question's words that are a stop word in *any* of the languages ("ist", "was", "и", "the"):
# under another language's configuration they stay words, and being rare in that language's
# chunks they would count among the question's rarest lexemes and push out the name it asks
# about (a German question over English chunks, "Was ist Ruby::Box?", selected "ist").
_STOP_WORDS = (
    "SELECT coalesce(string_agg(w, ' '), '') AS text "
    "FROM regexp_split_to_table(lower($2), '[[:space:][:punct:]]+') AS w WHERE w <> '' AND ("
    + " OR ".join(f"to_tsvector('{cfg}', w) = ''::tsvector" for cfg in TS_CONFIG.values()) + ")"
)
# The question's lexemes per language, in that language's own configuration (every language's
# stop words dropped, words stemmed). Lexemes with a backslash are left out: tsquery quoting
# cannot hold them safely, and no lexeme of a question needs one.
_TERMS = " UNION ALL ".join(
    f"SELECT '{lang}'::text AS language, u.lexeme, u.positions, quote_literal(u.lexeme)::tsquery AS query, "  # noqa: S608
    f"(quote_literal(u.lexeme) || ':A')::tsquery AS in_title "
    f"FROM unnest(to_tsvector('{cfg}', $2)) AS u WHERE strpos(u.lexeme, E'\\\\') = 0 "
    f"AND NOT u.lexeme = ANY(tsvector_to_array(to_tsvector('{cfg}', (SELECT text FROM stop_words))))"
    for lang, cfg in TS_CONFIG.items()
)
# Only the question's rarest lexemes (in the version's lexicon) per language select and score
# candidates: common ones ("ruby" in a Ruby news corpus, German "in" under the German
# configuration of an English question) would rank thousands of chunks for little information.
# The rarest are what a question names (a CVE number, a package, a version). Measured this way
# on the dev and test halves (docs/rag.md).
KEPT_TERMS = 2
# Rarity is judged per *word* of the question, across languages: a word's document frequency is
# the largest of its lexemes' under the three configurations (the same token position in each).
# "notes" stems to a German 'not' found in 9 chunks, but English 'note' is in 174: a common word,
# not a name, so under German it no longer outranks "Fiber" (dev: xl-021). A name is rare in
# every language's form.


# $1 collection, $2 question, $3 languages, $4 scope (localization ids), $5 limit, $6 kept terms:
# the rarest terms per language weighted by idf (title hits twice), plus ts_rank_cd.
_LEXICAL_SEARCH = f"""
    WITH stop_words AS MATERIALIZED ({_STOP_WORDS}),
    terms AS MATERIALIZED ({_TERMS}),
    word_ndoc AS MATERIALIZED (
        SELECT p.position, max(s.ndoc) AS ndoc
        FROM terms t CROSS JOIN LATERAL unnest(t.positions) AS p(position)
        JOIN rag_lexicon s ON s.collection = $1 AND s.lexeme = t.lexeme
        GROUP BY p.position
    ),
    total AS MATERIALIZED (  -- the version's chunk count, and the IDF of a lexeme in one chunk: scores in its units
        SELECT ndoc, ln(1 + (ndoc + 0.5) / 1.5) AS unit_idf FROM rag_lexicon WHERE collection = $1 AND lexeme = ''
    ),
    weighted AS MATERIALIZED (
        SELECT t.language, t.query, t.in_title,
               ln(1 + (total.ndoc + 0.5) / (s.ndoc + 0.5)) AS idf,
               row_number() OVER (
                   PARTITION BY t.language
                   ORDER BY (SELECT max(w.ndoc) FROM word_ndoc w WHERE w.position = ANY(t.positions)), s.ndoc
               ) AS rarity
        FROM terms t
        CROSS JOIN total
        JOIN rag_lexicon s ON s.collection = $1 AND s.lexeme = t.lexeme
    ),
    kept AS MATERIALIZED (SELECT * FROM weighted WHERE rarity <= $6),
    q AS MATERIALIZED (
        SELECT language, string_agg(query::text, ' | ')::tsquery AS query FROM kept GROUP BY language
    )
    SELECT c.point_id::text, c.localization_id, c.article_id, c.language, c.position, c.title, c.text,
           c.content_hash,
           ((SELECT sum(w.idf * CASE WHEN c.search_vector @@ w.in_title THEN 2 ELSE 1 END) FROM kept w
             WHERE w.language = c.language AND c.search_vector @@ w.query)
            + ts_rank_cd(c.search_vector, q.query)) / total.unit_idf AS score
    FROM rag_chunks c
    CROSS JOIN total
    JOIN q ON q.language = c.language
    JOIN localizations l ON l.id = c.localization_id AND l.published AND NOT l.hidden
    WHERE c.collection = $1
      AND c.search_vector @@ q.query
      AND ($3::text[] IS NULL OR c.language = ANY($3::text[]))
      AND ($4::text[] IS NULL OR c.localization_id = ANY($4::text[]))
    ORDER BY score DESC, c.localization_id, c.position
    LIMIT $5
"""  # noqa: S608 (constant fragments)


async def lexical_search(
    conn: PoolOrConnection,
    collection: str,
    question: str,
    *,
    limit: int,
    language: str | Sequence[str] | None = None,
    scope: Sequence[str] | None = None,
) -> list[LexicalHit]:
    """The top-``limit`` chunks of ``collection`` for ``question``; ``language``, ``scope``
    (localization ids) and visibility (published, not hidden) restrict the rows *before* the
    ranking and the limit. An empty scope returns [] without a query."""
    if scope is not None and not scope:
        return []
    languages = language_codes(language)
    if languages is not None and (not languages or any(lang not in TS_CONFIG for lang in languages)):
        raise ValueError(f"unsupported language filter {language!r}")
    rows = await conn.fetch(
        _LEXICAL_SEARCH,
        collection, question, languages, list(scope) if scope is not None else None, limit,
        KEPT_TERMS,
    )
    return [
        LexicalHit(float(r["score"]), ChunkRow(**{k: r[k] for k in _COLUMNS.split(", ")}))
        for r in rows
    ]

