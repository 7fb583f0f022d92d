"""The API key cache (infra/db/key_cache.py) against the real PostgreSQL and its notifications:
a verified key is served from memory, a revocation is seen on the next check, a check that
overlapped a revocation does not keep its stale answer, and a lost listening connection turns
the cache off until it is back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from infra.db import key_cache
from infra.db.api_keys import ApiKey, IssuedKey, create_key, revoke_key, verify_token
from infra.db.job_listener import JobEventListener
from infra.db.key_cache import ApiKeyCache
from tests.infra.conftest import terminate_listeners


@pytest.fixture
async def listener(fresh_dsn: str) -> AsyncIterator[JobEventListener]:
    """Not started: a channel is subscribed to before the listener starts."""
    listener = JobEventListener(fresh_dsn)
    yield listener
    await listener.close()


@pytest.fixture
async def cache(listener: JobEventListener) -> ApiKeyCache:
    """A cache on a started listener."""
    cache = ApiKeyCache(listener)
    await listener.start()
    return cache


async def _issue(pool: asyncpg.Pool, name: str = "cache-test") -> IssuedKey:
    async with pool.acquire() as conn:
        return await create_key(conn, name)


async def _until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not true within {timeout_s}s")


class CountingPool:
    """The real pool, counting the connections checked out (each is one key lookup here)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.acquired = 0

    def acquire(self) -> object:
        self.acquired += 1
        return self.pool.acquire()


async def test_a_verified_key_is_served_from_memory_until_it_is_revoked(
    pool: asyncpg.Pool, cache: ApiKeyCache
) -> None:
    issued, other = await _issue(pool), await _issue(pool, "other")
    counting = CountingPool(pool)

    assert await cache.verify(counting, issued.token) == issued.key
    assert await cache.verify(counting, issued.token) == issued.key
    assert await cache.verify(counting, other.token) == other.key
    assert counting.acquired == 2 and len(cache) == 2  # the second check of `issued` asked nobody

    async with pool.acquire() as conn:
        assert await revoke_key(conn, issued.key.id)
    await _until(lambda: len(cache) == 1)  # the revocation's notification dropped it, only it
    assert await cache.verify(counting, issued.token) is None
    assert await cache.verify(counting, other.token) == other.key
    assert counting.acquired == 3


async def test_unknown_and_wrong_tokens_are_checked_every_time_and_never_kept(
    pool: asyncpg.Pool, cache: ApiKeyCache
) -> None:
    issued = await _issue(pool)
    counting = CountingPool(pool)
    wrong_secret = issued.key.id + ".not-the-secret"
    for token in (wrong_secret, wrong_secret, "tk_nobody.secret"):
        assert await cache.verify(counting, token) is None
    assert counting.acquired == 3 and len(cache) == 0


async def test_a_check_that_overlapped_a_revocation_does_not_keep_its_answer(
    pool: asyncpg.Pool, cache: ApiKeyCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = await _issue(pool)
    seen: list[int] = []

    async def slow_verify(conn: asyncpg.Connection, token: str) -> ApiKey | None:
        key = await verify_token(conn, token)  # read before the revocation: still valid
        version = cache._version
        async with pool.acquire() as other:
            await revoke_key(other, issued.key.id)
        await _until(lambda: cache._version != version)  # its notification has arrived meanwhile
        seen.append(1)
        return key

    monkeypatch.setattr(key_cache, "verify_token", slow_verify)
    assert await cache.verify(pool, issued.token) == issued.key  # answered as read ...
    assert seen and len(cache) == 0  # ... but not kept, since the key changed during the check
    monkeypatch.setattr(key_cache, "verify_token", verify_token)
    assert await cache.verify(pool, issued.token) is None


async def test_without_its_listening_connection_the_cache_is_bypassed_and_emptied(
    pool: asyncpg.Pool, listener: JobEventListener, cache: ApiKeyCache
) -> None:
    issued = await _issue(pool)
    counting = CountingPool(pool)
    await cache.verify(counting, issued.token)
    assert len(cache) == 1

    assert await terminate_listeners(pool) == 1
    await _until(lambda: len(cache) == 0)  # a notification may be missed now: nothing is trusted
    await _until(lambda: listener.connected, timeout_s=15)
    before = counting.acquired
    assert await cache.verify(counting, issued.token) == issued.key
    assert await cache.verify(counting, issued.token) == issued.key
    assert counting.acquired == before + 1  # cached again once listening again


async def test_subscribing_twice_to_a_channel_is_refused(listener: JobEventListener) -> None:
    ApiKeyCache(listener)
    with pytest.raises(ValueError, match="already listened to"):
        ApiKeyCache(listener)
