"""The page cache: search pages in Redis, keyed by the normalized filters (not by job).

Two jobs that ran the same filters share pages. The key is a hash of the canonical wire form
of `NormalizedSearch` with the page set and the `adjustments` notes dropped (they describe how
a request was clamped, not what was executed). A miss is filled by the caller's deterministic
search (`load_page(..., fetch=...)`), so serving a page never needs the LLM.

A cached page may outlive its articles' visibility (hidden or unpublished after it was cached):
every hit is checked (`visible`, one lookup of the page's ids) and a page holding an article that
is no longer visible is searched again and replaced, whatever its TTL. Its sibling pages (same
filters) are dropped too: the hide moved every later article up one place, so they refill in step.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Literal, NamedTuple

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from infra.redis import key
from infra.results import ArticlesPage, NormalizedSearch
from infra.settings import Settings

log = logging.getLogger("turnout.pages")

PageSource = Literal["cache", "search"]
VisibleIds = Callable[[list[str]], Awaitable[set[str]]]  # the ids of the list that may be shown now


class LoadedPage(NamedTuple):
    """A page and where it came from. `cache_reachable` False: the cache's Redis failed on this
    request (the page was searched), so the caller's own Redis writes for it (a metric) would only
    wait out another timeout."""

    articles: ArticlesPage
    source: PageSource
    cache_reachable: bool


def page_filters(search: NormalizedSearch, page: int) -> NormalizedSearch:
    """The filters that produce `page`: the same search, another page, no clamp notes."""
    return search.model_copy(update={"page": page, "adjustments": []})


def page_key(settings: Settings, search: NormalizedSearch, page: int) -> str:
    canonical = json.dumps(page_filters(search, page).wire(), sort_keys=True, separators=(",", ":"))
    return key(settings, "page", hashlib.sha256(canonical.encode()).hexdigest())


async def get_page(redis: aioredis.Redis, settings: Settings, search: NormalizedSearch, page: int) -> ArticlesPage | None:
    raw = await redis.get(page_key(settings, search, page))
    return ArticlesPage.model_validate_json(raw) if raw is not None else None


async def put_page(redis: aioredis.Redis, settings: Settings, search: NormalizedSearch, articles: ArticlesPage) -> None:
    """Cache `articles` as the page `search.page` of `search`."""
    await redis.set(
        page_key(settings, search, search.page), articles.model_dump_json(by_alias=True), ex=settings.page_cache_ttl_s
    )


async def drop_pages(redis: aioredis.Redis, settings: Settings, search: NormalizedSearch, last: int) -> None:
    """Forget pages 1..`last` of `search`."""
    await redis.delete(*(page_key(settings, search, n) for n in range(1, last + 1)))


async def load_page(
    redis: aioredis.Redis,
    settings: Settings,
    search: NormalizedSearch,
    page: int,
    *,
    fetch: Callable[[NormalizedSearch], Awaitable[ArticlesPage]],
    visible: VisibleIds,
) -> LoadedPage:
    """Page `page` of `search` from the cache, or from `fetch` (then cached). A cached page with
    an article `visible` no longer admits is fetched again (and the cache entry replaced).

    The cache is an optimisation: when Redis is unavailable the page still comes from `fetch`.
    """
    reachable = True
    try:
        cached = await get_page(redis, settings, search, page)
    except RedisError as exc:
        log.warning("page cache read failed, searching instead: %s", exc)
        cached, reachable = None, False
    if cached is not None:
        ids = [item.id for item in cached.items]
        if set(ids) <= await visible(ids):
            return LoadedPage(cached, "cache", cache_reachable=True)
        log.info("cached page %s holds an article no longer visible; searching again", page)
        try:
            await drop_pages(redis, settings, search, max(cached.total_pages, page))
        except RedisError as exc:
            log.warning("page cache drop failed: %s", exc)
    filters = page_filters(search, page)
    articles = await fetch(filters)
    if not reachable:  # a second wait on a Redis that just failed would only delay the answer
        return LoadedPage(articles, "search", cache_reachable=False)
    try:
        await put_page(redis, settings, filters, articles)
    except RedisError as exc:
        log.warning("page cache write failed: %s", exc)
        return LoadedPage(articles, "search", cache_reachable=False)
    return LoadedPage(articles, "search", cache_reachable=True)
