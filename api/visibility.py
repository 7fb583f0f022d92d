"""Stored results shown as they are now: no article that is no longer visible (SPEC §4).

A job's result and the page cache keep the articles they found; an article hidden or unpublished
since then must not be served from them. A search page holding one is searched again (the same
filters, so the page stays full); answer sources that are no longer visible are dropped.
"""

from __future__ import annotations

import dataclasses

import asyncpg
import redis.asyncio as aioredis

from infra.db.jobs import JobRow
from infra.db.visibility import visible_ids
from infra.pages import LoadedPage, load_page
from infra.results import ArticlesPage, NormalizedSearch, QuestionResult
from infra.settings import Settings
from retrieval.search import search_articles


async def visible_page(
    pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings, search: NormalizedSearch, page: int
) -> LoadedPage:
    """Page `page` of `search`: from the cache when all its articles are still visible, else searched."""

    async def fetch(filters: NormalizedSearch) -> ArticlesPage:
        return await search_articles(pool, filters)

    async def visible(ids: list[str]) -> set[str]:
        return await visible_ids(pool, ids)

    return await load_page(redis, settings, search, page, fetch=fetch, visible=visible)


async def visible_result(
    pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings, result: QuestionResult
) -> QuestionResult:
    """`result` without the articles that are no longer visible (unchanged when all still are)."""
    ids = {source.article_id for source in result.sources}
    if result.articles is not None:
        ids |= {item.id for item in result.articles.items}
    if not ids:
        return result
    shown = await visible_ids(pool, ids)
    if ids <= shown:
        return result
    update: dict[str, object] = {"sources": [s for s in result.sources if s.article_id in shown]}
    if result.articles is not None and result.search is not None:
        if any(item.id not in shown for item in result.articles.items):
            update["articles"] = (await visible_page(pool, redis, settings, result.search, result.articles.page)).articles
    return result.model_copy(update=update)


async def visible_job(pool: asyncpg.Pool, redis: aioredis.Redis, settings: Settings, job: JobRow) -> JobRow:
    """`job` with its stored result as `visible_result` shows it."""
    if job.result is None:
        return job
    shown = await visible_result(pool, redis, settings, job.result)
    return job if shown is job.result else dataclasses.replace(job, result=shown)
