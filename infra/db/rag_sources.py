"""What RAG answers need from the articles table: titles of the localizations it cites,
visible ones only (a chunk of an article hidden since indexing is never cited)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import asyncpg


@dataclass(frozen=True)
class SourceArticle:
    id: str
    article_id: str
    language: str
    title: str


async def visible_sources(db: asyncpg.Pool | asyncpg.Connection, ids: Sequence[str]) -> dict[str, SourceArticle]:
    rows = await db.fetch(
        """
        SELECT id, article_id, language, title FROM localizations
        WHERE id = ANY($1::text[]) AND published AND NOT hidden
        """,
        list(ids),
    )
    return {r["id"]: SourceArticle(**dict(r)) for r in rows}


async def published_between(
    db: asyncpg.Pool | asyncpg.Connection, date_from: date | None, date_to: date | None,
    language: str | Sequence[str] | None, *, among: Sequence[str] | None = None, limit: int | None = None,
) -> list[str]:
    """The visible localizations published from ``date_from`` through ``date_to`` (UTC days; None: open),
    in ``language`` (a code, several, or None: every language); with ``among``, only those of these ids;
    with ``limit``, at most that many (which ones is unspecified: a caller asks for one more than it takes
    to learn that there are more)."""
    start = datetime.combine(date_from, time.min, UTC) if date_from is not None else None
    end = datetime.combine(date_to + timedelta(days=1), time.min, UTC) if date_to is not None else None
    languages = [language] if isinstance(language, str) else list(language) if language is not None else None
    rows = await db.fetch(
        """
        SELECT id FROM localizations
        WHERE published AND NOT hidden
          AND ($1::timestamptz IS NULL OR created_at >= $1) AND ($2::timestamptz IS NULL OR created_at < $2)
          AND ($3::text[] IS NULL OR language = ANY($3::text[]))
          AND ($4::text[] IS NULL OR id = ANY($4::text[]))
        LIMIT $5
        """,
        start, end, languages, list(among) if among is not None else None, limit,
    )
    return [r["id"] for r in rows]
