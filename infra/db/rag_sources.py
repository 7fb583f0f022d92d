"""What RAG answers need from the articles table: titles of the localizations it cites,
visible ones only (a chunk of an article hidden since indexing is never cited)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
