"""Article and localization writes (import) and reads by id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from infra.corpus import ArticleRecord

_STAGE_COLUMNS = (
    "id", "article_id", "language", "title", "summary", "body", "body_format", "body_text", "url", "slug",
    "author", "published", "hidden", "created_at", "updated_at", "content_hash", "source", "kind", "tags",
)


@dataclass(frozen=True)
class UpsertCounts:
    inserted: int
    updated: int
    unchanged: int


_CREATE_STAGE = """
    CREATE TEMP TABLE import_stage (
        id text, article_id text, language text, title text, summary text, body text,
        body_format text, body_text text, url text, slug text, author text, published boolean,
        hidden boolean, created_at timestamptz, updated_at timestamptz, content_hash text,
        source text, kind text, tags text[]
    ) ON COMMIT DROP
    """

_UPSERT_ARTICLES = """
    INSERT INTO articles (id, source, kind, tags, created_at)
    SELECT DISTINCT ON (article_id) article_id, source, kind, tags, created_at
    FROM import_stage ORDER BY article_id, created_at
    ON CONFLICT (id) DO UPDATE SET created_at = LEAST(articles.created_at, EXCLUDED.created_at)
    WHERE EXCLUDED.created_at < articles.created_at
    """

_UPSERT_LOCALIZATIONS = """
    INSERT INTO localizations AS l (
        id, article_id, language, title, summary, body, body_format, body_text, url, slug, author,
        published, hidden, created_at, updated_at, content_hash)
    SELECT id, article_id, language, title, summary, body, body_format, body_text,
           url, slug, author, COALESCE(published, true), COALESCE(hidden, false), created_at,
           updated_at, content_hash
    FROM import_stage
    ON CONFLICT (id) DO UPDATE SET
        article_id = EXCLUDED.article_id, language = EXCLUDED.language, title = EXCLUDED.title,
        summary = EXCLUDED.summary, body = EXCLUDED.body, body_format = EXCLUDED.body_format,
        body_text = EXCLUDED.body_text, url = EXCLUDED.url, slug = EXCLUDED.slug,
        author = EXCLUDED.author, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
        content_hash = EXCLUDED.content_hash,
        published = COALESCE((SELECT published FROM import_stage WHERE id = EXCLUDED.id LIMIT 1),
                             l.published),
        hidden = COALESCE((SELECT hidden FROM import_stage WHERE id = EXCLUDED.id LIMIT 1), l.hidden),
        imported_at = now()
    WHERE l.content_hash IS DISTINCT FROM EXCLUDED.content_hash
       OR l.article_id IS DISTINCT FROM EXCLUDED.article_id
       OR l.published IS DISTINCT FROM COALESCE(
            (SELECT published FROM import_stage WHERE id = EXCLUDED.id LIMIT 1), l.published)
       OR l.hidden IS DISTINCT FROM COALESCE(
            (SELECT hidden FROM import_stage WHERE id = EXCLUDED.id LIMIT 1), l.hidden)
    RETURNING (xmax = 0) AS inserted
    """


async def upsert_records(conn: asyncpg.Connection, records: Sequence[ArticleRecord]) -> UpsertCounts:
    """Idempotent upsert in one transaction: unchanged rows are not touched at all.

    A record id given twice keeps its last version, as if the lines were applied in order.
    """
    records = list({r.id: r for r in records}.values())
    rows = [
        (
            r.id, r.article_id, r.language, r.title, r.summary, r.body_html_or_md, r.body_format,
            r.plain_text(), r.url, r.slug, r.author, r.published, r.hidden, r.created_at, r.updated_at,
            r.hash(), r.source, r.kind, r.tags,
        )
        for r in records
    ]
    async with conn.transaction():
        await conn.execute(_CREATE_STAGE)
        await conn.copy_records_to_table("import_stage", records=rows, columns=_STAGE_COLUMNS)
        await conn.execute("CREATE UNIQUE INDEX ON import_stage (id)")
        await conn.execute(_UPSERT_ARTICLES)
        changed = await conn.fetch(_UPSERT_LOCALIZATIONS)
    inserted = sum(1 for row in changed if row["inserted"])
    updated = len(changed) - inserted
    return UpsertCounts(inserted=inserted, updated=updated, unchanged=len(records) - inserted - updated)


async def set_visibility(
    conn: asyncpg.Connection, ids: Sequence[str], *, published: bool | None = None, hidden: bool | None = None
) -> int:
    """Mark localizations published/hidden (operators, tests). Returns rows changed."""
    result: str = await conn.execute(
        """
        UPDATE localizations SET published = COALESCE($2, published), hidden = COALESCE($3, hidden)
        WHERE id = ANY($1::text[])
        """,
        list(ids), published, hidden,
    )
    return int(result.split()[-1])


async def count_localizations(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM localizations"))
