"""Per-API-key submission rate limit (`limits`, moving window, stored in Redis).

Shared by every API process through Redis; one limiter per API process, on its state (api/state.py). A refused submission gets 429 with `Retry-After`
(seconds until the window admits one more).
"""

from __future__ import annotations

import logging
import math
import time

from limits import RateLimitItemPerMinute
from limits.aio.storage import RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter

from api.errors import RETRY_AFTER, ApiError
from infra.redis import TIMEOUTS, key
from infra.settings import Settings
from infra.transient import REDIS_FAILED

log = logging.getLogger("turnout.api")


class SubmissionLimiter:
    def __init__(self, settings: Settings) -> None:
        settings.require_services(database=False)
        storage = RedisStorage(
            "async+" + settings.redis_url, implementation="redispy", key_prefix=key(settings, "ratelimit"), **TIMEOUTS
        )
        self._limiter = MovingWindowRateLimiter(storage)
        self.per_minute = settings.limits.submissions_per_minute
        self._item = RateLimitItemPerMinute(self.per_minute)

    async def hit(self, api_key_id: str) -> None:
        """Count one submission for the key, or raise 429 (503 when Redis is unreachable)."""
        try:
            allowed = await self._limiter.hit(self._item, "submissions", api_key_id)
            if allowed:
                return
            stats = await self._limiter.get_window_stats(self._item, "submissions", api_key_id)
        except REDIS_FAILED as exc:
            log.warning("rate limiter unavailable: %s", exc)
            raise ApiError(503, "unavailable", "the rate limiter's store (Redis) is unavailable; retry shortly",
                           headers=RETRY_AFTER) from exc
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise ApiError(
            429,
            "rate_limited",
            f"at most {self.per_minute} submissions per minute for this key; retry in {retry_after}s",
            {"limitPerMinute": self.per_minute, "retryAfterS": retry_after},
            headers={"Retry-After": str(retry_after)},
        )

