"""The shared LLM rate limit: requests and tokens per minute, in Redis, for every router process.

Built on the `limits` library's sliding-window counter (an atomic Lua script per hit, O(1)
memory whatever the token count), so all workers on all machines draw from one budget.
A call reserves its estimated tokens before it is made; the provider's real count is known
only afterwards, so the estimate errs high (prompt characters / 3 + the reply budget), and the
unused part goes back once the call has answered (`refund`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import RedisStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from infra.redis import TIMEOUTS, key
from infra.settings import ConfigError, Settings

# Longest single sleep between two looks at the window: a slot may free up earlier than the
# window's nominal reset, and another process may release nothing, so poll.
_MAX_POLL_S = 1.0
_MIN_POLL_S = 0.05


class RateLimitDeadline(TimeoutError):
    """Waiting for the shared limiter would run past the job's deadline."""


def storage_uri(redis_url: str) -> str:
    if not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"the LLM rate limiter needs a redis:// URL, got {redis_url!r}")
    return "async+" + redis_url


class LLMRateLimiter:
    def __init__(
        self,
        settings: Settings,
        *,
        requests: RateLimitItem,
        tokens: RateLimitItem,
        bucket: str = "llm",
    ) -> None:
        settings.require_services(database=False)
        self.requests = requests
        self.tokens = tokens
        self.bucket = bucket
        storage = RedisStorage(
            storage_uri(settings.redis_url), implementation="redispy", key_prefix=key(settings, "ratelimit"),
            **TIMEOUTS,
        )
        self._limiter = SlidingWindowCounterRateLimiter(storage)

    @classmethod
    def from_settings(cls, settings: Settings, *, bucket: str = "llm", window_s: int = 60) -> LLMRateLimiter:
        """Per-minute limits from configuration (``window_s`` exists so tests can use a short window)."""
        lim = settings.limits
        return cls(
            settings,
            requests=RateLimitItemPerSecond(lim.llm_requests_per_minute, window_s),
            tokens=RateLimitItemPerSecond(lim.llm_tokens_per_minute, window_s),
            bucket=bucket,
        )

    def _cost(self, tokens: int) -> int:
        # A single call bigger than the whole per-minute budget still has to be able to run.
        return max(1, min(tokens, self.tokens.amount))

    async def try_acquire(self, tokens: int, *, contended: bool = True) -> float | None:
        """Take one request and ``tokens`` tokens now; None when granted, else seconds to wait.

        Uncontended (a first try), both are taken at once: one round trip. When a try has already
        been refused, each is tested first, so a caller waiting for tokens does not keep spending
        request slots (nor the reverse) on every look at the window.
        """
        cost = self._cost(tokens)
        if contended:
            has_tokens, has_request = await asyncio.gather(
                self._limiter.test(self.tokens, self.bucket, "tokens", cost=cost),
                self._limiter.test(self.requests, self.bucket, "requests"),
            )
            if not has_tokens:
                return await self._wait_hint(self.tokens, "tokens")
            if not has_request:
                return await self._wait_hint(self.requests, "requests")
        took_request, took_tokens = await asyncio.gather(
            self._limiter.hit(self.requests, self.bucket, "requests"),
            self._limiter.hit(self.tokens, self.bucket, "tokens", cost=cost),
        )
        # A refused half leaves the other one spent: it errs on the safe side (fewer calls, never more).
        if not took_request:
            return await self._wait_hint(self.requests, "requests")
        if not took_tokens:
            return await self._wait_hint(self.tokens, "tokens")
        return None

    async def acquire(
        self,
        tokens: int,
        *,
        deadline: float | None = None,
        on_wait: Callable[[float], Awaitable[None]] | None = None,
    ) -> float:
        """Block (asynchronously) until granted; returns the seconds waited."""
        started = time.monotonic()
        announced = False
        first = True
        while True:
            wait = await self.try_acquire(tokens, contended=not first)
            first = False
            if wait is None:
                return time.monotonic() - started
            if not announced and on_wait is not None:
                await on_wait(wait)
                announced = True
            if deadline is not None and time.monotonic() + min(wait, _MAX_POLL_S) >= deadline:
                raise RateLimitDeadline(
                    f"the shared LLM rate limit ({self.requests.amount} requests / {self.tokens.amount} tokens "
                    f"per {self.requests.get_expiry():g}s) had no room before the job's deadline"
                )
            await asyncio.sleep(min(max(wait, _MIN_POLL_S), _MAX_POLL_S))

    async def refund(self, reserved: int, used: int) -> None:
        """Give back what a granted call reserved but did not use (its real token count is known).

        The sliding-window counter has no "release": a hit with a negative cost lowers the current
        window's count by the same Lua script (it only refuses costs above the limit). Never more
        than was taken, so the limit stays an upper bound on real usage.
        """
        unused = self._cost(reserved) - max(0, used)
        if unused > 0:
            await self._limiter.hit(self.tokens, self.bucket, "tokens", cost=-unused)

    async def _wait_hint(self, item: RateLimitItem, name: str) -> float:
        stats = await self._limiter.get_window_stats(item, self.bucket, name)
        return max(_MIN_POLL_S, stats.reset_time - time.time())

    async def clear(self) -> None:
        await self._limiter.clear(self.requests, self.bucket, "requests")
        await self._limiter.clear(self.tokens, self.bucket, "tokens")
