"""Verified API keys, remembered by an API process for as long as a key change can reach it.

Every request names its key; checking it in PostgreSQL is a round trip on every request, on a
job's critical path too. A key that checked out is kept here and forgotten when it changes:
revoking (or deleting) a key sends NOTIFY `turnout_api_keys` "<key id>" on commit (migration
0004), delivered over the process's listening connection (infra/db/job_listener.py). So a
revocation still applies to the next request, as without the cache. Without that connection
(lost, being re-opened, closed) the cache is not used and everything it held is dropped, since a
notification may have been missed. Unknown and revoked keys are never cached: a flood of bad
tokens cannot fill it, and they cost the round trip they cost before.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import asyncpg

from infra.db.api_keys import ApiKey, verify_token

CHANNEL = "turnout_api_keys"
TTL_S = 300.0  # a safety net only: a change is announced as it commits
MAX_KEYS = 10_000


class Notifications(Protocol):
    """The listening connection (infra.db.job_listener.JobEventListener)."""

    @property
    def connected(self) -> bool: ...

    def subscribe(self, channel: str, on_payload: Callable[[str], None], *, on_gap: Callable[[], None]) -> None: ...


class ApiKeyCache:
    """`verify(pool, token)`: `verify_token`, answered from memory when the token checked out
    before and its key has not changed since. Use from one event loop."""

    def __init__(self, notifications: Notifications, *, ttl_s: float = TTL_S, max_keys: int = MAX_KEYS) -> None:
        self._notifications = notifications
        self._ttl_s = ttl_s
        self._max_keys = max_keys
        self._keys: OrderedDict[str, tuple[ApiKey, float]] = OrderedDict()  # token digest -> (key, expiry)
        # Bumped by every change and gap: a check that overlapped one must not store its answer,
        # which may predate the change.
        self._version = 0
        notifications.subscribe(CHANNEL, self._on_key_changed, on_gap=self._forget_all)

    def __len__(self) -> int:
        return len(self._keys)

    async def verify(self, pool: asyncpg.Pool, token: str) -> ApiKey | None:
        if not self._notifications.connected:
            return await self._check(pool, token)
        digest = hashlib.sha256(token.encode()).hexdigest()
        cached = self._keys.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            return cached[0]
        version = self._version
        key = await self._check(pool, token)
        if key is not None and version == self._version and self._notifications.connected:
            self._keys[digest] = (key, now + self._ttl_s)
            self._keys.move_to_end(digest)
            while len(self._keys) > self._max_keys:
                self._keys.popitem(last=False)
        return key

    @staticmethod
    async def _check(pool: asyncpg.Pool, token: str) -> ApiKey | None:
        async with pool.acquire() as conn:
            return await verify_token(conn, token)

    def _on_key_changed(self, key_id: str) -> None:
        self._version += 1
        for digest in [d for d, (key, _) in self._keys.items() if key.id == key_id]:
            del self._keys[digest]

    def _forget_all(self) -> None:
        self._version += 1
        self._keys.clear()
