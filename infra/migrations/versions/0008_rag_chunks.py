"""Chunk text for the lexical half of hybrid RAG retrieval, one row per vector point.

`rag_chunks` belongs to a collection version, like the points of that version's Qdrant
collection: the re-embedding batch that writes a localization's points writes its rows (same
point ids), finalization checks both hold the same number of chunks, and reads use the version
that serves vectors, so the switch to a new version moves both at once. Dropping a retired
version (a `collection_versions` row) drops its rows (ON DELETE CASCADE).

`search_vector` is the chunk's title (weight A) and text (weight B) in its language's own
text-search configuration, as `localizations.search_vector` (migration 0001).

A version indexed before this migration has no rows: the lexical half finds nothing there until
the next re-embedding run (`turnout reembed`).

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"

_CONFIG = "CASE language WHEN 'ru' THEN 'russian'::regconfig WHEN 'de' THEN 'german'::regconfig " \
          "ELSE 'english'::regconfig END"

UPGRADE = [
    f"""
    CREATE TABLE rag_chunks (
        collection text NOT NULL REFERENCES collection_versions (name) ON DELETE CASCADE,
        point_id uuid NOT NULL,
        localization_id text NOT NULL,
        article_id text NOT NULL,
        language text NOT NULL CHECK (language IN ('ru', 'en', 'de')),
        position integer NOT NULL,
        title text NOT NULL,
        text text NOT NULL,
        content_hash text NOT NULL,
        search_vector tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector({_CONFIG}, title), 'A') || setweight(to_tsvector({_CONFIG}, text), 'B')
        ) STORED,
        PRIMARY KEY (collection, point_id)
    )
    """,
    "CREATE INDEX rag_chunks_localization ON rag_chunks (collection, localization_id)",
    "CREATE INDEX rag_chunks_search_vector ON rag_chunks USING gin (search_vector)",
    # Document frequency of each lexeme in a version (ts_stat at finalization, before the version
    # serves reads): the lexical ranking's IDF. The row with the empty lexeme holds the number of
    # chunks (no real lexeme is empty).
    """
    CREATE TABLE rag_lexicon (
        collection text NOT NULL REFERENCES collection_versions (name) ON DELETE CASCADE,
        lexeme text NOT NULL,
        ndoc integer NOT NULL,
        PRIMARY KEY (collection, lexeme)
    )
    """,
]

DOWNGRADE = ["DROP TABLE IF EXISTS rag_lexicon", "DROP TABLE IF EXISTS rag_chunks"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
